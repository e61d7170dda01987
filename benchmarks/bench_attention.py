"""Speed and memory of four implementations of scaled dot-product attention.

Run with ``make bench`` (or ``.venv/bin/python benchmarks/bench_attention.py``).
Prints the CPU model and SIMD level with four tables and writes the results to
``_build/bench/attention.json`` (untracked). ``make bench-store`` (``--store``)
writes them instead into the package, ``attention_lib/data/attention_benchmark.json``,
which the chapters read through ``attention_lib.stored_benchmark()``. See
``benchmarks/README.md`` for how to read the tables.

Implementations, all on the same inputs (h heads of n positions, d = 64):

- ``naive``: the seed texts' style, a Python loop over heads calling a 2-D
  ``softmax(Q @ K.T / np.sqrt(d_k)) @ V`` with an additive causal mask. Kept
  exactly as written, including ``np.sqrt(d_k)``, a numpy float64 scalar that
  silently promotes float32 input to float64 (its float32 rows therefore
  compute in float64).
- ``attention_lib``: ``attention_lib.scaled_dot_product_attention`` (returns
  the weights too, so it materialises the n x n matrix by contract).
- ``tiled``: ``attention_lib.tiled_attention`` (online softmax over key
  blocks, query blocks on a thread pool; never builds the n x n matrix).
- ``torch``: ``torch.nn.functional.scaled_dot_product_attention`` on CPU, when
  torch is installed (it is optional and not in requirements.txt).

Timing: the implementations run round-robin (one call each, in turn, repeated),
so a slow spell of a shared machine hits all of them alike; the table reports
the best (minimum) time and the JSON keeps every run. ``matmul`` is one plain
numpy product ``(h, n, d) @ (h, d, n)`` into a preallocated output, timed in the
same rounds: its GFLOP/s is the machine's practical limit for this shape.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info

import attention_lib as al
from attention_lib._threads import available_cpus

try:  # optional comparison
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - depends on the environment
    torch = None

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "_build" / "bench" / "attention.json"  # untracked
STORED = ROOT / "attention_lib" / "data" / "attention_benchmark.json"  # packaged
IMPLEMENTATIONS = ("naive", "attention_lib", "tiled", "torch")


# --------------------------------------------------------------------------------------
# The seed-style naive implementation (as the second source text writes it)
# --------------------------------------------------------------------------------------


def softmax_2d(x: np.ndarray) -> np.ndarray:
    """Row-wise softmax of a 2-D array, as in the source text."""
    exp_x = np.exp(x - x.max(axis=1, keepdims=True))
    return exp_x / exp_x.sum(axis=1, keepdims=True)


def naive_single_head(q, k, v, mask=None):
    """One head: softmax(Q K^T / sqrt(d_k)) V with an optional additive mask."""
    d_k = k.shape[-1]
    scores = q @ k.T / np.sqrt(d_k)  # np.sqrt gives a float64 scalar: float32 -> float64
    if mask is not None:
        scores = scores + mask
    weights = softmax_2d(scores)
    return weights @ v, weights


def naive_attention(q, k, v, causal=False):
    """Loop over the heads of (h, n, d) arrays; the causal mask is -1e9 above the diagonal."""
    n = q.shape[-2]
    mask = np.triu(np.full((n, n), -1e9), k=1) if causal else None
    return np.stack([naive_single_head(q[h], k[h], v[h], mask)[0] for h in range(q.shape[0])])


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def attention_flops(n: int, d: int, h: int, causal: bool) -> float:
    """FLOPs of the two products over the allowed (query, key) pairs, for h heads.

    ``al.attention_flops`` counts 2 d per pair in each product; under the causal
    mask there are n (n + 1) / 2 pairs (``al.causal_pairs``), not n^2 / 2.
    """
    return float(h * al.attention_flops(n, n, d, causal=causal).total)


def blas_libraries() -> list[dict]:
    """threadpoolctl's view of every BLAS in the process: kernel (architecture) and threads."""
    return [{k: lib.get(k) for k in ("internal_api", "architecture", "num_threads", "version",
                                     "filepath")}
            for lib in threadpool_info() if lib["user_api"] == "blas"]


