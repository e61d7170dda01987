"""Train a character model and a BPE model with the same compute; store what they reach.

    python tools/tokens_comparison.py          # about 6 minutes on 2 cores

Writes attention_lib/data/tokens_comparison.json, read by ``al.tokenizer_comparison()``
(chapter 12). Both models have the same sizes (context, width, layers, heads) apart from
their vocabulary, and train for the same number of steps on the same number of windows of
``context`` tokens: the same arithmetic per step, give or take the embedding and read-out
rows. The BPE tokenizer learns its merges from the training text only. Each validation
loss is measured over the whole validation text and converted to bits per character
(``al.bits_per_character``), the unit that does not depend on the tokenizer.
The runs are seeded: tests/test_tokens_comparison.py replays the first steps of each and
compares them with the stored log.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import attention_lib as al
from attention_lib.corpus import CharTokenizer, shakespeare_split
from attention_lib.tokens import COMPARISON_FILE

ROOT = Path(__file__).resolve().parents[1]
BPE_VOCAB = 256
SIZES = {"context": 64, "d_model": 64, "n_layers": 2, "n_heads": 4}
SETTINGS = {"steps": 2000, "batch_size": 32, "lr": 3e-3, "min_lr": 3e-4, "warmup": 100,
            "weight_decay": 0.1, "clip": 1.0, "betas": (0.9, 0.99), "eval_every": 250,
            "eval_windows": 64, "seed": 0}


def setup(name: str):
    """(tokenizer, config, training ids, validation ids) of run ``name``."""
    train_text, val_text = shakespeare_split()
    if name == "characters":
        tokenizer = CharTokenizer.from_text(train_text)
    elif name == "bpe":
        tokenizer = al.train_bpe(train_text, BPE_VOCAB)
    else:
        raise ValueError(f"name={name!r}; expected 'characters' or 'bpe'")
    config = al.GPTConfig(tokenizer.vocab_size, **SIZES)
    return (tokenizer, config, np.asarray(tokenizer.encode(train_text)),
            np.asarray(tokenizer.encode(val_text)))


def train(name: str, steps: int | None = None):
    """Train run ``name`` (all its steps, or the first ``steps``): (params, log, setup)."""
    tokenizer, config, train_ids, val_ids = setup(name)
    settings = dict(SETTINGS, steps=steps or SETTINGS["steps"])
    params, log = al.train_gpt(config, train_ids, val_ids, progress=False, **settings)
    return params, log, (tokenizer, config, train_ids, val_ids)


def record(name: str) -> dict:
    started = time.perf_counter()
    params, log, (tokenizer, config, train_ids, val_ids) = train(name)
    _, val_text = shakespeare_split()
    loss = al.sequence_loss(params, config, val_ids)
    return {"vocab_size": config.vocab_size, "train_tokens": int(train_ids.size),
            "val_tokens": int(val_ids.size), "val_characters": len(val_text),
            "characters_per_token": round(len(val_text) / val_ids.size, 4),
            "val_loss_nats_per_token": round(float(loss), 6),
            "val_bits_per_character": round(al.bits_per_character(params, config, val_ids,
                                                                  tokenizer), 6),
            "log": log.as_dict(), "seconds": round(time.perf_counter() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--out", type=Path,
                        default=ROOT / "attention_lib" / "data" / COMPARISON_FILE)
    args = parser.parse_args()
    started = time.perf_counter()
    runs = {}
    for name in ("characters", "bpe"):
        runs[name] = record(name)
        print(name, {k: v for k, v in runs[name].items() if k != "log"}, flush=True)
    result = {"settings": {"sizes": SIZES, "training": SETTINGS, "bpe_vocab_size": BPE_VOCAB},
              "runs": runs, "cpu": al.cpu_description(),
              "seconds": round(time.perf_counter() - started, 1)}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
