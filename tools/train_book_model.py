"""Train the book's Shakespeare model and store it as package data.

    make train-model            # or: python tools/train_book_model.py

Writes attention_lib/data/book_gpt.npz: the weights, the configuration, the alphabet and the
training log (every setting, the loss of every step, the validation losses, the validation
loss over the whole validation text, the time taken and the CPU). The run is seeded: the same
settings give the same losses, and the first steps do not depend on the number of steps.

The trained float32 weights are rounded to float16 numbers (``round_to_half``) and stored as
float16: half the bytes for the package and for the browser that runs the model. The
validation loss in the log is the rounded model's, the model the chapters read.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import attention_lib as al
from attention_lib.corpus import CharTokenizer, shakespeare_split, shakespeare_text
from attention_lib.gpt.stored import BOOK_MODEL, round_to_half, save_gpt
from attention_lib.gpt.train import sequence_loss, train_gpt

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"steps": 5000, "batch_size": 32, "lr": 3e-3, "min_lr": 3e-4, "warmup": 100,
            "weight_decay": 0.1, "clip": 1.0, "betas": (0.9, 0.99), "eval_every": 250,
            "eval_windows": 64, "seed": 0}
SIZES = {"context": 128, "d_model": 128, "n_layers": 4, "n_heads": 4}


def book_setup() -> tuple[al.GPTConfig, CharTokenizer, np.ndarray, np.ndarray]:
    """The configuration, the tokenizer and the two token streams of the book's model."""
    tokenizer = CharTokenizer.from_text(shakespeare_text())
    train_text, val_text = shakespeare_split()
    config = al.GPTConfig(tokenizer.vocab_size, **SIZES)
    return config, tokenizer, tokenizer.encode(train_text), tokenizer.encode(val_text)


def finish(params: dict[str, np.ndarray], log: dict, out: Path, seconds: float) -> dict:
    """Round the trained weights to float16 numbers, measure them, and write the model file."""
    config, tokenizer, train_ids, val_ids = book_setup()
    rounded = round_to_half(params)
    record = dict(log)
    record["validation_loss_full"] = round(sequence_loss(rounded, config, val_ids), 6)
    record["validation_loss_full_float32"] = round(sequence_loss(params, config, val_ids), 6)
    record["train_characters"] = int(train_ids.size)
    record["cpu"] = al.cpu_description()
    record["total_seconds"] = round(seconds, 1)
    save_gpt(out, rounded, config, tokenizer, record, half=True)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--steps", type=int, default=SETTINGS["steps"])
    parser.add_argument("--out", type=Path, default=ROOT / "attention_lib" / "data" / BOOK_MODEL)
    args = parser.parse_args()
    config, _, train_ids, val_ids = book_setup()
    start = time.perf_counter()
    params, log = train_gpt(config, train_ids, val_ids, **dict(SETTINGS, steps=args.steps))
    record = finish(params, log.as_dict(), args.out, time.perf_counter() - start)
    print(f"validation loss over the whole validation text: "
          f"{record['validation_loss_full']:.4f} nats per character "
          f"(float32 weights: {record['validation_loss_full_float32']:.4f}); "
          f"{record['total_seconds']:.0f} s on {record['cpu']}; wrote {args.out}")


if __name__ == "__main__":
    main()
