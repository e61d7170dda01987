"""A trained GPT as a file: weights and description in one ``.npz``, data and never code.

The file holds one array per parameter (the names of
:func:`~attention_lib.gpt.gpt_parameter_shapes`) and ``__meta__``, the UTF-8 bytes of a JSON
object: ``{"format": 1, "config": {...}, "alphabet": "...", "log": {...}}``. It is read with
``allow_pickle=False``, and every part is checked on load (names, shapes, dtype, finiteness,
the alphabet against the vocabulary), with an error that names what is wrong.
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..corpus import CharTokenizer
from .config import GPTConfig, check_params

__all__ = ["BookLanguageModel", "load_gpt", "save_gpt"]

FORMAT = 1
META = "__meta__"
BOOK_MODEL = "book_gpt.npz"  # the name tools/train_book_model.py gives the book's model


@dataclass(frozen=True)
class BookLanguageModel:
    """A trained character-level GPT with its tokenizer.

    Attributes
    ----------
    params : dict of str to numpy.ndarray
    config : GPTConfig
    tokenizer : CharTokenizer
    log : dict
        What the training script recorded (steps, losses, settings).
    validation_text : str
        Text the model was not trained on.
    """

    params: dict[str, np.ndarray]
    config: GPTConfig
    tokenizer: CharTokenizer
    log: dict[str, Any] = field(default_factory=dict)
    validation_text: str = ""

    def encode(self, text: str) -> np.ndarray:
        """Characters to token ids."""
        return self.tokenizer.encode(text)

    def decode(self, tokens: Any) -> str:
        """Token ids to characters."""
        return self.tokenizer.decode(tokens)


def save_gpt(path: str | Path, params: dict[str, np.ndarray], config: GPTConfig,
             tokenizer: CharTokenizer, log: dict[str, Any] | None = None) -> None:
    """Write a model file; refuses parameters that do not fit ``config`` or are not finite."""
    check_params(params, config)
    if not isinstance(tokenizer, CharTokenizer) or tokenizer.vocab_size != config.vocab_size:
        raise ValueError(f"tokenizer has {getattr(tokenizer, 'vocab_size', None)} characters; "
                         f"expected a CharTokenizer of config.vocab_size={config.vocab_size}")
    meta = {"format": FORMAT, "config": asdict(config), "alphabet": tokenizer.alphabet,
            "log": log or {}}
    blob = json.dumps(meta, allow_nan=False, sort_keys=True).encode("utf-8")
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **params, **{META: np.frombuffer(blob, dtype=np.uint8)})
    Path(path).write_bytes(buffer.getvalue())


def _read(data: bytes, source: str) -> BookLanguageModel:
    try:
        archive = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as err:  # not an npz at all
        raise ValueError(f"{source} is not a model file (.npz): {err}") from None
    arrays = {}
    with archive:
        for name in archive.files:
            try:
                arrays[name] = archive[name]
            except ValueError as err:  # an object array would need pickle: refused
                raise ValueError(f"{source}: entry {name!r} cannot be read as plain data "
                                 f"({err})") from None
    if META not in arrays:
        raise ValueError(f"{source} has no {META!r} entry; expected a file from save_gpt")
    try:
        meta = json.loads(arrays.pop(META).tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{source}: {META!r} is not valid JSON ({err})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{source}: {META!r} is not a format-{FORMAT} description")
    for key, kind in (("config", dict), ("alphabet", str), ("log", dict)):
        if not isinstance(meta.get(key), kind):
            raise ValueError(f"{source}: {META!r}[{key!r}] is {type(meta.get(key)).__name__}; "
                             f"expected {kind.__name__}")
    try:
        config = GPTConfig(**meta["config"])
    except TypeError as err:
        raise ValueError(f"{source}: the config is not a GPTConfig ({err})") from None
    check_params(arrays, config)
    tokenizer = CharTokenizer(meta["alphabet"])
    if tokenizer.vocab_size != config.vocab_size:
        raise ValueError(f"{source}: the alphabet has {tokenizer.vocab_size} characters but "
                         f"the config's vocab_size is {config.vocab_size}")
    return BookLanguageModel(arrays, config, tokenizer, meta["log"])


def load_gpt(path: str | Path) -> BookLanguageModel:
    """Read and check a model file written by :func:`save_gpt`."""
    return _read(Path(path).read_bytes(), str(path))
