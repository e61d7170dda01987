"""Scaled dot-product attention, the causal mask and the Q, K, V projections.

Dimension letters used in the shape comments:

- ``...``  leading batch / head axes (broadcast between the arguments)
- ``n_q``  number of queries, ``n_k`` number of keys (= number of values)
- ``d_k``  size of a query or key vector, ``d_v`` size of a value vector
"""

from __future__ import annotations

import functools
import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_bool_mask, as_real_array, common_float_dtype, describe
from .softmax import _check_policy, softmax_inplace

__all__ = [
    "causal_mask",
    "project_qkv",
    "scaled_dot_product_attention",
    "check_attention_inputs",
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
    for name, value in (("n_q", n_q), ("n_k", n_k)):
        if value is None and name == "n_k":
            continue
        if not isinstance(value, int | np.integer) or isinstance(value, bool):
            raise TypeError(f"{name}={value!r}; expected a positive integer")
        if value < 1:
            raise ValueError(f"{name}={value}; expected a positive integer")
    n_k = n_q if n_k is None else n_k
    if n_q > n_k:
        raise ValueError(
            f"causal mask with n_q={n_q} queries and n_k={n_k} keys: the queries are the last "
            f"n_q positions, so the first {n_q - n_k} queries would have no key to attend to; "
            "expected n_q <= n_k"
        )
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


def check_attention_inputs(
    q: ArrayLike, k: ArrayLike, v: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]:
    """Validate q, k, v and cast them to one floating dtype.

    Returns the three arrays and their broadcast leading (batch, head) shape.
    Raises ``TypeError`` or ``ValueError`` naming the argument at fault.

    Examples
    --------
    >>> q, k, v, batch = check_attention_inputs(
    ...     np.ones((2, 3, 4)), np.ones((5, 4)), np.ones((5, 6)))
    >>> batch
    (2,)
    """
    q = as_real_array(q, "q", min_ndim=2)
    k = as_real_array(k, "k", min_ndim=2)
    v = as_real_array(v, "v", min_ndim=2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q has d_k={q.shape[-1]} ({describe(q)}) but k has d_k={k.shape[-1]} "
            f"({describe(k)}); expected the same last axis, since scores are q . k"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k has n_k={k.shape[-2]} positions ({describe(k)}) but v has {v.shape[-2]} "
            f"({describe(v)}); expected one value per key (k.shape[-2] == v.shape[-2])"
        )
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading (batch, head) axes do not broadcast: q {q.shape[:-2]}, "
            f"k {k.shape[:-2]}, v {v.shape[:-2]}; expected shapes that numpy can broadcast"
        ) from None
    dtype = common_float_dtype(q, k, v)
    return (q.astype(dtype, copy=False), k.astype(dtype, copy=False),
            v.astype(dtype, copy=False), batch)


def _combined_mask(
    mask: ArrayLike | None, causal: bool, batch: tuple[int, ...], n_q: int, n_k: int
) -> np.ndarray | None:
    """The boolean mask (True = may attend) from ``mask`` and ``causal``, or None."""
    if not isinstance(causal, bool | np.bool_):
        raise TypeError(f"causal={causal!r}; expected True or False")
    allowed = None
    if mask is not None:
        allowed = as_bool_mask(mask)
        target = (*batch, n_q, n_k)
        try:
            shape = np.broadcast_shapes(target, allowed.shape)
        except ValueError:
            raise ValueError(
                f"mask has {describe(allowed)}; expected a shape broadcastable to the scores "
                f"(..., n_q, n_k) = {target}"
            ) from None
        if shape[-2:] != (n_q, n_k):  # pragma: no cover - broadcasting guarantees this
            raise ValueError(f"mask has {describe(allowed)}; expected (..., {n_q}, {n_k})")
    if causal:
        tri = causal_mask(n_q, n_k)  # (n_q, n_k)
        allowed = tri if allowed is None else (allowed & tri)
    return allowed


def _scores_may_overflow(q_scaled: np.ndarray, k: np.ndarray, dtype: np.dtype) -> bool:
    """False when no score ``q_scaled . k`` can overflow ``dtype`` (so no check is needed).

    Each score is a sum of ``d_k`` products, so ``|score| <= d_k * max|q| * max|k|``;
    when that bound is far below the largest float (a factor 4 covers rounding),
    every score is finite and the pass over the ``n_q x n_k`` scores is skipped.
    """
    bound = q_scaled.shape[-1] * float(np.abs(q_scaled).max()) * float(np.abs(k).max())
    return bound >= 0.25 * float(np.finfo(dtype).max)


def _check_scores_finite(scores: np.ndarray, q_scaled: np.ndarray, k: np.ndarray) -> None:
    """Raise ``ValueError`` if a score overflowed to inf (or to NaN via inf - inf)."""
    if not np.isfinite(scores).all():
        raise ValueError(
            f"the scores q . k / sqrt(d_k) overflow {scores.dtype} (q up to "
            f"{np.abs(q_scaled).max() * math.sqrt(q_scaled.shape[-1]):.3g}, k up to "
            f"{np.abs(k).max():.3g}); expected inputs whose dot products fit the dtype "
            "(rescale them, or use float64)"
        )


# Query rows per block of the causal softmax (it skips the future block by block).
_CAUSAL_BLOCK_ROWS = 128


