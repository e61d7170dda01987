"""Speed of the numpy GPT: a training step, and generation with and without the KV cache.

Run with ``make bench`` (or ``.venv/bin/python benchmarks/bench_gpt.py [--quick]``). Prints the
CPU with two tables and writes every run to ``_build/bench/gpt.json`` (untracked);
``--store`` (``make bench-store``) writes the packaged results chapter 16 quotes,
``attention_lib/data/gpt_benchmark.json`` (``al.stored_benchmark("gpt")``).

- Training step: ``gpt_loss_and_grads`` (forward, loss, every gradient) of the book model's
  shape (V = 62, context 128, d_model 128, 4 layers, 4 heads, batch 32) in float32; and, when
  torch is installed, the same model written with torch's functions, forward and backward,
  timed in the same rounds (round-robin, best of each), with the ratio numpy / torch; on one
  thread each, then on every CPU each.
- Generation: 256 new tokens from a one-token prompt, context 256, with the cache
  (one new position per step) and without (the whole sequence every step).
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
from bench_attention import blas_libraries, blas_threads
from threadpoolctl import threadpool_limits

import attention_lib as al
from attention_lib._threads import available_cpus

try:  # optional comparison
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - depends on the environment
    torch = None

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "_build" / "bench" / "gpt.json"  # untracked
STORED = ROOT / "attention_lib" / "data" / "gpt_benchmark.json"  # packaged


def machine_record(load_start: tuple[float, ...]) -> dict:
    """Where the benchmark ran, with the keys ``al.benchmark_machine`` reads."""
    return {
        **al.cpu_description(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(), "numpy": np.__version__,
        "torch": None if torch is None else torch.__version__,
        "cpus": available_cpus(), "blas_threads": blas_threads(),
        "torch_threads": None if torch is None else torch.get_num_threads(),
        "load_average_start": list(load_start), "load_average_end": list(os.getloadavg()),
        "blas": blas_libraries(),
        "environment": {key: value for key, value in sorted(os.environ.items())
                        if key.startswith(("OPENBLAS_", "OMP_", "MKL_", "GOTO"))},
    }


def torch_step(params: dict[str, np.ndarray], config: al.GPTConfig, x: np.ndarray,
               y: np.ndarray):
    """The same model in torch: returns a function that runs forward and backward once."""
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    tx, ty = torch.tensor(x), torch.tensor(y)
    B, T = x.shape
    h, d = config.n_heads, config.d_model

    def run() -> float:
        for t in tp.values():
            t.grad = None
        z = tp["wte"][tx] + tp["wpe"][:T]
        for layer in range(config.n_layers):
            p = f"blocks.{layer}."
            a = F.layer_norm(z, (d,), tp[p + "ln1.gamma"], tp[p + "ln1.beta"], eps=1e-5)
            q, k, v = ((a @ tp[p + f"attn.w_{m}"] + tp[p + f"attn.b_{m}"])
                       .view(B, T, h, d // h).transpose(1, 2) for m in "qkv")
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            z = z + o.transpose(1, 2).reshape(B, T, d) @ tp[p + "attn.w_o"] + tp[p + "attn.b_o"]
            a2 = F.layer_norm(z, (d,), tp[p + "ln2.gamma"], tp[p + "ln2.beta"], eps=1e-5)
            hid = F.gelu(a2 @ tp[p + "ff.w1"] + tp[p + "ff.b1"], approximate="tanh")
            z = z + hid @ tp[p + "ff.w2"] + tp[p + "ff.b2"]
        z = F.layer_norm(z, (d,), tp["ln_f.gamma"], tp["ln_f.beta"], eps=1e-5)
        loss = F.cross_entropy((z @ tp["wte"].T).reshape(B * T, -1), ty.reshape(-1))
        loss.backward()
        return float(loss)

    return run


def best_of_rounds(fns: dict[str, object], rounds: int) -> dict[str, list[float]]:
    """Run every function once per round, in turn; every time in seconds."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a smoke test, seconds")
    parser.add_argument("--store", action="store_true",
                        help=f"write the packaged results, {STORED.relative_to(ROOT)}")
    args = parser.parse_args()
    rounds = 2 if args.quick else 7
    load_start = os.getloadavg()
    cpu = al.cpu_description()
    print(f"CPU: {cpu}; load average {load_start[0]:.1f}; numpy {np.__version__}; "
          f"torch {torch.__version__ if torch else 'not installed'}")

    config = al.GPTConfig(62, 128, 128, 4, 4)
    params = al.init_gpt(config)
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 62, (2, 32, 128))
    if torch is not None:
        cross = torch_step(params, config, x, y)()
        mine, _ = al.gpt_loss_and_grads(params, config, x, y)
        assert abs(cross - mine) < 1e-4, (cross, mine)
    # One thread each, then every CPU each: both libraries get the same threads in a
    # round, and the rounds alternate between them (a busy spell slows both).
    step: dict[str, dict[str, list[float]]] = {}
    for threads in sorted({1, available_cpus()}):
        with threadpool_limits(limits=threads):
            if torch is not None:
                torch.set_num_threads(threads)
            fns = {"numpy": lambda: al.gpt_loss_and_grads(params, config, x, y)}
            if torch is not None:
                fns["torch"] = torch_step(params, config, x, y)
            step[str(threads)] = best_of_rounds(fns, rounds)
    print("\nTraining step (forward + backward), batch 32 x 128 positions, float32")
    print(f"{'threads':<9}{'implementation':<16}{'best s':>10}{'median s':>10}")
    for threads, times in step.items():
        for name, ts in times.items():
            print(f"{threads:<9}{name:<16}{min(ts):>10.3f}{np.median(ts):>10.3f}")
        if torch is not None:
            print(f"{threads:<9}numpy / torch (best / best): "
                  f"{min(times['numpy']) / min(times['torch']):.2f}")

    gen_config = al.GPTConfig(62, 256, 128, 4, 4)
    gen_params = al.init_gpt(gen_config, seed=1)
    n_new = 32 if args.quick else 255
    gen = best_of_rounds({
        "cached": lambda: al.generate(gen_params, gen_config, [0], n_new, temperature=0),
        "uncached": lambda: al.generate(gen_params, gen_config, [0], n_new, temperature=0,
                                        use_cache=False),
    }, 1 if args.quick else 3)
    print(f"\nGreedy generation of {n_new} tokens from one, context {gen_config.context}")
    print(f"{'':<16}{'best s':>10}{'tokens/s':>10}")
    for name, ts in gen.items():
        print(f"{name:<16}{min(ts):>10.3f}{n_new / min(ts):>10.1f}")
    print(f"cached speed-up: {min(gen['uncached']) / min(gen['cached']):.1f}x")

    payload = {
        "machine": machine_record(load_start),
        "training_step": {"batch_size": 32, "context": config.context,
                          "by_threads": {threads: {
                              name: {"best_s": min(ts), "median_s": float(np.median(ts)),
                                     "times_s": ts} for name, ts in times.items()}
                              for threads, times in step.items()}},
        "generation": {"n_new": n_new, "context": gen_config.context,
                       **{name: {"best_s": min(ts), "times_s": ts,
                                 "n_new_per_s": n_new / min(ts)} for name, ts in gen.items()}},
        "quick": args.quick,
    }
    out = STORED if args.store else RESULTS
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1) + "\n")
    print(f"\nwrote {out}")

if __name__ == "__main__":
    main()
