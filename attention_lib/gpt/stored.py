"""A trained GPT as a file: weights and description in one ``.npz``, data and never code.

The file holds one array per parameter (the names of
:func:`~attention_lib.gpt.gpt_parameter_shapes`) and ``__meta__``, the UTF-8 bytes of a JSON
object: ``{"format": 1, "config": {...}, "alphabet": "...", "log": {...}}``. It is read with
``allow_pickle=False``, and every part is checked on load (names, shapes, dtype, finiteness,
the alphabet against the vocabulary), with an error that names what is wrong.

Parameters may be stored as float16 (``save_gpt(..., half=True)``) when every value is one
that float16 holds exactly; they are read back as the same float32 numbers. The book's model
is stored so: half the bytes, for the package and for the browser that runs it, and not an
approximation of the model the chapters compute with, but that model.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..corpus import CharTokenizer, shakespeare_split
from .config import GPTConfig, check_params

__all__ = ["BookLanguageModel", "book_language_model", "load_gpt", "round_to_half", "save_gpt"]

FORMAT = 1
META = "__meta__"
BOOK_MODEL = "book_gpt.npz"  # the name tools/train_book_model.py gives the book's model


@dataclass(frozen=True)
class BookLanguageModel:
    """A trained character-level GPT with its tokenizer.

    Attributes
    ----------
    params : dict of str to numpy.ndarray
        The trained weights (float32), as :func:`~attention_lib.init_gpt` names them.
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


def round_to_half(params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every parameter rounded to the nearest float16 number, kept as float32.

    Examples
    --------
    >>> round_to_half({"w": np.array([0.1, 1.0], dtype=np.float32)})["w"]
    array([0.09998, 1.     ], dtype=float32)
    """
    return {k: np.asarray(a).astype(np.float16).astype(np.float32) for k, a in params.items()}


def save_gpt(path: str | Path, params: dict[str, np.ndarray], config: GPTConfig,
             tokenizer: CharTokenizer, log: dict[str, Any] | None = None, *,
             half: bool = False) -> None:
    """Write a model file; refuses parameters that do not fit ``config`` or are not finite.

    With ``half=True`` the parameters are stored as float16 and must be float32 numbers that
    float16 holds exactly (:func:`round_to_half` makes them so); anything else is refused,
    so that the file never holds a different model from the one in memory.
    """
    check_params(params, config)
    if half:
        inexact = [k for k, a in params.items()
                   if a.dtype != np.float32 or not np.array_equal(round_to_half({k: a})[k], a)]
        if inexact:
            raise ValueError(f"half=True, but params {inexact[:3]} hold values float16 cannot "
                             "represent (or are not float32); round them with round_to_half "
                             "first")
        params = {k: a.astype(np.float16) for k, a in params.items()}
    if not isinstance(tokenizer, CharTokenizer) or tokenizer.vocab_size != config.vocab_size:
        raise ValueError(f"tokenizer has {getattr(tokenizer, 'vocab_size', None)} characters; "
                         f"expected a CharTokenizer of config.vocab_size={config.vocab_size}")
    meta = {"format": FORMAT, "config": config.as_dict(), "alphabet": tokenizer.alphabet,
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
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as err:  # damaged bytes
                raise ValueError(f"{source} is damaged: entry {name!r} cannot be read "
                                 f"({type(err).__name__}: {err}); expected a file written "
                                 "by save_gpt, unchanged") from None
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
    except (TypeError, ValueError) as err:
        raise ValueError(f"{source}: the config is not a GPTConfig ({err})") from None
    for name, a in arrays.items():  # float16 on disk: the same numbers as float32
        if a.dtype == np.float16:
            arrays[name] = a.astype(np.float32)
    check_params(arrays, config)
    tokenizer = CharTokenizer(meta["alphabet"])
    if tokenizer.vocab_size != config.vocab_size:
        raise ValueError(f"{source}: the alphabet has {tokenizer.vocab_size} characters but "
                         f"the config's vocab_size is {config.vocab_size}")
    return BookLanguageModel(arrays, config, tokenizer, meta["log"])


def load_gpt(path: str | Path) -> BookLanguageModel:
    """Read and check a model file written by :func:`save_gpt`."""
    return _read(Path(path).read_bytes(), str(path))


def book_language_model() -> BookLanguageModel:
    """The book's trained Shakespeare model, with its validation text.

    Read from the package's data (``attention_lib/data/book_gpt.npz``, written by
    ``tools/train_book_model.py``) through ``importlib.resources``, and checked as
    :func:`load_gpt` checks any model file. Each call returns fresh arrays.

    Returns
    -------
    BookLanguageModel
        ``.params`` (float32), ``.config``, ``.encode``/``.decode``, ``.log`` (the
        training record: settings, losses, time and CPU) and ``.validation_text`` (the
        part of the corpus the model was not trained on, from
        :func:`~attention_lib.shakespeare_split`).

    Examples
    --------
    >>> model = book_language_model()
    >>> model.config.n_layers, model.decode(model.encode("Romeo"))
    (4, 'Romeo')
    """
    data = resources.files("attention_lib").joinpath("data", BOOK_MODEL).read_bytes()
    model = _read(data, f"attention_lib/data/{BOOK_MODEL}")
    train_text, validation_text = shakespeare_split()
    if model.log.get("train_characters") not in (None, len(train_text)):
        raise ValueError(f"{BOOK_MODEL} was trained on {model.log['train_characters']} "
                         f"characters, but the corpus's training part has {len(train_text)}")
    return BookLanguageModel(model.params, model.config, model.tokenizer, model.log,
                             validation_text)