@functools.cache
def _strict_upper(rows: int) -> np.ndarray:
    """Boolean (rows, rows), True above the diagonal: the future keys of a diagonal block."""
    upper = ~np.tri(rows, rows, dtype=bool)
    upper.flags.writeable = False
    return upper


def _causal_attention_by_row_blocks(
    q_scaled: np.ndarray, k: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Causal attention ``(output, weights)`` that never computes a future score.

    The same formula as the plain path, organised by blocks of query rows:
    rows ``r0:r1`` see at most the keys before position ``r1 + n_k - n_q``, so
    their scores, softmax and weighted sum of values are computed on that
    prefix only; the later weights are set to 0 directly and only the triangle
    on the diagonal goes through a boolean mask. This skips almost half of
    the work. With a single block (``n_q <= _CAUSAL_BLOCK_ROWS``) every step
    is the plain path's, bit for bit; with more blocks the products over a
    shorter prefix may round the last bit differently.
    """
    n_q, n_k = q_scaled.shape[-2], k.shape[-2]
    offset = n_k - n_q  # query i sits at position i + offset
    score_batch = np.broadcast_shapes(q_scaled.shape[:-2], k.shape[:-2])
    out_batch = np.broadcast_shapes(score_batch, v.shape[:-2])
    dtype = q_scaled.dtype
    weights = np.empty((*score_batch, n_q, n_k), dtype=dtype)  # (..., n_q, n_k)
    output = np.empty((*out_batch, n_q, v.shape[-1]), dtype=dtype)  # (..., n_q, d_v)
    k_t = np.swapaxes(k, -1, -2)  # (..., d_k, n_k)
    may_overflow = _scores_may_overflow(q_scaled, k, dtype)
    for r0 in range(0, n_q, _CAUSAL_BLOCK_ROWS):
        r1 = min(r0 + _CAUSAL_BLOCK_ROWS, n_q)
        stop = r1 + offset  # these rows see keys [0, stop) at most
        rows = weights[..., r0:r1, :]  # (..., rows, n_k), a view
        s = rows[..., :stop]  # (..., rows, stop), the part that can be visible
        with np.errstate(over="ignore", invalid="ignore"):
            np.matmul(q_scaled[..., r0:r1, :], k_t[..., :stop], out=s)  # (..., rows, stop)
        if may_overflow:
            _check_scores_finite(s, q_scaled, k)
        rows[..., stop:] = 0  # keys in the future of every row of the block
        # The (rows, rows) triangle on the diagonal: row r0 + i sees keys up to r0 + i + offset.
        np.copyto(s[..., r0 + offset:], -np.inf, where=_strict_upper(r1 - r0))
        s -= s.max(axis=-1, keepdims=True)  # every row sees its own key: a finite max
        np.exp(s, out=s)
        s /= rows.sum(axis=-1, keepdims=True)  # the sum over the whole row, zeros included
        np.matmul(s, v[..., :stop, :], out=output[..., r0:r1, :])  # (..., rows, d_v)
    return output, weights


def scaled_dot_product_attention(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    mask: ArrayLike | None = None,
    *,
    causal: bool = False,
    fully_masked: Literal["raise", "zero"] = "raise",
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

    With ``causal=True`` and no ``mask``, the rows are processed in blocks of
    128 queries and the scores of future keys are never computed (their
    weights are set to 0 directly), which saves almost half of the work.

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
    _check_policy(fully_masked)
    q, k, v, batch = check_attention_inputs(q, k, v)
    n_q, d_k = q.shape[-2:]
    n_k = k.shape[-2]
    allowed = _combined_mask(mask, causal, batch, n_q, n_k)

    if allowed is not None and fully_masked == "raise":
        empty = ~allowed.any(axis=-1)  # (..., n_q)
        if empty.any():
            rows = [tuple(int(i) for i in idx) for idx in np.argwhere(empty)]
            shown = ", ".join(map(str, rows[:10])) + (" ..." if len(rows) > 10 else "")
            raise ValueError(
                f"mask leaves {len(rows)} query row(s) with no key to attend to, at "
                f"(..., query) index {shown}; their softmax is undefined. Pass "
                "fully_masked='zero' to give them zero weights and a zero output"
            )

    # A Python float keeps float32 float32 (a numpy float64 scalar would promote).
    scale = 1.0 / math.sqrt(d_k)
    q_scaled = q * scale  # (..., n_q, d_k)
    if causal and mask is None:
        # The same formula without computing any score of a future key.
        output, weights = _causal_attention_by_row_blocks(q_scaled, k, v)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            scores = q_scaled @ np.swapaxes(k, -1, -2)  # (..., n_q, d_k) @ (..., d_k, n_k)
        if _scores_may_overflow(q_scaled, k, scores.dtype):
            _check_scores_finite(scores, q_scaled, k)
        weights, _ = softmax_inplace(scores, -1, allowed)  # (..., n_q, n_k), in place
        output = weights @ v  # (..., n_q, n_k) @ (..., n_k, d_v) -> (..., n_q, d_v)
    # Batch axes that only v (or the mask) has: give the weights the output's batch shape.
    full = output.shape[:-2] + weights.shape[-2:]
    if weights.shape != full:
        weights = np.broadcast_to(weights, full).copy()  # (..., n_q, n_k)
    return output, weights
