r"""Measuring: timers, power-law fits, the CPU, and the stored benchmark results.

Counting in closed form lives in :mod:`attention_lib.costs`; this module holds
what depends on a machine. Times vary between machines and runs: the chapters
quote the stored results of ``make bench-store``, which name the CPU they
were measured on, rather than timings taken while the book builds.
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable
from importlib import resources
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_real_array, describe, positive_int

__all__ = ["benchmark_machine", "best_time", "cpu_description", "power_law_fit", "stored_benchmark"]

BENCHMARK_RESOURCE = "attention_benchmark.json"
#: The stored benchmarks by name: the file each was written to by ``make bench-store``.
BENCHMARKS = {"attention": BENCHMARK_RESOURCE, "gpt": "gpt_benchmark.json",
              "modern": "modern_benchmark.json"}


def best_time(
    fn: Callable[[], Any], *, repeat: int = 5, timer: Callable[[], float] = time.perf_counter
) -> float:
    """Shortest wall-clock time of ``repeat`` calls of ``fn``, in seconds.

    Parameters
    ----------
    fn : callable taking no arguments
    repeat : int, default 5
    timer : callable returning seconds, default ``time.perf_counter``

    Returns
    -------
    float
        Seconds, the least of the ``repeat`` measurements.

    Notes
    -----
    The minimum is the least disturbed measurement: other processes and
    caches can only make a call slower. Times vary between machines and runs;
    never treat them as exact.

    Examples
    --------
    >>> ticks = iter([0.0, 3.0, 10.0, 11.0])          # a fake clock
    >>> best_time(lambda: None, repeat=2, timer=lambda: next(ticks))
    1.0
    """
    if not callable(fn):
        raise TypeError(f"fn is {type(fn).__name__}; expected a callable with no arguments")
    if not callable(timer):
        raise TypeError(f"timer is {type(timer).__name__}; expected a callable returning seconds")
    repeat = positive_int(repeat, "repeat")
    best = float("inf")
    for _ in range(repeat):
        start = timer()
        fn()
        best = min(best, timer() - start)
    return best


def power_law_fit(x: ArrayLike, y: ArrayLike) -> tuple[float, float]:
    r"""Fit :math:`y = c\, x^p` by least squares on a log-log scale.

    Parameters
    ----------
    x, y : array_like, shape (m,)
        Positive values, at least two distinct ``x``; computed in float64
        whatever their dtype.

    Returns
    -------
    exponent : float
        :math:`p`, the slope of :math:`\log y` against :math:`\log x`.
    prefactor : float
        :math:`c`.

    Notes
    -----
    .. math:: \log y = p \log x + \log c,

    fitted with ``np.polyfit(log x, log y, 1)``. Doubling :math:`x`
    multiplies :math:`y` by :math:`2^p`.

    Examples
    --------
    >>> p, c = power_law_fit([1, 2, 4], [3, 12, 48])
    >>> round(p, 6), round(c, 6)
    (2.0, 3.0)
    """
    x = as_real_array(x, "x")
    y = as_real_array(y, "y")
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x has {describe(x)} and y {describe(y)}; expected two equal 1-D arrays")
    # float64 whatever the input: np.log of int8 is float16, and polyfit refuses float16
    x, y = x.astype(np.float64), y.astype(np.float64)
    for name, a in (("x", x), ("y", y)):
        if (a <= 0).any():
            raise ValueError(f"{name} has non-positive values; a power law needs positive data")
    if np.unique(x).size < 2:
        raise ValueError("x has fewer than two distinct values; cannot fit a slope")
    slope, intercept = np.polyfit(np.log(x), np.log(y), 1)
    return float(slope), float(np.exp(intercept))


def _simd_level(flags: set[str]) -> str:
    """The widest x86 vector extension among the CPU ``flags`` (as in /proc/cpuinfo)."""
    for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"),
                       ("sse4_2", "SSE4.2"), ("asimd", "NEON (ASIMD)")):
        if flag in flags:
            return name
    return "unknown"


def cpu_description(cpuinfo: str | None = None) -> dict[str, str]:
    r"""The CPU model and its widest SIMD level, read from ``/proc/cpuinfo``.

    Parameters
    ----------
    cpuinfo : str, optional
        The text of ``/proc/cpuinfo``; read from the file by default. Where the
        file does not exist (not Linux), the model is ``platform.processor()``
        and the SIMD level ``"unknown"``.

    Returns
    -------
    dict
        ``{"cpu_model": ..., "simd": ...}``, the SIMD level being one of
        ``"AVX-512"`` (flag ``avx512f``), ``"AVX2"``, ``"AVX"``, ``"SSE4.2"``,
        ``"NEON (ASIMD)"`` or ``"unknown"``.

    Examples
    --------
    >>> cpu_description("model name\t: Some CPU\nflags\t\t: fpu sse4_2 avx avx2 fma\n")
    {'cpu_model': 'Some CPU', 'simd': 'AVX2'}
    """
    if cpuinfo is not None and not isinstance(cpuinfo, str):
        raise TypeError(f"cpuinfo is {type(cpuinfo).__name__}; expected the text of "
                        "/proc/cpuinfo as a str, or None to read it")
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as f:
                cpuinfo = f.read()
        except OSError:
            return {"cpu_model": platform.processor() or platform.machine(), "simd": "unknown"}
    model, flags = "", set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "Model", "cpu model") and not model:
            model = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
    return {"cpu_model": model or platform.processor() or platform.machine(),
            "simd": _simd_level(flags)}


def stored_benchmark(name: str = "attention") -> dict[str, Any]:
    """Benchmark results stored with the library (``make bench-store``).

    Read from the package's data (``attention_lib/data/attention_benchmark.json``,
    ``gpt_benchmark.json`` or ``modern_benchmark.json``) through ``importlib.resources``,
    so it works from an installed wheel too.

    Parameters
    ----------
    name : {"attention", "gpt", "modern"}, default "attention"
        ``"attention"``: attention kernels against numpy's matrix product and PyTorch
        (``benchmarks/bench_attention.py``). ``"gpt"``: the book's GPT, a training step
        and generation with and without the KV cache (``benchmarks/bench_gpt.py``); its
        keys are ``machine`` (as below), ``training_step`` (``batch_size``, ``context``,
        and ``by_threads``: per thread count, per implementation ``best_s``, ``median_s``,
        ``times_s``), ``generation``
        (``n_new``, ``context``, and for ``cached`` and ``uncached`` ``best_s``,
        ``times_s``, ``n_new_per_s``) and ``quick``. ``"modern"``: attention as today's
        models run it (``benchmarks/bench_modern.py``), ``heads`` heads of size ``d`` in
        ``dtype`` (float32); its keys are ``machine`` (as below), ``window`` (per ``n``:
        the ``window``, ``times`` with every round's seconds for ``"causal"``, tiled causal
        attention, and ``"window"``, the same with the sliding window, and ``max_error``
        of the windowed output against the masked plain one, or None where that was not
        computed), ``backward`` (per ``n``: ``times`` for ``"tiled"``,
        :func:`~attention_lib.tiled_attention_backward`, and ``"plain"``,
        :func:`~attention_lib.attention_backward`, causal, and their ``max_difference``),
        ``backward_memory`` (per ``n``, one head: ``tiled_peak`` and ``plain_peak``, the
        bytes tracemalloc saw at the peak of one call, ``returned``, the gradients' bytes,
        and ``score_matrix``, one ``n x n`` float32 matrix), ``rounds``, ``elapsed_s`` and
        ``quick``.

    Returns
    -------
    dict
        The parsed JSON. For ``"attention"``, the keys

        ``machine``
            Where it ran: ``cpu_model``, ``simd`` (``"AVX-512"``, ``"AVX2"``,
            ...), ``cpus``, ``python``, ``numpy``, ``torch`` (None when torch
            was not installed), ``date`` (ISO 8601), ``processor``, the thread
            counts (``blas_threads``, ``torch_threads``, ``tiled_workers``),
            the load average at start and end, ``blas`` (numpy's BLAS as
            threadpoolctl reports it, with the kernel ``architecture`` it ran),
            ``environment`` (the ``OPENBLAS_*``, ``OMP_*`` and ``MKL_*``
            variables) and ``torch_cpu_capability``.
        ``heads``, ``d``, ``sizes``, ``repeats``
            The shapes timed: ``heads`` heads of ``n`` positions for ``n`` in
            ``sizes``, vectors of size ``d``; ``repeats[str(n)]`` rounds.
        ``timings``
            One record per (dtype, causal, n, implementation): ``impl`` (one of
            ``"naive"``, ``"attention_lib"``, ``"tiled"``, ``"torch"``),
            ``dtype``, ``causal``, ``n``, ``best_s``, ``median_s``,
            ``times_s`` (every run), ``flops``, ``gflops``,
            ``fraction_of_matmul``, ``output_dtype``, ``max_abs_error``.
        ``matmul``
            The plain numpy product of the same size per (dtype, causal, n):
            ``best_s``, ``gflops``, ``times_s``.
        ``memory``
            Peak memory per (n, implementation): ``peak_bytes``,
            ``returned_bytes``, ``extra_bytes`` (float32, one head, d = 64).
        ``target_timings``
            The rounds that time ``tiled`` against ``torch`` alone, interleaved.
        ``targets``
            Each goal with its ``value``, ``limit`` and whether it was ``met``.
        ``elapsed_s``, ``quick``
            Duration of the run, and whether it was the quick smoke test.

    Examples
    --------
    >>> bench = stored_benchmark()
    >>> sorted(bench)[:4]
    ['d', 'elapsed_s', 'heads', 'machine']
    >>> {r["impl"] for r in bench["timings"]} >= {"attention_lib", "tiled"}
    True
    >>> sorted(stored_benchmark("gpt")["generation"]["cached"])[:2]
    ['best_s', 'n_new_per_s']
    >>> sorted(stored_benchmark("modern")["window"][0]["times"])
    ['causal', 'window']
    """
    if name not in BENCHMARKS:
        raise ValueError(f"name={name!r}; expected one of {sorted(BENCHMARKS)}")
    text = resources.files("attention_lib").joinpath("data", BENCHMARKS[name]).read_text(
        encoding="utf-8")
    return json.loads(text)


def benchmark_machine(bench: dict[str, Any] | None = None) -> str:
    """One line naming where a benchmark ran: CPU, SIMD level, BLAS kernel, numpy, date.

    Parameters
    ----------
    bench : dict, optional
        Results as :func:`stored_benchmark` returns them (the default).

    Returns
    -------
    str
        For example ``"AMD EPYC (AVX-512, 2 CPUs; numpy's OpenBLAS ran its Haswell
        kernels), numpy 2.4.6, on 2026-12-01"``. The BLAS kernel is named because
        it, not the CPU's widest SIMD level, sets numpy's speed: an environment
        variable such as ``OPENBLAS_CORETYPE`` can hold it below what the CPU has.

    Examples
    --------
    >>> machine = {"cpu_model": "Some CPU", "simd": "AVX2", "cpus": 4, "numpy": "2.4.6",
    ...            "date": "2026-01-02T03:04:05+00:00",
    ...            "blas": [{"internal_api": "openblas", "architecture": "Zen"}]}
    >>> benchmark_machine({"machine": machine})
    "Some CPU (AVX2, 4 CPUs; numpy's OpenBLAS ran its Zen kernels), numpy 2.4.6, on 2026-01-02"
    """
    machine = (stored_benchmark() if bench is None else bench)["machine"]
    kernels = [b.get("architecture") for b in machine.get("blas", [])
               if b.get("internal_api") == "openblas" and b.get("architecture")]
    blas = f"; numpy's OpenBLAS ran its {kernels[0]} kernels" if kernels else ""
    return (f"{machine['cpu_model']} ({machine['simd']}, {machine['cpus']} CPUs{blas}), "
            f"numpy {machine['numpy']}, on {machine['date'][:10]}")
