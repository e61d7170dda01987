"""Attention in today's models: sliding windows and the tiled backward pass, as n grows.

Run with ``make bench`` (or ``.venv/bin/python benchmarks/bench_modern.py [--quick]``).
Prints the CPU with three tables and writes every run to ``_build/bench/modern.json``
(untracked); ``--store`` (``make bench-store``) writes the packaged results chapter 19
quotes, ``attention_lib/data/modern_benchmark.json`` (``al.stored_benchmark("modern")``).
See ``benchmarks/README.md``.

- Window: ``tiled_attention(causal=True, window=w)`` against ``tiled_attention(causal=True)``
  on the same inputs (h heads of n positions, d = 64, float32) as n grows for a fixed
  window: the causal pass does ~n^2 / 2 scores, the windowed one ~n w, so their ratio
  grows linearly with n and the windowed time per token stays flat.
- Backward: ``tiled_attention_backward`` (from the saved log-sum-exp) against
  ``attention_backward`` (the whole weight matrix), causal, float32: time on h heads, and
  the peak memory tracemalloc sees during one call on one head.

Times are the best of interleaved rounds (each round runs every implementation once, in
turn, with a pause before each call), as in ``bench_attention.py``, whose helpers this
script uses.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from bench_attention import (
    blas_libraries,
    blas_threads,
    fmt_ms,
    fmt_table,
    peak_memory,
    round_robin,
)

import attention_lib as al
from attention_lib._threads import available_cpus

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "_build" / "bench" / "modern.json"  # untracked
STORED = ROOT / "attention_lib" / "data" / "modern_benchmark.json"  # packaged
MIB = 2**20


def machine_record(load_start: tuple[float, ...]) -> dict:
    """Where the benchmark ran, with the keys ``al.benchmark_machine`` reads."""
    return {
        **al.cpu_description(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(), "numpy": np.__version__,
        "cpus": available_cpus(), "blas_threads": blas_threads(),
        "tiled_workers": available_cpus(),
        "load_average_start": list(load_start), "load_average_end": list(os.getloadavg()),
        "blas": blas_libraries(),
        "environment": {key: value for key, value in sorted(os.environ.items())
                        if key.startswith(("OPENBLAS_", "OMP_", "MKL_", "GOTO"))},
    }


def inputs(n: int, heads: int, d: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """q, k, v and a gradient of the output, (h, n, d) float32 each."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((heads, n, d)).astype(np.float32) for _ in range(4))


def bench_window(sizes, window, heads, d, rounds):
    """Windowed against full causal tiled attention, and the windowed output's error."""
    records = []
    for n in sizes:
        q, k, v, _ = inputs(n, heads, d)
        outputs = {}

        def full(q=q, k=k, v=v, out=outputs):
            out["causal"] = al.tiled_attention(q, k, v, causal=True)

        def windowed(q=q, k=k, v=v, out=outputs):
            out["window"] = al.tiled_attention(q, k, v, causal=True, window=window)

        full()  # warm-up
        windowed()
        times = round_robin({"causal": full, "window": windowed}, rounds)
        error = None
        if n <= 2048:  # masked plain attention (the n x n matrix) as the reference
            mask = al.sliding_window_mask(n, n, window)
            reference, _ = al.scaled_dot_product_attention(
                q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), mask)
            error = float(np.abs(outputs["window"] - reference).max())
        records.append({"n": n, "window": window, "times": times, "max_error": error})
    return records


def bench_backward(sizes, heads, d, rounds, memory_sizes):
    """The tiled backward against attention_backward: time on h heads, memory on one."""
    records = []
    for n in sizes:
        q, k, v, g = inputs(n, heads, d, seed=1)
        out, lse = al.tiled_attention(q, k, v, causal=True, return_lse=True)
        grads = {}

        def tiled(q=q, k=k, v=v, out=out, lse=lse, g=g, store=grads):
            store["tiled"] = al.tiled_attention_backward(q, k, v, out, lse, g, causal=True)

        def plain(q=q, k=k, v=v, g=g, store=grads):
            store["plain"] = al.attention_backward(q, k, v, g, causal=True)

        tiled()  # warm-up
        plain()
        times = round_robin({"tiled": tiled, "plain": plain}, rounds)
        error = max(float(np.abs(a - b).max()) for a, b in zip(grads["tiled"], grads["plain"],
                                                               strict=True))
        records.append({"n": n, "times": times, "max_difference": error})
    memory = []
    for n in memory_sizes:
        q, k, v, g = (a[:1] for a in inputs(n, 1, d, seed=2))  # one head
        out, lse = al.tiled_attention(q, k, v, causal=True, return_lse=True)
        tiled_peak, returned = peak_memory(
            lambda q=q, k=k, v=v, out=out, lse=lse, g=g: al.tiled_attention_backward(
                q, k, v, out, lse, g, causal=True, workers=1))
        plain_peak, _ = peak_memory(lambda q=q, k=k, v=v, g=g: al.attention_backward(
            q, k, v, g, causal=True))
        memory.append({"n": n, "tiled_peak": tiled_peak, "plain_peak": plain_peak,
                       "returned": returned, "score_matrix": n * n * 4})
    return records, memory


