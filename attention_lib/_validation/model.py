"""The checks of training and models: optimiser settings, initial scales, float dtypes,
batches of examples."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .core import real_number

__all__ = ["check_betas", "float_dtype", "non_empty", "positive_scale", "sentence_list"]


def check_betas(betas: Any, name: str = "betas") -> tuple[float, float]:
    """Adam's two decay rates, each a real number in [0, 1), or an error naming ``name``.

    Examples
    --------
    >>> check_betas((0.9, 0.99))
    (0.9, 0.99)
    >>> check_betas(0.9)
    Traceback (most recent call last):
        ...
    TypeError: betas=0.9; expected two numbers in [0, 1), e.g. (0.9, 0.999)
    """
    if isinstance(betas, str) or not isinstance(betas, Sequence | np.ndarray) \
            or np.ndim(betas) != 1:
        raise TypeError(f"{name}={betas!r}; expected two numbers in [0, 1), e.g. (0.9, 0.999)")
    if len(betas) != 2:
        raise ValueError(f"{name}={betas!r} has {len(betas)} entries; expected two numbers "
                         "in [0, 1), e.g. (0.9, 0.999)")
    b1, b2 = (real_number(b, name, minimum=0.0) for b in betas)
    if not (b1 < 1.0 and b2 < 1.0):
        raise ValueError(f"{name}={betas!r}; expected two numbers in [0, 1)")
    return b1, b2


def positive_scale(value: Any, name: str) -> float:
    """A finite real number > 0 (a standard deviation, a learning rate), or an error."""
    return real_number(value, name, minimum=0.0, strict_minimum=True)


def float_dtype(dtype: Any, name: str = "dtype") -> np.dtype:
    """``numpy.float32`` or ``numpy.float64`` (the dtypes a model computes in), or an error.

    Examples
    --------
    >>> float_dtype("float32")
    dtype('float32')
    >>> float_dtype(None)
    Traceback (most recent call last):
        ...
    TypeError: dtype=None; expected numpy.float32 or numpy.float64
    """
    try:
        dt = None if dtype is None else np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt not in (np.dtype(np.float32), np.dtype(np.float64)):  # None == float64
        raise TypeError(f"{name}={dtype!r}; expected numpy.float32 or numpy.float64")
    return dt


def non_empty(items: Any, name: str, what: str) -> list[Any]:
    """``items`` as a list with at least one entry, or a ``ValueError`` naming ``name``."""
    items = list(items)
    if not items:
        raise ValueError(f"{name} is empty; expected at least one {what}")
    return items


def sentence_list(items: Any, name: str, single: str) -> list[str]:
    """A non-empty list of sentences, each a str, or an error naming ``name``.

    A lone str is refused (it is one sentence, not a list of them): ``single`` says which
    method takes one.

    Examples
    --------
    >>> sentence_list(("a b", "c"), "sentences", "predict")
    ['a b', 'c']
    >>> sentence_list("a b", "sentences", "predict")
    Traceback (most recent call last):
        ...
    TypeError: sentences='a b'; expected a list of str (predict takes one sentence)
    """
    if isinstance(items, str):
        raise TypeError(f"{name}={items!r}; expected a list of str ({single} takes one "
                        "sentence)")
    items = non_empty(items, name, "sentence")
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"sentence={item!r}; expected a str of words separated by spaces")
    return items
