"""Train chapter 21's coreference encoder (seed 0) and store it in the package.

    make coreference-model        # or: python tools/coreference_model.py

Writes attention_lib/data/coreference_model.npz, which ``al.trained_coreference_model()``
reads: the weights ``al.train_coreference_model(seed=0)`` returns (float32 numbers, as that
function rounds them, so float32 arrays hold them exactly) and the training loss of every
step. Chapter 21 trains seed 0 in the page and checks that its weights are these; the test
suite replays the first steps and compares their losses with the stored ones
(tests/test_coreference_stored.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import attention_lib as al

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "attention_lib" / "data" / "coreference_model.npz"


def main() -> None:
    model = al.train_coreference_model(seed=0)
    arrays = {name: a.astype(np.float32) for name, a in model.params.items()}
    assert all(np.array_equal(arrays[k], model.params[k]) for k in arrays)  # exact
    np.savez_compressed(OUT, **arrays, **{"log.train_loss": model.log["train_loss"]})
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
