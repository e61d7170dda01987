"""Numerically stable softmax with an optional boolean mask."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_bool_mask, as_real_array, common_float_dtype, describe

__all__ = ["softmax", "softmax_inplace", "FULLY_MASKED_POLICIES"]

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
    ax = _normalise_axis(axis, a.ndim)
    allowed = None
    if mask is not None:
        allowed = as_bool_mask(mask)
        try:
            shape = np.broadcast_shapes(a.shape, allowed.shape)
        except ValueError:
            raise ValueError(
                f"mask ({describe(allowed)}) does not broadcast to x ({describe(a)})"
            ) from None
        # `axis` refers to x; a mask with more dimensions adds leading axes in front of it.
        ax += len(shape) - a.ndim
    # A copy in the computing dtype: the softmax below overwrites it.
    weights, empty = softmax_inplace(a.astype(common_float_dtype(a), copy=True), ax, allowed)
    if fully_masked == "raise" and empty.any():
        where = [tuple(int(i) for i in idx) for idx in np.argwhere(np.squeeze(empty, axis=ax))]
        shown = ", ".join(map(str, where[:10])) + (" ..." if len(where) > 10 else "")
        raise ValueError(
            f"mask leaves {len(where)} slice(s) along axis {ax} with nothing to attend to, "
            f"at index {shown}; their softmax is undefined. Pass fully_masked='zero' to give "
            "them zero weights, or fix the mask"
        )
    return weights


def softmax_inplace(
    a: np.ndarray, axis: int, allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The stable softmax along ``axis``, computed in the floating array ``a`` itself.

    The one implementation behind :func:`softmax` and
    :func:`attention_lib.scaled_dot_product_attention`; it does no input checks.
    ``a`` must be a finite floating array that the caller owns (it is
    overwritten, unless ``allowed`` adds leading axes, in which case a
    broadcast copy is used). Entries where ``allowed`` is False get weight 0;
    slices with no allowed entry get all-zero weights.

    Returns
    -------
    weights : numpy.ndarray
        ``a`` (or its broadcast copy), now holding the weights.
    empty : numpy.ndarray of bool
        True for the slices with no allowed entry (``axis`` kept with size 1).

    Examples
    --------
    >>> w, empty = softmax_inplace(np.array([[1.0, 1.0], [2.0, 0.0]]), axis=-1,
    ...                            allowed=np.array([[False, False], [True, True]]))
    >>> w.round(4), empty.ravel()
    (array([[0.    , 0.    ],
           [0.8808, 0.1192]]), array([ True, False]))
    """
    if allowed is not None:
        shape = np.broadcast_shapes(a.shape, allowed.shape)
        if shape != a.shape:  # the mask adds leading axes
            a = np.broadcast_to(a, shape).copy()
        np.copyto(a, -np.inf, where=~allowed)  # exp(-inf) = 0
    row_max = a.max(axis=axis, keepdims=True)
    empty = np.isneginf(row_max)  # every entry of this slice is masked
    any_empty = bool(empty.any())
    if any_empty:
        row_max[empty] = 0
    a -= row_max  # every exponent <= 0: exp cannot overflow
    np.exp(a, out=a)
    total = a.sum(axis=axis, keepdims=True)  # >= 1 where a slice has an allowed entry
    if any_empty:
        total[empty] = 1
    a /= total
    return a, empty
