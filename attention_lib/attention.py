"""Scaled dot-product attention, the causal mask and the Q, K, V projections.

Dimension letters used in the shape comments:

- ``...``  leading batch / head axes (broadcast between the arguments)
- ``n_q``  number of queries, ``n_k`` number of keys (= number of values)
- ``d_k``  size of a query or key vector, ``d_v`` size of a value vector
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ._validation import (
    as_bool_mask,
    as_real_array,
    attention_operands,
    broadcast_shape,
    check_causal_sizes,
    check_flag,
    check_fully_masked,
    common_float_dtype,
    describe,
    first_true,
    positive_int,
    raise_if_fully_masked,
)
from .softmax import stable_softmax

__all__ = [
    "causal_mask",
    "project_qkv",
    "scaled_dot_product_attention",
    "scaled_scores",
]


def causal_mask(n_q: int, n_k: int | None = None) -> np.ndarray:
    r"""Boolean causal mask: True where query ``i`` may attend to key ``j``.

    Parameters
    ----------
    n_q : int
        Number of queries (rows), at least 1.
    n_k : int, optional
        Number of keys (columns), at least ``n_q``; defaults to ``n_q``.

    Returns
    -------
    numpy.ndarray of bool, shape (n_q, n_k)

    Notes
    -----
    The queries are the *last* ``n_q`` of the ``n_k`` positions, so query
    ``i`` sits at position :math:`i + n_k - n_q` and sees the keys up to it:

    .. math:: M_{ij} = [\, j \le i + n_k - n_q \,].

    With ``n_q == n_k`` this is the lower triangle, diagonal included. With
    ``n_q < n_k`` it is the rule a KV cache needs: the newest queries see the
    whole cached prefix. ``n_q > n_k`` would leave the first queries with no
    key at all, so it raises.

    Examples
    --------
    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    >>> causal_mask(2, 4).astype(int)
    array([[1, 1, 1, 0],
           [1, 1, 1, 1]])
    """
    n_q = positive_int(n_q, "n_q")
    n_k = n_q if n_k is None else positive_int(n_k, "n_k")
    check_causal_sizes(n_q, n_k)
    return _causal_rule(n_q, n_k)


def _causal_rule(n_q: int, n_k: int) -> np.ndarray:
    """The causal mask without checks; with ``n_q > n_k`` the first queries see no key."""
    # Query i is at position i + (n_k - n_q); it sees keys j <= that position.
    return np.tri(n_q, n_k, k=n_k - n_q, dtype=bool)


def project_qkv(
    x: ArrayLike, w_q: ArrayLike, w_k: ArrayLike, w_v: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Project token representations to queries, keys and values.

    Parameters
    ----------
    x : array_like, shape (..., n, d_model)
        One row per token.
    w_q, w_k : array_like, shape (d_model, d_k)
    w_v : array_like, shape (d_model, d_v)
        The projections, one column per feature of a query, key or value.

    Returns
    -------
    q, k : numpy.ndarray, shape (..., n, d_k)
    v : numpy.ndarray, shape (..., n, d_v)

    Notes
    -----
    .. math:: Q = X W_Q, \qquad K = X W_K, \qquad V = X W_V .

    ``W_Q`` and ``W_K`` must have the same number of columns, because every
    query is compared with every key by an inner product.

    Examples
    --------
    >>> x = np.ones((4, 2))
    >>> q, k, v = project_qkv(x, np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 5)))
    >>> q.shape, k.shape, v.shape
    ((4, 3), (4, 3), (4, 5))
    """
    x = as_real_array(x, "x", min_ndim=2)
    ws = {name: as_real_array(w, name, min_ndim=2) for name, w in
          (("w_q", w_q), ("w_k", w_k), ("w_v", w_v))}
    d_model = x.shape[-1]
    for name, w in ws.items():
        if w.ndim != 2:
            raise ValueError(f"{name} has {describe(w)}; expected a 2-D (d_model, d) matrix")
        if w.shape[0] != d_model:
            raise ValueError(
                f"{name} has {w.shape[0]} rows ({describe(w)}) but x has d_model={d_model} "
                f"columns ({describe(x)}); expected {name}.shape[0] == {d_model}"
            )
    if ws["w_q"].shape[1] != ws["w_k"].shape[1]:
        raise ValueError(
            f"w_q has d_k={ws['w_q'].shape[1]} columns but w_k has {ws['w_k'].shape[1]}; "
            "queries and keys must have the same size for their dot product"
        )
    dtype = common_float_dtype(x, *ws.values())
    x = x.astype(dtype, copy=False)
    q = x @ ws["w_q"].astype(dtype, copy=False)  # (..., n, d_k)
    k = x @ ws["w_k"].astype(dtype, copy=False)  # (..., n, d_k)
    v = x @ ws["w_v"].astype(dtype, copy=False)  # (..., n, d_v)
    return q, k, v


