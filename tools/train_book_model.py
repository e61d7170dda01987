"""Train the book's Shakespeare model and store it as package data.

    make train-model            # or: python tools/train_book_model.py

Writes attention_lib/data/book_gpt.npz: the weights, the configuration, the alphabet and the
training log (every setting, the loss of every step, the validation losses, the validation
loss over the whole validation text, the time taken and the CPU). The run is seeded: the same
settings give the same losses, and the first steps do not depend on the number of steps.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import attention_lib as al
from attention_lib.corpus import CharTokenizer, shakespeare_split, shakespeare_text
from attention_lib.gpt.stored import BOOK_MODEL, save_gpt
from attention_lib.gpt.train import sequence_loss, train_gpt

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {"steps": 5000, "batch_size": 32, "lr": 3e-3, "min_lr": 3e-4, "warmup": 100,
            "weight_decay": 0.1, "clip": 1.0, "betas": (0.9, 0.99), "eval_every": 250,
            "eval_windows": 64, "seed": 0}
SIZES = {"context": 128, "d_model": 128, "n_layers": 4, "n_heads": 4}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--steps", type=int, default=SETTINGS["steps"])
    parser.add_argument("--out", type=Path, default=ROOT / "attention_lib" / "data" / BOOK_MODEL)
    args = parser.parse_args()
    tokenizer = CharTokenizer.from_text(shakespeare_text())
    train_text, val_text = shakespeare_split()
    config = al.GPTConfig(tokenizer.vocab_size, **SIZES)
    settings = dict(SETTINGS, steps=args.steps)
    start = time.perf_counter()
    params, log = train_gpt(config, tokenizer.encode(train_text), tokenizer.encode(val_text),
                            **settings)
    record = log.as_dict()
    record["validation_loss_full"] = round(sequence_loss(params, config,
                                                         tokenizer.encode(val_text)), 6)
    record["cpu"] = al.cpu_description()
    record["total_seconds"] = round(time.perf_counter() - start, 1)
    save_gpt(args.out, params, config, tokenizer, record)
    print(f"validation loss over the whole validation text: "
          f"{record['validation_loss_full']:.4f} nats per character; "
          f"{record['total_seconds']:.0f} s on {record['cpu']}; wrote {args.out}")


if __name__ == "__main__":
    main()
