"""Tests of the measuring helpers and the stored benchmark results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import attention_lib as al
from attention_lib import measure

ROOT = Path(__file__).resolve().parents[1]


def test_stored_benchmark_is_the_packaged_file():
    data_file = ROOT / "attention_lib" / "data" / "attention_benchmark.json"
    assert al.stored_benchmark() == json.loads(data_file.read_text(encoding="utf-8"))


def test_stored_benchmark_names_the_machine():
    machine = al.stored_benchmark()["machine"]
    for key in ("cpu_model", "simd", "numpy", "torch", "date", "cpus"):
        assert key in machine, key
    assert machine["simd"] in ("AVX-512", "AVX2", "AVX", "SSE4.2", "NEON (ASIMD)", "unknown")


def test_stored_benchmark_reads_through_importlib_resources(monkeypatch):
    opened = []
    real_files = measure.resources.files

    def recording_files(package):
        opened.append(package)
        return real_files(package)

    monkeypatch.setattr(measure.resources, "files", recording_files)
    assert "timings" in al.stored_benchmark()
    assert opened == ["attention_lib"]


def test_stored_benchmark_works_from_an_installed_wheel(tmp_path):
    pip = [sys.executable, "-m", "pip"]
    try:
        import setuptools  # noqa: F401
    except ImportError:
        pytest.skip("setuptools is needed to build the wheel offline")
    src = tmp_path / "src"
    shutil.copytree(ROOT / "attention_lib", src / "attention_lib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(src)], check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("attention_lib-*.whl"))
    site = tmp_path / "site"
    subprocess.run([*pip, "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    shutil.rmtree(src)  # nothing but the installed wheel can be read now
    code = ("import attention_lib, json; print(attention_lib.__file__); "
            "print(json.dumps(attention_lib.stored_benchmark()['machine'])); "
            "from attention_lib import controls; "
            "print('Math.exp' in controls.saturation_explorer()._repr_html_()); "
            "from importlib import resources; "
            "print(json.dumps(sorted(p.name for p in "
            "resources.files('attention_lib.controls').joinpath('assets').iterdir())))")
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                            text=True, env=env, cwd=tmp_path)
    location, machine, slider_has_script, assets = result.stdout.splitlines()
    assert slider_has_script == "True"  # the controls' JavaScript ships in the wheel too
    assert location.startswith(str(site))  # the wheel's copy, not the working tree
    assert json.loads(machine) == al.stored_benchmark()["machine"]
    # every script and style of the browser-side controls ships in the wheel
    shipped = sorted(p.name for p in (Path(al.__file__).parent / "controls" / "assets").iterdir())
    assert json.loads(assets) == shipped


@pytest.mark.parametrize(
    ("flags", "level"),
    [("fpu sse4_2 avx avx2 avx512f", "AVX-512"), ("fpu sse4_2 avx avx2 fma", "AVX2"),
     ("fpu sse4_2", "SSE4.2"), ("fp asimd", "NEON (ASIMD)"), ("fpu", "unknown")],
)
def test_cpu_description_reads_model_and_widest_simd(flags, level):
    text = f"processor\t: 0\nmodel name\t: Test CPU 9000\nflags\t\t: {flags}\n\nprocessor\t: 1\n"
    assert al.cpu_description(text) == {"cpu_model": "Test CPU 9000", "simd": level}


def test_cpu_description_of_this_machine_is_not_empty():
    info = al.cpu_description()
    assert info["cpu_model"] and info["simd"]


def test_best_time_takes_the_minimum_of_the_calls():
    clock = iter([0.0, 5.0, 10.0, 12.0, 20.0, 24.0])  # durations 5, 2, 4
    calls = []
    best = al.best_time(lambda: calls.append(1), repeat=3, timer=lambda: next(clock))
    assert best == 2.0
    assert len(calls) == 3


def test_best_time_measures_real_time():
    assert al.best_time(lambda: sum(range(1000)), repeat=2) > 0


@pytest.mark.parametrize("p, c", [(2.0, 3.0), (1.0, 0.5), (0.5, 10.0)])
def test_power_law_fit_recovers_exact_laws(p, c):
    x = np.array([2.0, 8.0, 32.0, 128.0])
    exponent, prefactor = al.power_law_fit(x, c * x**p)
    assert exponent == pytest.approx(p, rel=1e-12)
    assert prefactor == pytest.approx(c, rel=1e-10)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="repeat"):
        al.best_time(lambda: None, repeat=0)
    with pytest.raises(TypeError, match="fn"):
        al.best_time(3)
    with pytest.raises(ValueError, match="y has non-positive"):
        al.power_law_fit([1, 2], [1, 0])
    with pytest.raises(ValueError, match="two distinct"):
        al.power_law_fit([2, 2], [1, 3])
    with pytest.raises(ValueError, match="equal 1-D"):
        al.power_law_fit([1, 2, 3], [1, 2])


def test_benchmark_machine_names_the_cpu_and_the_blas_kernel():
    bench = al.stored_benchmark()
    line = al.benchmark_machine()
    machine = bench["machine"]
    assert line.startswith(f"{machine['cpu_model']} ({machine['simd']}, {machine['cpus']} CPUs")
    assert line.endswith(f"on {machine['date'][:10]}")
    kernels = {b["architecture"] for b in machine["blas"] if b.get("internal_api") == "openblas"}
    assert any(f"ran its {k} kernels" in line for k in kernels)
    bare = {"machine": {k: v for k, v in machine.items() if k != "blas"}}
    assert "kernels" not in al.benchmark_machine(bare)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.float16, np.float32])
def test_power_law_fit_of_small_dtypes(dtype):
    # y = 3 x^2 exactly: the fit recovers (2, 3) whatever the dtype holds the numbers
    x = np.array([1, 2, 4, 8], dtype=dtype)
    y = np.array([3, 12, 48, 192], dtype=np.int16 if dtype == np.int8 else dtype)
    p, c = al.power_law_fit(x, y)
    assert abs(p - 2) < 1e-9 and abs(c - 3) < 1e-9
    assert type(p) is float and type(c) is float


def test_power_law_fit_names_the_original_dtype():
    with pytest.raises(ValueError, match=r"^x has shape \(2,\), dtype int8 and y shape \(3,\)"):
        al.power_law_fit(np.array([1, 2], dtype=np.int8), [1.0, 2.0, 3.0])


def test_best_time_needs_callables():
    with pytest.raises(TypeError, match="^fn is int"):
        al.best_time(3)
    with pytest.raises(TypeError, match="^timer is float"):
        al.best_time(lambda: None, timer=1.0)


def test_cpu_description_needs_text():
    with pytest.raises(TypeError, match="^cpuinfo is bytes"):
        al.cpu_description(b"model name\t: Some CPU\n")