def blas_threads() -> int | None:
    numpy_blas = [lib for lib in blas_libraries() if "numpy" in lib["filepath"]]
    return numpy_blas[0]["num_threads"] if numpy_blas else None


# OpenBLAS's worker threads busy-wait for about 0.1 s after a multi-threaded
# product (and OpenMP's, in torch, for a few ms). Without a pause, the next
# implementation in a round would share its cores with those spinning threads.
PAUSE_S = 0.15


def round_robin(calls: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Run every call once per round, ``repeats`` rounds; return the wall times."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            time.sleep(PAUSE_S)
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return times


def peak_memory(call: Callable[[], object]) -> tuple[int, int]:
    """(peak bytes allocated during ``call`` as seen by tracemalloc, bytes it returned)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    result = call()
    peak = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    arrays = result if isinstance(result, tuple) else (result,)
    returned = sum(a.nbytes for a in arrays)
    del result, arrays
    gc.collect()
    return peak, returned


def fmt_ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    ms = seconds * 1e3
    return f"{ms:.2f}" if ms < 10 else f"{ms:.1f}" if ms < 1000 else f"{ms:.0f}"


def fmt_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(c).rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Speed
# --------------------------------------------------------------------------------------


def attention_calls(q, k, v, causal, outputs):
    """Zero-argument calls of each implementation; each stores its output in ``outputs``."""
    def naive():
        outputs["naive"] = naive_attention(q, k, v, causal)

    def library():
        outputs["attention_lib"] = al.scaled_dot_product_attention(q, k, v, causal=causal)[0]

    def tiled():
        outputs["tiled"] = al.tiled_attention(q, k, v, causal=causal)

    calls = {"naive": naive, "attention_lib": library, "tiled": tiled}
    if torch is not None:
        tq, tk, tv = (torch.from_numpy(a)[None] for a in (q, k, v))  # (1, h, n, d)

        def torch_sdpa():
            outputs["torch"] = F.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)[0]

        calls["torch"] = torch_sdpa
    return calls


def bench_speed(sizes, heads, d, repeats_for, seed=0):
    records, matmuls = [], []
    rng = np.random.default_rng(seed)
    for n in sizes:
        q64, k64, v64 = (rng.standard_normal((heads, n, d)) for _ in range(3))  # (h, n, d)
        for causal in (False, True):
            reference = None
            for dtype in (np.float64, np.float32):  # float64 first: it is the reference
                q, k, v = (a.astype(dtype) for a in (q64, k64, v64))
                outputs: dict[str, np.ndarray] = {}
                calls = attention_calls(q, k, v, causal, outputs)
                scores = np.ones((heads, n, n), dtype=dtype)  # preallocated, pages touched
                k_t = np.swapaxes(k, -1, -2)  # (h, d, n)
                calls["matmul"] = lambda q=q, k_t=k_t, s=scores: np.matmul(q, k_t, out=s)
                for call in calls.values():  # warm-up, not timed
                    call()
                times = round_robin(calls, repeats_for(n))
                del scores
                if dtype == np.float64:
                    reference = outputs["attention_lib"]
                flops = attention_flops(n, d, heads, causal)
                matmul_best = min(times["matmul"])
                matmul_gflops = 2.0 * n * n * d * heads / matmul_best / 1e9
                matmuls.append({"dtype": np.dtype(dtype).name, "causal": causal, "n": n,
                                "best_s": matmul_best, "gflops": matmul_gflops,
                                "times_s": times["matmul"]})
                for name in IMPLEMENTATIONS:
                    if name not in times:
                        continue
                    best = min(times[name])
                    out = np.asarray(outputs[name])  # (h, n, d); torch tensors -> numpy
                    records.append({
                        "dtype": np.dtype(dtype).name, "causal": causal, "n": n, "heads": heads,
                        "d": d, "impl": name, "best_s": best,
                        "median_s": statistics.median(times[name]), "times_s": times[name],
                        "flops": flops, "gflops": flops / best / 1e9,
                        "fraction_of_matmul": flops / best / 1e9 / matmul_gflops,
                        "output_dtype": out.dtype.name,
                        "max_abs_error": float(np.max(np.abs(out - reference))),
                    })
                print(f"  timed n={n} causal={causal} {np.dtype(dtype).name}", file=sys.stderr)
    return records, matmuls


def speed_tables(records, matmuls, sizes):
    def find(dtype, causal, n, impl):
        for r in records:
            if (r["dtype"], r["causal"], r["n"], r["impl"]) == (dtype, causal, n, impl):
                return r
        return None

    impls = [i for i in IMPLEMENTATIONS if any(r["impl"] == i for r in records)]
    header = ["dtype", "causal", "n"] + [f"{i} ms" for i in impls] + ["matmul GF/s"]
    header += [f"{i} GF/s" for i in impls]
    rows, ratio_rows = [], []
    for dtype in ("float32", "float64"):
        for causal in (False, True):
            for n in sizes:
                found = [find(dtype, causal, n, i) for i in impls]
                mm = next(m for m in matmuls if (m["dtype"], m["causal"], m["n"]) ==
                          (dtype, causal, n))
                rows.append([dtype, "yes" if causal else "no", n]
                            + [fmt_ms(r["best_s"]) for r in found]
                            + [f"{mm['gflops']:.0f}"] + [f"{r['gflops']:.1f}" for r in found])
                torch_r = find(dtype, causal, n, "torch")
                if torch_r is not None:
                    ratio_rows.append([dtype, "yes" if causal else "no", n] + [
                        f"{r['best_s'] / torch_r['best_s']:.2f}" for r in found
                        if r["impl"] != "torch"
                    ] + [f"{max(r['max_abs_error'] for r in found):.1e}"])
    ratio_header = ["dtype", "causal", "n"] + [f"{i} / torch" for i in impls if i != "torch"]
    ratio_header += ["max |err|"]
    return fmt_table(header, rows), (fmt_table(ratio_header, ratio_rows) if ratio_rows else "")


def bench_target_rounds(sizes, heads, d, rounds, seed=2):
    """The speed targets' own rounds: tiled and torch alone, float32, causal.

    The main rounds also run the naive versions, whose n x n temporaries flush
    the caches and take seconds at n = 4096 (so those sizes get few rounds).
    Here only the two compared calls alternate, ``rounds`` times per size: many
    more pairs of runs, each pair seconds or less apart.
    """
    records = []
    if torch is None:
        return records
    rng = np.random.default_rng(seed)
    for n in sizes:
        q, k, v = (rng.standard_normal((heads, n, d)).astype(np.float32) for _ in range(3))
        outputs: dict[str, np.ndarray] = {}
        calls = attention_calls(q, k, v, True, outputs)
        calls = {name: calls[name] for name in ("tiled", "torch")}
        for call in calls.values():  # warm-up, not timed
            call()
        times = round_robin(calls, rounds)
        error = float(np.max(np.abs(outputs["tiled"] - np.asarray(outputs["torch"]))))
        for name, runs in times.items():
            records.append({"dtype": "float32", "causal": True, "n": n, "heads": heads, "d": d,
                            "impl": name, "best_s": min(runs),
                            "median_s": statistics.median(runs), "times_s": runs,
                            "max_abs_difference_tiled_torch": error})
        print(f"  target rounds n={n}", file=sys.stderr)
    return records


def target_table(records):
    rows = []
    for n in sorted({r["n"] for r in records}):
        mine, ref = (next(r for r in records if r["n"] == n and r["impl"] == impl)
                     for impl in ("tiled", "torch"))
        per_round = statistics.median(
            a / b for a, b in zip(mine["times_s"], ref["times_s"], strict=True))
        rows.append([n, fmt_ms(mine["best_s"]), fmt_ms(ref["best_s"]),
                     f"{mine['best_s'] / ref['best_s']:.2f}", f"{per_round:.2f}",
                     len(mine["times_s"]), f"{mine['max_abs_difference_tiled_torch']:.1e}"])
    return fmt_table(["n", "tiled ms", "torch ms", "best / best", "median round ratio",
                      "rounds", "max |tiled - torch|"], rows)


# --------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------


def bench_memory(sizes, d, seed=1):
    records = []
    rng = np.random.default_rng(seed)
    for n in sizes:
        q, k, v = (rng.standard_normal((1, n, d)).astype(np.float32) for _ in range(3))
        calls = {
            "naive": lambda q=q, k=k, v=v: naive_attention(q, k, v),
            "attention_lib": lambda q=q, k=k, v=v: al.scaled_dot_product_attention(q, k, v),
            "tiled": lambda q=q, k=k, v=v: al.tiled_attention(q, k, v),
        }
        for name, call in calls.items():
            start = time.perf_counter()
            peak, returned = peak_memory(call)
            records.append({"n": n, "d": d, "heads": 1, "dtype": "float32", "impl": name,
                            "peak_bytes": peak, "returned_bytes": returned,
                            "extra_bytes": peak - returned,
                            "seconds_under_tracemalloc": time.perf_counter() - start})
            print(f"  memory n={n} {name}", file=sys.stderr)
    return records


def memory_table(records):
    mib = 2.0**20
    rows = [[r["n"], r["impl"], f"{r['peak_bytes'] / mib:.1f}", f"{r['returned_bytes'] / mib:.1f}",
             f"{r['extra_bytes'] / mib:.1f}"] for r in records]
    return fmt_table(["n", "implementation", "peak MiB", "returned MiB", "extra MiB"], rows)


# --------------------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------------------


def check_targets(records, memory, target_records=()):
    """Compare with the library's goals: best/best ratio, and the median of per-round ratios.

    The two implementations of a ratio ran next to each other in every round,
    so the ratio within one round is little affected by the machine's load
    drifting between rounds; their median is the steadier of the two figures.
    The tiled targets use the dedicated rounds (``target_records``) when there
    are any, else the main rounds.
    """
    lines, results = [], []

    def find(dtype, causal, n, impl):
        for r in records:
            if (r["dtype"], r["causal"], r["n"], r["impl"]) == (dtype, causal, n, impl):
                return r
        return None

    def find_target(dtype, causal, n, impl):
        for r in target_records:
            if (r["dtype"], r["causal"], r["n"], r["impl"]) == (dtype, causal, n, impl):
                return r
        return None

    def ratio_target(name, impl, dtype, causal, n, limit):
        mine, ref = find_target(dtype, causal, n, impl), find_target(dtype, causal, n, "torch")
        if mine is None or ref is None:
            mine, ref = find(dtype, causal, n, impl), find(dtype, causal, n, "torch")
        if mine is None or ref is None:
            return
        value = mine["best_s"] / ref["best_s"]
        per_round = statistics.median(
            a / b for a, b in zip(mine["times_s"], ref["times_s"], strict=True))
        results.append({"target": name, "value": value, "median_round_ratio": per_round,
                        "rounds": len(mine["times_s"]), "limit": limit, "met": value <= limit})

    for n in (1024, 2048, 4096):
        ratio_target(f"tiled float32 causal n={n} <= 1.5 x torch", "tiled", "float32", True,
                     n, 1.5)
    for dtype in ("float32", "float64"):
        for causal in (False, True):
            ratio_target(f"attention_lib {dtype} causal={causal} n=1024 <= 3 x torch",
                         "attention_lib", dtype, causal, 1024, 3.0)
    for r in memory:
        if r["impl"] == "tiled" and r["n"] == 16384:
            extra = r["extra_bytes"] / 2.0**20
            results.append({"target": "tiled n=16384 float32 extra memory <= 16 MiB",
                            "value": extra, "limit": 16.0, "met": extra <= 16.0})
    for r in results:
        line = f"  {'met ' if r['met'] else 'MISS'}  {r['target']}: {r['value']:.2f}"
        if "median_round_ratio" in r:
            line += (f" (best / best of {r['rounds']} rounds; median of per-round ratios "
                     f"{r['median_round_ratio']:.2f})")
        lines.append(line)
    return results, "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few repeats (a smoke test, not a measurement)")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory table")
    parser.add_argument("--target-rounds", type=int, default=None, metavar="N",
                        help="rounds of tiled against torch alone for the speed targets "
                        "(default 15, 2 with --quick; 0 to skip)")
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help=f"where to write the JSON (default {RESULTS.relative_to(ROOT)})")
    parser.add_argument("--store", action="store_true",
                        help=f"write the packaged results, {STORED.relative_to(ROOT)}, "
                        "that the chapters read")
    args = parser.parse_args(argv)
    if args.store:
        args.output = STORED

    heads, d = 8, 64
    if args.quick:
        sizes, memory_sizes = (64, 256), (1024,)

        def repeats_for(n):
            return 2

        target_sizes, target_rounds = (256,), 2
    else:
        sizes, memory_sizes = (256, 1024, 2048, 4096), (8192, 16384)

        def repeats_for(n):
            return {256: 15, 1024: 11, 2048: 5}.get(n, 3)

        target_sizes, target_rounds = (1024, 2048, 4096), 15
    if args.target_rounds is not None:
        target_rounds = max(0, args.target_rounds)

    load_start = os.getloadavg()
    started = time.perf_counter()
    records, matmuls = bench_speed(sizes, heads, d, repeats_for)
    target_records = (bench_target_rounds(target_sizes, heads, d, target_rounds)
                      if target_rounds else [])
    memory = [] if args.no_memory else bench_memory(memory_sizes, d)
    elapsed = time.perf_counter() - started
    load_end = os.getloadavg()
    targets, target_text = check_targets(records, memory, target_records)

    machine = {
        **al.cpu_description(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(), "numpy": np.__version__,
        "torch": None if torch is None else torch.__version__,
        "cpus": available_cpus(), "blas_threads": blas_threads(),
        "torch_threads": None if torch is None else torch.get_num_threads(),
        "tiled_workers": available_cpus(),
        "load_average_start": load_start, "load_average_end": load_end,
        "processor": platform.processor() or platform.machine(),
        "blas": blas_libraries(),
        # Variables that choose BLAS kernels or thread counts (OPENBLAS_CORETYPE can
        # force, say, AVX2 kernels on a CPU with AVX-512), and torch's own SIMD level.
        "environment": {key: value for key, value in sorted(os.environ.items())
                        if key.startswith(("OPENBLAS_", "OMP_", "MKL_", "GOTO"))},
        "torch_cpu_capability": None if torch is None else torch.backends.cpu.get_cpu_capability(),
    }
    times_table, ratio_table = speed_tables(records, matmuls, sizes)
    kernels = ", ".join(f"{b['internal_api']} {b['version']} ({b['architecture']} kernels)"
                        for b in machine["blas"])
    print(f"\nCPU: {machine['cpu_model']}, {machine['simd']}, {machine['cpus']} CPUs; "
          f"numpy {machine['numpy']}, torch {machine['torch']}; BLAS: {kernels}")
    if machine["torch_cpu_capability"] is not None:
        print(f"torch's CPU kernels: {machine['torch_cpu_capability']}")
    if machine["environment"]:
        print("environment: " + ", ".join(f"{k}={v}" for k, v in machine["environment"].items()))
    print(f"\nAttention, h={heads} heads, d={d}: best of "
          f"{', '.join(f'{repeats_for(n)} (n={n})' for n in sizes)} interleaved runs")
    print(f"threads: numpy BLAS {machine['blas_threads']}, torch {machine['torch_threads']}, "
          f"tiled workers {machine['tiled_workers']}; load average at start "
          f"{load_start[0]:.1f}, at end {load_end[0]:.1f} on {machine['cpus']} CPUs\n")
    print(times_table)
    if ratio_table:
        print("\nTime relative to torch (lower is faster), and the largest error against the "
              "float64 attention_lib output:\n")
        print(ratio_table)
    if target_records:
        print(f"\nThe speed targets' own rounds: tiled against torch alone, float32, causal, "
              f"{target_rounds} interleaved rounds:\n")
        print(target_table(target_records))
    if memory:
        print("\nPeak memory (tracemalloc), one head, d=64, float32, not causal:\n")
        print(memory_table(memory))
    if target_text:
        print("\nTargets:\n" + target_text)
    print(f"\n({elapsed:.0f} s)")

    args.output.parent.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine, "heads": heads, "d": d, "sizes": list(sizes),
               "repeats": {str(n): repeats_for(n) for n in sizes}, "timings": records,
               "matmul": matmuls, "target_timings": target_records, "memory": memory,
               "targets": targets,
               "elapsed_s": elapsed, "quick": args.quick}
    args.output.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    if args.store:
        print("These are the packaged results the chapters read: the next `make book` "
              "re-executes every notebook.")
    else:
        print("(untracked; `make bench-store` writes the packaged results the chapters read)")


if __name__ == "__main__":
    main()