def scaled_scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    r"""The scaled scores :math:`Q K^{\mathsf T} / \sqrt{d_k}`, computed in one place.

    Parameters
    ----------
    q : numpy.ndarray, shape (..., n_q, d_k)
        Queries, already checked and of a floating dtype.
    k : numpy.ndarray, shape (..., n_k, d_k)
        Keys, same dtype.

    Returns
    -------
    numpy.ndarray, shape (..., n_q, n_k)
        Entry ``(i, j)`` is :math:`\mathbf q_i \cdot \mathbf k_j / \sqrt{d_k}`, in the
        inputs' dtype (a Python float keeps float32 float32; a numpy scalar would promote).

    Notes
    -----
    .. math:: S = \frac{Q K^{\mathsf T}}{\sqrt{d_k}} .

    The queries are scaled before the product, as PyTorch does. Overflow is not
    reported here: :func:`scaled_dot_product_attention` checks its result.

    Examples
    --------
    >>> scaled_scores(np.array([[1.0, 1.0]]), np.array([[2.0, 0.0], [1.0, 1.0]]))
    array([[1.41421356, 1.41421356]])
    """
    d_k = q.shape[-1]
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is the caller's to report
        return (q * (1.0 / math.sqrt(d_k))) @ np.swapaxes(k, -1, -2)  # (..., n_q, n_k)


def _combined_mask(
    mask: ArrayLike | None, causal: bool, batch: tuple[int, ...], n_q: int, n_k: int
) -> np.ndarray | None:
    """The boolean mask (True = may attend) from ``mask`` and ``causal``, or None."""
    allowed = None
    if mask is not None:
        allowed = as_bool_mask(mask)
        target = (*batch, n_q, n_k)
        shape = broadcast_shape(target, allowed.shape)
        if shape is None or shape[-2:] != (n_q, n_k):
            raise ValueError(
                f"mask has {describe(allowed)}; expected a shape broadcastable to the scores "
                f"(..., n_q, n_k) = {target}"
            )
    if causal:
        tri = _causal_rule(n_q, n_k)  # (n_q, n_k)
        allowed = tri if allowed is None else (allowed & tri)
    return allowed


def _raise_if_overflowed(scores: np.ndarray, q: np.ndarray, k: np.ndarray) -> None:
    """Raise ``ValueError`` naming the first score that overflowed to inf (or NaN via inf - inf)."""
    finite = np.isfinite(scores)
    if finite.all():
        return
    count, first = first_true(~finite)
    raise ValueError(
        f"the scores q . k / sqrt(d_k) overflow {scores.dtype}: {count} score(s) are not "
        f"finite, the first at (..., query, key) index {first} (q up to "
        f"{float(np.abs(q).max()):.3g}, k up to {float(np.abs(k).max()):.3g}); expected "
        "inputs whose dot products fit the dtype (rescale them, or use float64)"
    )


