"""The trained soft dictionary as a small JSON file: export, load, and the checks between.

A file holds ``format``, ``config``, the ``vocabulary`` (key names ``a, b, ...`` and
value names ``0, 1, ...``), the measured ``accuracy`` and ``target_weight``, and
``params``: every array as nested lists of floats (``repr`` precision, so the round
trip is exact). Loading checks everything: the entries and their types, the array
names, that every array is real and finite, that the shapes agree with each other
and with the vocabulary and the config. Every number written is finite (strict
JSON has no NaN).
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import (
    exact_keys,
    json_document,
    mapping,
    positive_int,
    real_number,
    token_names,
    weight_arrays,
)
from .loop import TrainingResult
from .retrieval import RETRIEVAL_PARAMS, RETRIEVAL_SHAPES

__all__ = ["check_retrieval_model", "export_retrieval_model", "load_retrieval_model"]

EXPORT_FORMAT = "attention-book/retrieval-model/1"
ENTRIES = ("format", "config", "vocabulary", "accuracy", "target_weight", "params")
CONFIG_SIZES = {"n_keys": "n_keys", "n_values": "n_values", "d_model": "d", "d_k": "d_k"}


def export_retrieval_model(result: TrainingResult, path: str | Path) -> Path:
    """Write a trained soft-dictionary model to a small JSON file.

    Parameters
    ----------
    result : TrainingResult
        From :func:`train_retrieval`; its parameters must be finite.
    path : str or pathlib.Path
        Where to write; parent folders must exist.

    Returns
    -------
    pathlib.Path
        The path written.

    Notes
    -----
    The file holds ``format``, ``config``, the ``vocabulary`` (key names ``a, b, ...`` and
    value names ``0, 1, ...``), ``accuracy``, ``target_weight`` and ``params``, every array
    as nested lists of floats (``repr`` precision, so the round trip is exact). The forward
    pass of :func:`retrieval_forward` needs nothing else:
    ``x = key_embed[k] + value_embed[v]``, ``q = query_embed[query] @ w_q``,
    weights ``softmax(q (x w_k)^T / sqrt(d_k))``, logits
    ``weights @ x @ w_v @ w_out + b_out``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from attention_lib import train_retrieval
    >>> result = train_retrieval(seed=0, steps=5)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = export_retrieval_model(result, pathlib.Path(tmp) / "model.json")
    ...     params, info = load_retrieval_model(path)
    >>> info["vocabulary"]["keys"][:3], params["w_q"].shape
    (['a', 'b', 'c'], (16, 16))
    """
    if not isinstance(result, TrainingResult) or result.task != "retrieval":
        task = getattr(result, "task", None)
        raise TypeError(f"result is a {type(result).__name__} (task {task!r}); expected the "
                        "TrainingResult of train_retrieval")
    cfg = dict(result.config)
    doc = {
        "format": EXPORT_FORMAT,
        "config": cfg,
        "vocabulary": {"keys": list(string.ascii_lowercase[: cfg.get("n_keys", 0)]),
                       "values": [str(i) for i in range(cfg.get("n_values", 0))]},
        "accuracy": result.accuracy,
        "target_weight": result.target_weight,
        "params": dict(result.params),
    }
    params, _ = check_retrieval_model(doc, "result")  # what load_retrieval_model will ask
    doc["params"] = {name: params[name].tolist() for name in RETRIEVAL_PARAMS}
    path = Path(path)
    text = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def load_retrieval_model(path: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read a model written by :func:`export_retrieval_model`, checking everything.

    Parameters
    ----------
    path : str or pathlib.Path

    Returns
    -------
    params : dict of numpy.ndarray
        float64 arrays, ready for :func:`retrieval_forward`.
    info : dict
        Everything else in the file (``format``, ``config``, ``vocabulary``,
        ``accuracy``, ``target_weight``).

    Raises
    ------
    ValueError, TypeError
        Naming the file and the entry at fault: not JSON (or a bare ``NaN``), another
        format, a missing or unexpected entry, an entry of the wrong type, an array that
        is not real and finite, shapes that disagree with each other, with the vocabulary
        or with the config. See :func:`~attention_lib.training.check_retrieval_model`.

    Examples
    --------
    See :func:`export_retrieval_model`.
    """
    text = Path(path).read_text(encoding="utf-8")
    return check_retrieval_model(json_document(text, str(path)), str(path))


def check_retrieval_model(
    doc: Any, name: str = "model"
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Check a parsed model document (as ``json.load`` gives it); its arrays and the rest.

    Parameters
    ----------
    doc : dict
        The document :func:`~attention_lib.export_retrieval_model` writes.
    name : str, default "model"
        How error messages call the document (the file's path when loading).

    Returns
    -------
    params : dict of numpy.ndarray
    info : dict
        The other entries.

    Examples
    --------
    >>> check_retrieval_model({"format": "x"})
    Traceback (most recent call last):
        ...
    ValueError: model has format 'x'; expected 'attention-book/retrieval-model/1'
    """
    doc = mapping(doc, name)
    if doc.get("format") != EXPORT_FORMAT:
        raise ValueError(f"{name} has format {doc.get('format')!r}; expected {EXPORT_FORMAT!r}")
    exact_keys(doc, ENTRIES, name)
    vocab = mapping(doc["vocabulary"], f"{name} vocabulary")
    if sorted(vocab) != ["keys", "values"]:
        raise ValueError(f"{name} vocabulary has entries {sorted(vocab)}; expected "
                         "['keys', 'values']")
    keys = token_names(vocab["keys"], f"{name} vocabulary keys")
    values = token_names(vocab["values"], f"{name} vocabulary values")
    params, dims = weight_arrays(doc["params"], RETRIEVAL_SHAPES, f"{name} params",
                                 dims={"n_keys": len(keys), "n_values": len(values)})
    config = mapping(doc["config"], f"{name} config")
    for key, dim in CONFIG_SIZES.items():
        if key not in config:
            raise ValueError(f"{name} config lacks {key!r}; expected the sizes "
                             f"{list(CONFIG_SIZES)}")
        size = positive_int(config[key], f"{name} config {key}")
        if size != dims[dim]:
            raise ValueError(f"{name} config {key}={size}, but the params have {dims[dim]}; "
                             "expected the sizes the arrays have")
    info = {key: doc[key] for key in ENTRIES if key != "params"}
    for key in ("accuracy", "target_weight"):
        info[key] = real_number(doc[key], f"{name} {key}", minimum=0.0, maximum=1.0)
    info["vocabulary"] = {"keys": keys, "values": values}
    return params, info