def window_table(records) -> str:
    rows = []
    for r in records:
        causal, window = min(r["times"]["causal"]), min(r["times"]["window"])
        rows.append([r["n"], fmt_ms(causal), fmt_ms(window), f"{causal / window:.1f}",
                     f"{window / r['n'] * 1e6:.1f}",
                     "-" if r["max_error"] is None else f"{r['max_error']:.1e}"])
    return fmt_table(["n", "causal ms", "window ms", "causal / window",
                      "window us per token", "max |err|"], rows)


def backward_tables(records, memory) -> tuple[str, str]:
    rows = []
    for r in records:
        tiled, plain = min(r["times"]["tiled"]), min(r["times"]["plain"])
        rows.append([r["n"], fmt_ms(tiled), fmt_ms(plain), f"{plain / tiled:.2f}",
                     f"{r['max_difference']:.1e}"])
    times = fmt_table(["n", "tiled ms", "attention_backward ms", "plain / tiled",
                       "max |diff|"], rows)
    rows = [[m["n"], f"{m['tiled_peak'] / MIB:.1f}", f"{m['plain_peak'] / MIB:.1f}",
             f"{m['returned'] / MIB:.1f}", f"{m['score_matrix'] / MIB:.1f}"] for m in memory]
    peaks = fmt_table(["n", "tiled peak MiB", "attention_backward peak MiB",
                       "gradients MiB", "one n x n float32 MiB"], rows)
    return times, peaks


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few rounds (a smoke test, not a measurement)")
    parser.add_argument("--output", type=Path, default=None,
                        help=f"where to write the JSON (default {RESULTS.relative_to(ROOT)})")
    parser.add_argument("--store", action="store_true",
                        help=f"write the packaged results, {STORED.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    heads, d = 8, 64
    if args.quick:
        window, window_sizes, backward_sizes, memory_sizes, rounds = (
            128, (512, 1024, 2048), (256, 512), (1024,), 2)
    else:
        window, window_sizes, backward_sizes, memory_sizes, rounds = (
            512, (1024, 2048, 4096, 8192), (512, 1024, 2048), (2048, 4096), 3)

    if args.store and args.output is not None:
        parser.error("--store writes the packaged file; give --output or --store, not both")
    output = STORED if args.store else args.output or RESULTS
    load_start = os.getloadavg()
    started = time.perf_counter()
    window_records = bench_window(window_sizes, window, heads, d, rounds)
    backward_records, memory = bench_backward(backward_sizes, heads, d, rounds, memory_sizes)
    elapsed = time.perf_counter() - started
    machine = machine_record(load_start)

    print(f"\nCPU: {machine['cpu_model']}, {machine['simd']}, {machine['cpus']} CPUs; numpy "
          f"{machine['numpy']}; load average at start {load_start[0]:.1f}, at end "
          f"{machine['load_average_end'][0]:.1f}")
    print(f"\nSliding window of {window} keys against full causal attention, tiled, h={heads} "
          f"heads, d={d}, float32, best of {rounds} interleaved rounds:\n")
    print(window_table(window_records))
    times, peaks = backward_tables(backward_records, memory)
    print(f"\nBackward pass, causal, h={heads} heads, d={d}, float32, best of {rounds} "
          "interleaved rounds (max |diff| between the two):\n")
    print(times)
    print(f"\nPeak memory of one backward call (tracemalloc), one head, d={d}, float32:\n")
    print(peaks)
    print(f"\n{elapsed:.0f} s")

    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps({
        "machine": machine, "heads": heads, "d": d, "dtype": "float32", "rounds": rounds,
        "window": window_records, "backward": backward_records, "backward_memory": memory,
        "elapsed_s": elapsed, "quick": args.quick}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