def scaled_dot_product_attention(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, mask: ArrayLike | None = None, *,
    causal: bool = False, fully_masked: Literal["raise", "zero"] = "raise",
) -> tuple[np.ndarray, np.ndarray]:
    r"""Scaled dot-product attention, returning the output and the weights.

    Parameters
    ----------
    q : array_like, shape (..., n_q, d_k)
        Queries, one row per query position.
    k : array_like, shape (..., n_k, d_k)
        Keys, one row per key position.
    v : array_like, shape (..., n_k, d_v)
        Values, one row per key position. ``d_v`` may differ from ``d_k``.
        The leading axes of ``q``, ``k`` and ``v`` (batch, heads, ...) are
        broadcast together.
    mask : array_like of bool, optional
        Broadcastable to ``(..., n_q, n_k)``. True means "query may attend to
        this key" (the convention of PyTorch's ``scaled_dot_product_attention``).
    causal : bool, default False
        Query ``i`` may attend only to keys ``j <= i``. When ``n_q < n_k``
        the queries are the last ``n_q`` positions (see :func:`causal_mask`).
        Combined with ``mask`` by logical and.
    fully_masked : {"raise", "zero"}, default "raise"
        A query whose keys are all masked has no defined softmax.
        ``"raise"`` raises ``ValueError`` naming those query rows; ``"zero"``
        gives them zero weights and a zero output row.

    Returns
    -------
    output : numpy.ndarray, shape (..., n_q, d_v)
    weights : numpy.ndarray, shape (..., n_q, n_k)
        Each row is non-negative and sums to one (or is all zero under
        ``fully_masked="zero"``).

    Notes
    -----
    .. math::

        \operatorname{Attention}(Q, K, V)
        = \operatorname{softmax}\!\left(\frac{Q K^{\mathsf T}}{\sqrt{d_k}}\right) V,

    with the softmax over the keys (the last axis) and masked scores set to
    :math:`-\infty` before it. Float32 input gives float32 output, float64
    gives float64, integers are computed in float64.

    This function computes the formula as written: the whole score matrix,
    then its softmax, then the weighted sum of the values. float16 input is
    computed in float32 (as PyTorch does) and returned as float16. When the
    weights are not needed, :func:`attention_lib.tiled_attention` computes the
    same output tile by tile, faster and without the ``n_q x n_k`` matrix.

    Examples
    --------
    >>> q = np.array([[1.0, 0.0]]); k = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> v = np.array([[10.0], [20.0]])
    >>> out, w = scaled_dot_product_attention(q, k, v)
    >>> w.round(4)
    array([[0.6698, 0.3302]])
    >>> out.round(3)
    array([[13.302]])
    """
    q, k, v, allowed, out_dtype = prepare_attention(q, k, v, mask, causal, fully_masked)
    output, weights = attend(q, k, v, allowed)
    return output.astype(out_dtype, copy=False), weights.astype(out_dtype, copy=False)


def prepare_attention(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, mask: ArrayLike | None, causal: bool,
    fully_masked: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.dtype]:
    """The checks of :func:`scaled_dot_product_attention`, shared with its backward pass.

    Returns q, k, v cast to the dtype they are computed in (float16 in float32), the
    boolean mask with ``causal`` folded in (True = may attend, or None), and the dtype
    of the results. Raises what :func:`scaled_dot_product_attention` documents.
    """
    check_fully_masked(fully_masked)
    causal = check_flag(causal, "causal")
    q, k, v, batch, out_dtype = attention_operands(
        q, k, v, causal=causal and fully_masked == "raise")
    n_q, n_k = q.shape[-2], k.shape[-2]
    allowed = _combined_mask(mask, causal, batch, n_q, n_k)  # True = may attend, or None
    if allowed is not None and fully_masked == "raise":
        empty = ~allowed.any(axis=-1)  # (..., n_q), the mask's own leading axes
        lead = np.broadcast_shapes(batch, empty.shape[:-1])
        raise_if_fully_masked(np.broadcast_to(empty, (*lead, n_q)), "query row(s) with no key",
                              where="(..., query) ", also=" and a zero output")
    return q, k, v, allowed, out_dtype


def attend(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, allowed: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The formula on the arrays :func:`prepare_attention` returns: output and weights.

    Both stay in the dtype of ``q``; the weights get the output's batch shape.
    """
    # The formula: scores, softmax over the keys, weighted sum of the values.
    scores = scaled_scores(q, k)  # (..., n_q, n_k); an overflow is reported below
    _raise_if_overflowed(scores, q, k)
    weights, _ = stable_softmax(scores, -1, allowed)  # (..., n_q, n_k), over the keys
    output = weights @ v  # (..., n_q, n_k) @ (..., n_k, d_v) -> (..., n_q, d_v)

    # Batch axes that only v (or the mask) has: give the weights the output's batch shape.
    full = output.shape[:-2] + weights.shape[-2:]
    if weights.shape != full:
        weights = np.broadcast_to(weights, full).copy()  # (..., n_q, n_k)
    return output, weights
