"""Input checks shared by the public functions.

Every public function turns its array arguments into numpy arrays here, so that
bad input fails early with a message that names the argument, what it got and
what was expected. Nothing in this module computes attention.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["as_real_array", "as_bool_mask", "common_float_dtype", "describe"]


def describe(a: np.ndarray) -> str:
    """A short description of an array for error messages: ``shape (2, 3), dtype float32``."""
    return f"shape {tuple(a.shape)}, dtype {a.dtype}"


def as_real_array(x: Any, name: str, *, min_ndim: int = 1) -> np.ndarray:
    """Convert ``x`` to a real, finite, non-empty numeric array or raise.

    Integer input is accepted (it is computed in float64 later); booleans,
    complex numbers, strings, objects and ``None`` are refused with a
    ``TypeError``; NaN, infinity, too few dimensions and empty axes with a
    ``ValueError``.
    """
    if x is None:
        raise TypeError(f"{name} is None; expected an array of real numbers")
    try:
        a = np.asarray(x)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"{name} could not be turned into an array ({exc})") from exc
    if a.dtype == np.bool_:
        raise TypeError(
            f"{name} has dtype bool; expected real numbers (a boolean array is a mask, "
            "pass it as `mask=`)"
        )
    if np.issubdtype(a.dtype, np.complexfloating):
        raise TypeError(f"{name} has complex dtype {a.dtype}; expected real numbers")
    if not (np.issubdtype(a.dtype, np.integer) or np.issubdtype(a.dtype, np.floating)):
        raise TypeError(f"{name} has dtype {a.dtype}; expected an array of real numbers")
    if a.ndim < min_ndim:
        raise ValueError(
            f"{name} has {a.ndim} dimension(s) ({describe(a)}); expected at least {min_ndim}"
        )
    if 0 in a.shape:
        raise ValueError(f"{name} has an empty axis ({describe(a)}); every axis must be non-empty")
    if np.issubdtype(a.dtype, np.floating) and not np.isfinite(a).all():
        bad = np.argwhere(~np.isfinite(a))
        first = tuple(int(i) for i in bad[0])
        raise ValueError(
            f"{name} contains {len(bad)} NaN or infinite value(s), the first at index {first}; "
            "expected finite numbers"
        )
    return a


def common_float_dtype(*arrays: np.ndarray) -> np.dtype:
    """The floating dtype to compute in: float32 stays float32, integers become float64."""
    dtype = np.result_type(*arrays)
    if not np.issubdtype(dtype, np.floating):
        dtype = np.dtype(np.float64)
    return np.dtype(dtype)


def as_bool_mask(mask: Any, name: str = "mask") -> np.ndarray:
    """Convert ``mask`` to a boolean array (True = may attend) or raise ``TypeError``."""
    if mask is None:
        raise TypeError(f"{name} is None; expected a boolean array")
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise TypeError(
            f"{name} has dtype {m.dtype}; expected a boolean array where True means "
            "'may attend' (additive float masks such as -1e9 or -inf are not accepted)"
        )
    return m
