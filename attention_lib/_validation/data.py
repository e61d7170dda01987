"""The checks of data: index arrays, named weight arrays and model documents, matrix cells,
and the numbers a browser-side control may show."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .core import _asarray, as_real_array, describe, first_true, index, real_number

__all__ = ["displayable", "exact_keys", "index_array", "json_document", "mapping", "scale_range",
           "token_names", "weight_arrays"]

# --------------------------------------------------------------------------- indices and weights
# Checks for integer index arrays and for named weight arrays (a trained model's parameters,
# in memory or read from a file): every table present, real, finite, of a consistent shape.


def index_array(values: Any, n: int, name: str, *, ndim: int | None = None) -> np.ndarray:
    """``values`` as an int64 array of positions ``0 <= value < n``, or an error naming ``name``.

    Negative entries are refused, never wrapped around (``-1`` is not the last row).
    Booleans, floats and other non-integer dtypes are refused with a ``TypeError``.

    Examples
    --------
    >>> index_array([[0, 2]], 3, "keys")
    array([[0, 2]])
    >>> index_array([1, -1], 3, "keys")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    ValueError: keys contains 1 entry outside 0..2, the first -1 at index (1,); ...
    """
    a = _asarray(values, name)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} has dtype {a.dtype}; expected integer indices from 0 to {n - 1}")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} has {a.ndim} dimension(s) ({describe(a)}); expected {ndim}")
    if 0 in a.shape:
        raise ValueError(f"{name} has an empty axis ({describe(a)}); every axis must be non-empty")
    outside = (a < 0) | (a >= n)
    if outside.any():
        count, first = first_true(outside)
        raise ValueError(
            f"{name} contains {count} entr{'y' if count == 1 else 'ies'} outside 0..{n - 1}, "
            f"the first {a[first]} at index {first}; expected indices from 0 to {n - 1} "
            "(negative indices are not wrapped)")
    return a.astype(np.int64, copy=False)


def mapping(value: Any, name: str) -> dict[str, Any]:
    """``value`` as a dict (a JSON object), or a ``TypeError`` naming ``name``."""
    from collections.abc import Mapping

    if not isinstance(value, Mapping):
        raise TypeError(f"{name} is a {type(value).__name__}; expected a mapping (a JSON object)")
    return dict(value)


def exact_keys(value: Any, expected: Any, name: str, *, what: str = "entries") -> None:
    """Raise a ValueError naming what ``value`` lacks and what it has beyond ``expected``.

    Examples
    --------
    >>> exact_keys({"a": 1, "c": 2}, ["a", "b"], "model")
    Traceback (most recent call last):
        ...
    ValueError: model lacks ['b'] and has unexpected ['c']; expected exactly the entries ['a', 'b']
    """
    missing = [key for key in expected if key not in value]
    unknown = [key for key in value if key not in expected]
    if missing or unknown:
        raise ValueError(f"{name} lacks {missing} and has unexpected {unknown}; expected "
                         f"exactly the {what} {list(expected)}")


def weight_arrays(
    tables: Any, shapes: dict[str, tuple[int | str, ...]], name: str, *,
    dims: dict[str, int] | None = None, extra: str = "refuse",
) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """Check a mapping of named weight arrays against symbolic shapes; float64 copies.

    ``shapes`` maps each required array to its shape, whose entries are sizes or
    dimension letters (``("n_keys", "d")``): a letter takes the size where it first
    appears (or its value in ``dims``) and must have it everywhere else. Every array
    must be real (no booleans, strings or ``None``) and finite. Names outside ``shapes``
    are refused (``extra="refuse"``) or skipped (``extra="ignore"``).

    Returns
    -------
    arrays : dict of numpy.ndarray
        float64 arrays, in the order of ``shapes``.
    dims : dict of int
        The size of every dimension letter.

    Examples
    --------
    >>> arrays, dims = weight_arrays({"w": [[1.0, 2.0]], "b": [0.0, 0.0]},
    ...                              {"w": ("d", "c"), "b": ("c",)}, "params")
    >>> dims
    {'d': 1, 'c': 2}
    >>> weight_arrays({"w": [[1.0]], "b": [0.0, 0.0]}, {"w": ("d", "c"), "b": ("c",)}, "params")
    Traceback (most recent call last):
        ...
    ValueError: params['b'] has shape (2,); expected (c,) = (1,), since c = 1 (from params['w'])
    """
    tables = mapping(tables, name)
    if extra not in ("refuse", "ignore"):
        raise ValueError(f"extra={extra!r}; expected 'refuse' or 'ignore'")
    missing = [key for key in shapes if key not in tables]
    if missing:
        raise ValueError(f"{name} lacks {missing}; expected the arrays {list(shapes)}")
    unknown = [key for key in tables if key not in shapes]
    if unknown and extra == "refuse":
        raise ValueError(f"{name} has unexpected entries {unknown}; expected exactly the "
                         f"arrays {list(shapes)}")
    sizes = dict(dims or {})
    source = {letter: "given" for letter in sizes}
    arrays = {}
    for key, shape in shapes.items():
        label = f"{name}[{key!r}]"
        a = as_real_array(tables[key], label).astype(np.float64)
        if a.ndim != len(shape):
            raise ValueError(f"{label} has {a.ndim} dimension(s) ({describe(a)}); expected "
                             f"{len(shape)}, shape ({', '.join(map(str, shape))})")
        for want, got in zip(shape, a.shape, strict=True):
            if isinstance(want, str) and want not in sizes:
                sizes[want], source[want] = got, f"from {label}"
        wanted = tuple(sizes[s] if isinstance(s, str) else s for s in shape)
        if a.shape != wanted:
            want, size = next((w, n) for w, n, g in zip(shape, wanted, a.shape, strict=True)
                              if n != g)
            why = f", since {want} = {size} ({source[want]})" if isinstance(want, str) else ""
            symbols = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
            raise ValueError(f"{label} has shape {a.shape}; expected ({symbols}) = {wanted}{why}")
        arrays[key] = a
    return arrays, sizes


def json_document(text: str, name: str) -> Any:
    """Parse ``text`` as strict JSON: a ValueError naming ``name`` for bad syntax or a bare
    ``NaN``/``Infinity`` (which Python's ``json`` would otherwise accept)."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{name} contains a bare {constant}, which is not JSON; expected "
                         "finite numbers")

    try:
        return json.loads(text, parse_constant=refuse)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name} is not valid JSON ({exc})") from None


