"""The stored results of benchmarks/bench_modern.py (al.stored_benchmark("modern")): the packaged
file, the machine it names, and records that say what the chapters read from them.

A quick run of the whole script (half a minute) is for ``make bench-store``, which runs this
file with ``--retrain`` after it stores the results; here the script's measuring functions
run once on tiny sizes and must give records of the stored shape."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

import attention_lib as al

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    return al.stored_benchmark("modern")


def test_it_is_the_packaged_file(bench):
    data_file = ROOT / "attention_lib" / "data" / "modern_benchmark.json"
    assert bench == json.loads(data_file.read_text(encoding="utf-8"))


def test_it_names_the_machine(bench):
    machine = bench["machine"]
    for key in ("cpu_model", "simd", "cpus", "numpy", "date", "blas", "load_average_start",
                "load_average_end"):
        assert key in machine, key
    line = al.benchmark_machine(bench)
    assert line.startswith(f"{machine['cpu_model']} ({machine['simd']}, {machine['cpus']} CPUs")
    assert line.endswith(f"on {machine['date'][:10]}")


def test_it_is_a_full_run_with_every_record(bench):
    assert bench["quick"] is False
    assert bench["dtype"] == "float32" and bench["heads"] >= 1 and bench["d"] >= 1
    sizes = [r["n"] for r in bench["window"]]
    assert sizes == sorted(sizes) and len(sizes) >= 3
    for r in bench["window"]:
        assert r["window"] < r["n"]
        assert len(r["times"]["causal"]) == len(r["times"]["window"]) == bench["rounds"]
        assert r["max_error"] is None or r["max_error"] < 1e-4  # float32 against float64
    for r in bench["backward"]:
        assert len(r["times"]["tiled"]) == len(r["times"]["plain"]) == bench["rounds"]
        assert r["max_difference"] < 1e-4
    for m in bench["backward_memory"]:
        assert m["score_matrix"] == m["n"] ** 2 * 4
        assert m["returned"] == 3 * m["n"] * bench["d"] * 4  # dq, dk, dv of one head
        assert 0 < m["tiled_peak"] and 0 < m["plain_peak"]


def _script(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("bench_modern",
                                                  ROOT / "benchmarks" / "bench_modern.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_modern", module)
    spec.loader.exec_module(module)
    return module


def test_the_scripts_measurements_give_records_of_the_stored_shape(monkeypatch, bench):
    module = _script(monkeypatch)
    window = module.bench_window((64, 128), 32, 2, 16, 1)
    backward, memory = module.bench_backward((64,), 2, 16, 1, (64,))
    assert set(window[0]) == set(bench["window"][0])
    assert set(window[0]["times"]) == set(bench["window"][0]["times"])
    assert set(backward[0]) == set(bench["backward"][0])
    assert set(memory[0]) == set(bench["backward_memory"][0])
    assert memory[0]["score_matrix"] == 64 ** 2 * 4
    assert set(module.machine_record(os.getloadavg())) == set(bench["machine"])


@pytest.mark.retrains
def test_the_script_writes_what_stored_benchmark_reads(tmp_path, monkeypatch):
    """A quick run of the script gives a file with the same structure as the stored one."""
    module = _script(monkeypatch)
    out = tmp_path / "modern.json"
    module.main(["--quick", "--output", str(out)])
    quick = json.loads(out.read_text(encoding="utf-8"))
    stored = al.stored_benchmark("modern")
    assert set(quick) == set(stored)
    assert quick["quick"] is True
    assert set(quick["machine"]) == set(stored["machine"])
    for key in ("window", "backward", "backward_memory"):
        assert set(quick[key][0]) == set(stored[key][0])
    with pytest.raises(SystemExit):
        module.main(["--quick", "--store", "--output", str(out)])
