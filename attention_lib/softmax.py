"""Numerically stable softmax with an optional boolean mask."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ._validation import (
    as_bool_mask,
    as_real_array,
    broadcast_shape,
    check_fully_masked,
    common_float_dtype,
    compute_dtype,
    describe,
    normalise_axis,
    raise_if_fully_masked,
)

__all__ = ["softmax"]


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
    check_fully_masked(fully_masked)
    a = as_real_array(x, "x", min_ndim=1)
    ax = normalise_axis(axis, a.ndim)
    allowed = None
    if mask is not None:
        allowed = as_bool_mask(mask)
        shape = broadcast_shape(a.shape, allowed.shape)
        if shape is None:
            raise ValueError(f"mask ({describe(allowed)}) does not broadcast to x ({describe(a)})")
        # `axis` refers to x; a mask with more dimensions adds leading axes in front of it.
        ax += len(shape) - a.ndim
    weights, empty = stable_softmax(a, ax, allowed)
    if fully_masked == "raise":
        raise_if_fully_masked(np.squeeze(empty, axis=ax), f"slice(s) along axis {ax} with nothing",
                              also=", or fix the mask")
    return weights


def stable_softmax(
    x: np.ndarray, axis: int, allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The softmax of the finite real array ``x`` along ``axis``, and its fully masked slices.

    The one implementation behind :func:`softmax` and
    :func:`attention_lib.scaled_dot_product_attention`; it does no input checks
    and does not modify ``x``. Entries where ``allowed`` is False get weight 0;
    slices with no allowed entry get all-zero weights and are flagged in
    ``empty`` (``axis`` kept with size 1). float16 is computed in float32 and
    returned as float16; integers are computed in float64.

    The result does not depend on the caller's ``np.errstate``: the only
    floating-point events here are harmless (``exp`` of a very negative number
    underflowing to 0, and ``x - max`` overflowing to ``-inf``, whose ``exp``
    is 0 too).

    Examples
    --------
    >>> w, empty = stable_softmax(np.array([[1.0, 1.0], [2.0, 0.0]]), axis=-1,
    ...                           allowed=np.array([[False, False], [True, True]]))
    >>> w.round(4), empty.ravel()
    (array([[0.    , 0.    ],
           [0.8808, 0.1192]]), array([ True, False]))
    """
    out_dtype = common_float_dtype(x)
    x = x.astype(compute_dtype(out_dtype), copy=False)
    if allowed is not None:
        x = np.where(allowed, x, -np.inf)  # a masked entry has exp(-inf) = 0
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        x_max = x.max(axis=axis, keepdims=True)
        empty = np.isneginf(x_max)  # every entry of this slice is masked
        x_max[empty] = 0
        shifted = x - x_max  # every exponent <= 0: exp cannot overflow
        weights = np.exp(shifted, out=shifted)
        total = weights.sum(axis=axis, keepdims=True)  # >= 1 unless the slice is empty
        total[empty] = 1
        weights /= total
    return weights.astype(out_dtype, copy=False), empty