def token_names(value: Any, name: str) -> list[str]:
    """``value`` as a non-empty list of distinct token names (non-empty strings without
    whitespace or ``?``), or a TypeError/ValueError naming ``name``."""
    if not isinstance(value, list | tuple):
        raise TypeError(f"{name} is a {type(value).__name__}; expected a list of names")
    if not value:
        raise ValueError(f"{name} is empty; expected at least one name")
    for i, x in enumerate(value):
        if not isinstance(x, str):
            raise TypeError(f"{name}[{i}]={x!r}; expected a string")
        if not x or any(ch.isspace() or ch == "?" for ch in x):
            raise ValueError(f"{name}[{i}]={x!r}; expected a non-empty name without spaces "
                             "or '?'")
    if len(set(value)) != len(value):
        twice = sorted({x for x in value if list(value).count(x) > 1})
        raise ValueError(f"{name} names {twice} more than once; expected distinct names")
    return list(value)

# --------------------------------------------------------------------------------------
# Cells of a matrix, named by (row, column) pairs or by a boolean matrix
# --------------------------------------------------------------------------------------

__all__ += ["cell_positions"]


def cell_positions(value: Any, shape: tuple[int, int], name: str) -> list[tuple[int, int]]:
    """The ``(row, column)`` cells of a ``shape`` matrix that ``value`` names.

    ``value`` is a collection of ``(row, column)`` pairs of integers (a list, a set,
    an ``(m, 2)`` array such as ``np.argwhere(...)``) or a boolean array of ``shape``
    (True at the cells meant). Positions are never wrapped, as in :func:`index`.

    Examples
    --------
    >>> cell_positions({(1, 0), (0, 2)}, (2, 3), "highlight")
    [(0, 2), (1, 0)]
    >>> cell_positions(np.eye(2, dtype=bool), (2, 2), "highlight")
    [(0, 0), (1, 1)]
    >>> cell_positions([(0, 3)], (2, 3), "cells")
    Traceback (most recent call last):
        ...
    ValueError: cells[0][1]=3; expected a position from 0 to 2 (negative positions are not wrapped)
    """
    n_rows, n_cols = shape
    if isinstance(value, set | frozenset):
        value = sorted(value)
    elif value is not None and _asarray(value, name).dtype == np.bool_:
        cells = np.asarray(value)
        if cells.shape != (n_rows, n_cols):
            raise ValueError(f"{name} is a boolean array of shape {cells.shape}; expected "
                             f"shape {(n_rows, n_cols)}, True at the cells meant")
        return [(int(i), int(j)) for i, j in np.argwhere(cells)]
    try:
        pairs = [tuple(pair) for pair in value]
    except TypeError:
        raise TypeError(f"{name}={value!r}; expected (row, column) pairs or a boolean array "
                        f"of shape {(n_rows, n_cols)}") from None
    out = []
    for number, pair in enumerate(pairs):
        if len(pair) != 2:
            raise ValueError(f"{name}[{number}]={pair!r}; expected a (row, column) pair")
        out.append((index(pair[0], n_rows, f"{name}[{number}][0]"),
                    index(pair[1], n_cols, f"{name}[{number}][1]")))
    return out

