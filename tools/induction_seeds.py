"""Train the induction model of chapter 20 from several seeds and store what each reached.

    make induction-seeds        # or: python tools/induction_seeds.py

Writes attention_lib/data/induction_model.npz, seed 0's trained weights, which
``al.trained_induction_model()`` reads (chapter 20 trains seed 0 and checks that its weights
are these; later chapters read them), and attention_lib/data/induction_seeds.json, which
``al.induction_seed_survey()`` reads:
for each seed of the two-layer model, the step at which the held-out loss on the second
copy fell below half of log 64 (``InductionLog.phase_change_step``) and, after the last
step, the held-out losses on the two copies and the best head scores of each layer. The
chapter trains seed 0 in the page and shows this table for the others; the test suite
trains one seed again and checks its row (tests/test_induction_seeds.py).
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import numpy as np

import attention_lib as al
from attention_lib.measure import cpu_description

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "attention_lib" / "data" / "induction_seeds.json"
MODEL = ROOT / "attention_lib" / "data" / "induction_model.npz"
SEEDS = range(6)


def seed_record(seed: int) -> dict:
    """What the two-layer model of ``seed`` reached, measured on the held-out sequences."""
    start = time.perf_counter()
    _, _, log = al.train_induction_model(n_layers=2, seed=seed, return_log=True)
    return {"seed": seed, "phase_change_step": log.phase_change_step(),
            "first_half_loss": round(float(log.first_half_loss[-1]), 6),
            "second_half_loss": round(float(log.second_half_loss[-1]), 6),
            "previous_token": round(float(log.previous_token[-1, 0].max()), 6),
            "induction": round(float(log.induction[-1, 1].max()), 6),
            "seconds": round(time.perf_counter() - start, 1)}


def store_model() -> None:
    """Train seed 0's two-layer model and write its float64 weights."""
    params, _ = al.train_induction_model(n_layers=2, seed=0)
    np.savez_compressed(MODEL, **params)
    print(f"wrote {MODEL.relative_to(ROOT)}")


def main() -> None:
    store_model()
    rows = []
    for seed in SEEDS:
        rows.append(seed_record(seed))
        print(rows[-1], flush=True)
    OUT.write_text(json.dumps({
        "machine": {"cpu": cpu_description(), "python": platform.python_version(),
                    "date": time.strftime("%Y-%m-%d")},
        "steps": al.training.induction.STEPS, "seeds": rows}, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
