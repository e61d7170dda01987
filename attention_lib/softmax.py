"""Numerically stable softmax with an optional boolean mask."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_bool_mask, as_real_array, common_float_dtype, describe

__all__ = ["softmax", "FULLY_MASKED_POLICIES"]

FULLY_MASKED_POLICIES = ("raise", "zero")


def _check_policy(fully_masked: str) -> None:
    if fully_masked not in FULLY_MASKED_POLICIES:
        raise ValueError(
            f"fully_masked={fully_masked!r}; expected one of {FULLY_MASKED_POLICIES}"
        )


def _normalise_axis(axis: int, ndim: int) -> int:
    if not isinstance(axis, int | np.integer) or isinstance(axis, bool):
        raise TypeError(f"axis={axis!r}; expected an integer")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis={axis} is out of range for an array with {ndim} dimension(s)")
    return int(axis) % ndim


def softmax(
    x: ArrayLike,
    axis: int = -1,
    mask: ArrayLike | None = None,
    *,
    fully_masked: Literal["raise", "zero"] = "raise",
) -> np.ndarray:
    r"""Softmax of ``x`` along ``axis``, stable for very large logits.

    Parameters
    ----------
    x : array_like, shape (...)
        Real, finite logits. Integers are computed in float64; float32 stays
        float32.
    axis : int, default -1
        The axis that sums to one.
    mask : array_like of bool, optional
        Broadcastable to ``x.shape``. True means "may attend"; a False entry
        gets weight exactly 0.
    fully_masked : {"raise", "zero"}, default "raise"
        What to do with a slice whose entries are all masked. Its softmax is
        undefined (0 / 0): ``"raise"`` raises ``ValueError`` naming the
        slices, ``"zero"`` returns all-zero weights for them.

    Returns
    -------
    numpy.ndarray, shape of ``x`` broadcast with ``mask``
        Non-negative weights; every slice along ``axis`` that has at least one
        allowed entry sums to one.

    Notes
    -----
    .. math::

        \operatorname{softmax}(x)_i = \frac{e^{x_i - m}}{\sum_j e^{x_j - m}},
        \qquad m = \max_j x_j .

    Subtracting the maximum :math:`m` changes nothing mathematically (it
    cancels between numerator and denominator) but keeps every exponent
    :math:`\le 0`, so ``exp`` cannot overflow; the largest term is exactly 1,
    so the denominator cannot underflow to 0.

    Examples
    --------
    >>> softmax([1.0, 2.0, 3.0]).round(4)
    array([0.09  , 0.2447, 0.6652])
    >>> softmax([1e4, 0.0])          # no overflow
    array([1., 0.])
    >>> softmax([1.0, 2.0, 3.0], mask=[True, True, False]).round(4)
    array([0.2689, 0.7311, 0.    ])
    """
    _check_policy(fully_masked)
    a = as_real_array(x, "x", min_ndim=1)
    a = a.astype(common_float_dtype(a), copy=False)
    ax = _normalise_axis(axis, a.ndim)

    if mask is not None:
        m = as_bool_mask(mask)
        try:
            shape = np.broadcast_shapes(a.shape, m.shape)
        except ValueError:
            raise ValueError(
                f"mask ({describe(m)}) does not broadcast to x ({describe(a)})"
            ) from None
        # `axis` refers to x; a mask with more dimensions adds leading axes in front of it.
        ax += len(shape) - a.ndim
        # Masked entries become -inf, so exp() gives them exactly 0.
        a = np.where(m, a, -np.inf).astype(a.dtype, copy=False)

    row_max = np.max(a, axis=ax, keepdims=True)
    empty = np.isneginf(row_max)  # every entry of this slice is masked
    if empty.any() and fully_masked == "raise":
        where = [tuple(int(i) for i in idx) for idx in np.argwhere(np.squeeze(empty, axis=ax))]
        shown = ", ".join(map(str, where[:10])) + (" ..." if len(where) > 10 else "")
        raise ValueError(
            f"mask leaves {len(where)} slice(s) along axis {ax} with nothing to attend to, "
            f"at index {shown}; their softmax is undefined. Pass fully_masked='zero' to give "
            "them zero weights, or fix the mask"
        )
    shifted = a - np.where(empty, 0, row_max).astype(a.dtype, copy=False)
    e = np.exp(shifted)
    total = np.sum(e, axis=ax, keepdims=True)
    return e / np.where(empty, 1, total).astype(a.dtype, copy=False)