# --------------------------------------------------------------------------------------
# The browser-side controls (attention_lib.controls): numbers the page can show
# --------------------------------------------------------------------------------------

#: No number a control shows may be larger than this in size: below 1e21 JavaScript's
#: ``toFixed`` and Python's ``f"{x:.2f}"`` agree, and far below it nothing overflows.
LARGEST_SHOWN = 1e15

#: A slider may have at most this many steps.
MAX_STEPS = 10**9


def displayable(a: ArrayLike, name: str) -> np.ndarray:
    """``a`` as float64, or a ValueError naming ``name`` if the page could not show it."""
    a = np.asarray(a, dtype=np.float64)
    if a.size and not (np.all(np.isfinite(a)) and np.max(np.abs(a)) <= LARGEST_SHOWN):
        raise ValueError(f"{name}: up to {np.max(np.abs(a)):.3g} in size; expected every "
                         f"number the control shows to be finite and at most "
                         f"{LARGEST_SHOWN:g} in size")
    return a


def scale_range(scale: Any, scale_max: Any, step: Any, *, largest: float, power: int = 1,
                name: str = "scale") -> tuple[float, float, float]:
    """Check the range ``0 <= scale <= scale_max`` of a factor ``c`` and its ``step``.

    ``largest`` is the largest number (in size) that the page multiplies by ``c**power``:
    ``scale_max`` must keep every product, and ``c**power`` itself, within
    :data:`LARGEST_SHOWN`, so that the page never shows inf or NaN anywhere on the slider.
    """
    hi = real_number(scale_max, "scale_max", minimum=0.0, strict_minimum=True)
    step = real_number(step, "step", minimum=0.0, strict_minimum=True)
    c0 = real_number(scale, name)
    if not 0.0 <= c0 <= hi:
        raise ValueError(f"{name}={scale!r}; expected a number from 0 to scale_max={hi!r}")
    limit = (LARGEST_SHOWN / max(float(largest), 1.0)) ** (1.0 / power)
    if hi > limit:
        what = "c" if power == 1 else f"c^{power}"
        raise ValueError(
            f"scale_max={scale_max!r}; expected at most {limit:.6g}: the control multiplies "
            f"numbers up to {float(largest):.6g} in size by {what}, and every number it shows "
            f"must stay at most {LARGEST_SHOWN:g} in size")
    if not hi / MAX_STEPS <= step <= hi:
        raise ValueError(f"step={step!r}; expected a step from scale_max / {MAX_STEPS:g} = "
                         f"{hi / MAX_STEPS:.3g} to scale_max = {hi!r}")
    return c0, hi, step

