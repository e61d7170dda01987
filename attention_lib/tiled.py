r"""Exact attention, tile by tile, with an online softmax (the FlashAttention recurrence).

Plain attention builds the whole ``n_q x n_k`` score matrix before its softmax:
at ``n = 16384`` that is 1 GiB in float32 per head. The softmax of a row can
instead be computed while its scores arrive in blocks, by keeping three running
quantities per query row (the "online softmax" of Milakov and Gimelshein, 2018,
which FlashAttention, Dao et al. 2022, runs on tiles):

- ``m``, the largest score seen so far,
- ``l``, the sum of ``exp(score - m)`` over the scores seen so far,
- ``acc``, the sum of ``exp(score - m) * value`` over the same keys.

When a new block raises the maximum from ``m`` to ``m'``, everything summed so
far was computed relative to the old maximum, so ``l`` and ``acc`` are
multiplied by ``exp(m - m')``. After the last block ``acc / l`` is exactly the
attention output: no approximation, only a different order of the same sums.
At the end ``m + log l`` is the row's log-sum-exp, all the backward pass
(:mod:`attention_lib.tiled_backward`) needs to recompute any tile's weights. Under
a sliding window the tiles outside the band are skipped like those in the future.
The tile plumbing both passes share is in :mod:`attention_lib._tiles`, the thread
pool in :mod:`attention_lib._threads`.

The dimension letters of the shape comments are those of :mod:`attention_lib.attention`,
and ``b_q``, the query rows in one tile, ``b_k``, the keys in one tile.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ._threads import run_tasks
from ._tiles import (
    band_hidden,
    entry_views,
    future,
    past,
    pool_size,
    raise_overflow,
    scores_may_overflow,
    tiled_inputs,
    visible_scores,
)
from ._tiles import key_spans as _key_spans
from ._validation import as_real_array, check_flag, common_float_dtype, describe
from .attention import causal_mask, scaled_scores
from .masks import causal_tile_kinds, sliding_window_mask

__all__ = ["OnlineSoftmaxTrace", "online_softmax_row", "tiled_attention",
           "tiled_attention_reference"]


class OnlineSoftmaxTrace(NamedTuple):
    """Result of :func:`online_softmax_row`: the output and the running state after each block."""

    output: np.ndarray
    """The attention output of the row, shape (d_v,)."""
    running_max: np.ndarray
    """``m`` after each block, shape (n_blocks,)."""
    running_sum: np.ndarray
    """``l`` after each block (relative to that block's ``m``), shape (n_blocks,)."""


def online_softmax_row(
    score_blocks: Sequence[ArrayLike], value_blocks: Sequence[ArrayLike]
) -> OnlineSoftmaxTrace:
    r"""Attention output of one query whose scores and values arrive in blocks.

    The readable version of the recurrence that :func:`tiled_attention` runs
    on whole tiles: one query row, one block at a time, keeping only the
    running maximum, the running sum and the running weighted sum of values.

    Parameters
    ----------
    score_blocks : sequence of array_like, each of shape (b_j,)
        The row's scores (already scaled by :math:`1/\sqrt{d_k}`), block by
        block. Together they are the whole row.
    value_blocks : sequence of array_like, each of shape (b_j, d_v)
        The values of the same keys, block by block.

    Returns
    -------
    OnlineSoftmaxTrace
        ``output`` (shape (d_v,)) equals ``softmax(scores) @ values`` of the
        concatenated blocks; ``running_max`` and ``running_sum`` hold ``m``
        and ``l`` after each block.

    Notes
    -----
    For block :math:`j` with scores :math:`s^{(j)}` and values :math:`V^{(j)}`:

    .. math::

        m_j = \max\bigl(m_{j-1}, \max_i s^{(j)}_i\bigr), \qquad
        \ell_j = e^{m_{j-1} - m_j}\,\ell_{j-1} + \sum_i e^{s^{(j)}_i - m_j},

        a_j = e^{m_{j-1} - m_j}\,a_{j-1} + \sum_i e^{s^{(j)}_i - m_j} V^{(j)}_i,

    starting from :math:`m_0 = -\infty`, :math:`\ell_0 = 0`, :math:`a_0 = 0`;
    the output is :math:`a_J / \ell_J`. The factor :math:`e^{m_{j-1} - m_j}
    \le 1` re-expresses the old sums relative to the new maximum, so no
    exponent is ever positive and nothing overflows.

    Examples
    --------
    >>> scores = [np.array([1.0, 3.0]), np.array([2.0]), np.array([5.0, 0.0])]
    >>> values = [np.eye(5)[:2], np.eye(5)[2:3], np.eye(5)[3:]]
    >>> trace = online_softmax_row(scores, values)
    >>> trace.running_max
    array([3., 3., 5.])
    >>> full = np.exp([1.0, 3.0, 2.0, 5.0, 0.0] - np.float64(5.0))
    >>> bool(np.allclose(trace.output, full / full.sum()))   # values = identity
    True
    """
    if len(score_blocks) == 0:
        raise ValueError("score_blocks is empty; expected at least one block of scores")
    if len(score_blocks) != len(value_blocks):
        raise ValueError(
            f"score_blocks has {len(score_blocks)} block(s) but value_blocks has "
            f"{len(value_blocks)}; expected one block of values per block of scores"
        )
    m = -math.inf
    total = 0.0
    acc: np.ndarray | None = None
    maxima, sums, dtypes = [], [], []
    for j, (s_raw, v_raw) in enumerate(zip(score_blocks, value_blocks, strict=True)):
        s = as_real_array(s_raw, f"score_blocks[{j}]")
        vb = as_real_array(v_raw, f"value_blocks[{j}]", min_ndim=2)
        dtypes += [s.dtype, vb.dtype]
        # The running state is kept in float64 (Python floats); the result has the inputs' dtype.
        s, vb = s.astype(np.float64), vb.astype(np.float64)  # (b_j,), (b_j, d_v)
        if s.ndim != 1:
            raise ValueError(f"score_blocks[{j}] has {describe(s)}; expected a 1-D block (b_j,)")
        if vb.ndim != 2 or vb.shape[0] != s.shape[0]:
            raise ValueError(
                f"value_blocks[{j}] has {describe(vb)}; expected ({s.shape[0]}, d_v), one "
                f"value row per score in score_blocks[{j}]"
            )
        if acc is not None and vb.shape[1] != acc.shape[0]:
            raise ValueError(
                f"value_blocks[{j}] has d_v={vb.shape[1]} but the earlier blocks have "
                f"d_v={acc.shape[0]}"
            )
        m_new = max(m, float(s.max()))
        rescale = math.exp(m - m_new)  # exp(-inf) = 0 for the first block
        p = np.exp(s - m_new)  # (b_j,), every exponent <= 0
        total = rescale * total + float(p.sum())
        acc = p @ vb if acc is None else rescale * acc + p @ vb  # (d_v,)
        m = m_new
        maxima.append(m)
        sums.append(total)
    dtype = common_float_dtype(*(np.empty(0, d) for d in dtypes))
    return OnlineSoftmaxTrace((acc / total).astype(dtype), np.array(maxima, dtype=dtype),
                              np.array(sums, dtype=dtype))


# --------------------------------------------------------------------------------------
# The readable version: a plain loop over query and key tiles
# --------------------------------------------------------------------------------------


def tiled_attention_reference(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, *, causal: bool = False,
    block_size: int | tuple[int, int] = (256, 512), window: int | None = None,
) -> np.ndarray:
    r"""Tiled attention as a plain loop over tiles: the readable version of :func:`tiled_attention`.

    The recurrence of :func:`online_softmax_row`, run on tiles: each block of
    :math:`b_q` queries visits the key blocks left to right, keeping a running
    maximum :math:`m`, sum :math:`\ell` and weighted sum of values :math:`U` per
    row. Under ``causal`` the tiles that :func:`~attention_lib.causal_tile_kinds`
    calls ``"skipped"`` are never computed, and on ``"diagonal"`` tiles the future
    keys (and, with a ``window``, the keys too old) get :math:`-\infty`. One thread and
    no tricks: it is here to be read, and to test the fast engine against.

    Parameters
    ----------
    q, k, v : array_like, shapes (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)
        Queries, keys and values, with the checks and dtypes of :func:`tiled_attention`.
    causal : bool, default False
    block_size : int or (int, int), default (256, 512)
    window : int, optional
        As in :func:`tiled_attention`: the causal rule, the tile ``(b_q, b_k)``, a sliding
        window of keys.

    Returns
    -------
    numpy.ndarray, shape (..., n_q, d_v)
        Equal to ``scaled_dot_product_attention(q, k, v, causal=causal)[0]`` up to rounding
        (with a window, to attention with ``mask=sliding_window_mask(n_q, n_k, window)``).

    Notes
    -----
    For query block :math:`I` and key block :math:`J`, with the tile of scores
    :math:`S = Q_I K_J^{\mathsf T} / \sqrt{d_k}`:

    .. math::

        m' = \max\bigl(m, \operatorname{rowmax} S\bigr), \quad P = e^{S - m'}, \quad
        \ell \leftarrow e^{m - m'} \ell + \operatorname{rowsum} P, \quad
        U \leftarrow e^{m - m'} U + P V_J, \quad m \leftarrow m',

    from :math:`m = -\infty`, :math:`\ell = 0`, :math:`U = 0`; the output rows are
    :math:`U / \ell`. A row that has seen no key yet (its keys hidden by a window's
    lower edge) keeps :math:`m = -\infty`; its exponentials are taken relative to 0
    instead, which gives 0 for every hidden key.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(3, 10, 4))
    >>> out = tiled_attention_reference(q, k, v, causal=True, block_size=(4, 3))
    >>> from attention_lib import scaled_dot_product_attention
    >>> bool(np.allclose(out, scaled_dot_product_attention(q, k, v, causal=True)[0]))
    True
    """
    q, k, v, batch, causal, window, _, (b_q, b_k), out_dtype = tiled_inputs(
        q, k, v, causal, block_size, window)
    n_q, n_k, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
    if causal:
        kinds = causal_tile_kinds(n_q, n_k, block_q=b_q, block_k=b_k,
                                  window=window)  # (T_q, T_k)
        visible = (causal_mask(n_q, n_k) if window is None
                   else sliding_window_mask(n_q, n_k, window))  # (n_q, n_k), True = may attend
    out = np.empty((*batch, n_q, d_v), dtype=q.dtype)  # (..., n_q, d_v)
    for a, i0 in enumerate(range(0, n_q, b_q)):
        rows = slice(i0, min(i0 + b_q, n_q))
        m = np.full((*batch, rows.stop - i0), -np.inf, dtype=q.dtype)  # (..., b_q)
        total = np.zeros_like(m)  # (..., b_q), the running sum l
        acc = np.zeros((*m.shape, d_v), dtype=q.dtype)  # (..., b_q, d_v), the running U
        for b, j0 in enumerate(range(0, n_k, b_k)):
            keys = slice(j0, min(j0 + b_k, n_k))
            kind = kinds[a, b] if causal else "full"
            if kind == "skipped":
                continue
            s = scaled_scores(q[..., rows, :], k[..., keys, :])  # (..., b_q, b_k)
            if not np.isfinite(s).all():
                raise ValueError(f"the scores q . k / sqrt(d_k) overflow {s.dtype} in the tile "
                                 f"of queries {i0}.. and keys {j0}..; expected inputs whose "
                                 "dot products fit the dtype (rescale them, or use float64)")
            if kind == "diagonal":
                s = np.where(visible[rows, keys], s, -np.inf)  # the hidden keys
            with np.errstate(under="ignore"):  # exp of a very negative score is 0
                m_new = np.maximum(m, s.max(axis=-1))  # (..., b_q)
                shift = np.where(m_new == -np.inf, 0, m_new)  # no key seen yet: 0
                p = np.exp(s - shift[..., None])  # (..., b_q, b_k), each in [0, 1]
                rescale = np.exp(m - shift)  # (..., b_q), 0 at the first tile
                total = rescale * total + p.sum(axis=-1)
                acc = rescale[..., None] * acc + p @ v[..., keys, :]  # (..., b_q, d_v)
            m = m_new
        out[..., rows, :] = acc / total[..., None]
    return out.astype(out_dtype, copy=False)


# --------------------------------------------------------------------------------------
# One tile row: the fast path of attention
# --------------------------------------------------------------------------------------


class _Heads(NamedTuple):
    """A few (batch, head) entries, prepared once for all their query tiles.

    The entries of a group go through every step together: one call on a stack
    of ``g`` tiles instead of ``g`` calls, so the thread pool's workers spend
    less time in Python (where only one of them can run at a time).

    ``k_aug`` carries an extra column of ones: a query row ``[q_i, -m_i]``
    times ``k_aug`` gives ``q_i . k_j - m_i`` in the product itself, which
    saves a pass over every score tile. ``v_aug`` carries one too: ``P`` times
    ``v_aug`` gives ``P V`` and, in its last column, the row sums of ``P`` in
    the same product.
    """

    indices: tuple[tuple[int, ...], ...]  # the g (batch, head) entries
    q: tuple[np.ndarray, ...]  # g views of the input, (n_q, d_k) each
    scale: float  # 1 / sqrt(d_k)
    q_norm: np.ndarray  # (g, n_q), |q_i| / sqrt(d_k)
    m0: np.ndarray  # (g, n_q), the score of one key each query sees: a start for m
    k_aug: np.ndarray  # (g, n_k, d_k + 1), [k | 1]
    k_norm_max: np.ndarray  # (g, n_blocks), the largest |k_j| in each key block
    v_aug: np.ndarray  # (g, n_k, d_v + 1), [v | 1]


def _prepare_heads(indices: tuple[tuple[int, ...], ...], q_all: np.ndarray, k_all: np.ndarray,
                   v_all: np.ndarray, causal: bool, block_k: int) -> _Heads:
    qs = tuple(q_all[index] for index in indices)
    n_q, d_k = qs[0].shape
    n_k, d_v = v_all.shape[-2:]
    g = len(indices)
    scale = 1.0 / math.sqrt(d_k)  # a Python float keeps float32 float32
    k_aug = np.empty((g, n_k, d_k + 1), dtype=q_all.dtype)  # (g, n_k, d_k + 1)
    v_aug = np.empty((g, n_k, d_v + 1), dtype=q_all.dtype)  # (g, n_k, d_v + 1)
    for j, index in enumerate(indices):
        k_aug[j, :, :d_k] = k_all[index]
        v_aug[j, :, :d_v] = v_all[index]
    k_aug[:, :, d_k] = 1
    v_aug[:, :, d_v] = 1
    k = k_aug[:, :, :d_k]  # (g, n_k, d_k), a view
    k_norm = np.sqrt(np.einsum("gjd,gjd->gj", k, k))  # (g, n_k)
    q_norm = np.stack([np.sqrt(np.einsum("id,id->i", q, q)) for q in qs]) * scale  # (g, n_q)
    # The score of a key every query sees: its own position under the causal rule
    # (query i is at position i + n_k - n_q), else key 0.
    if causal:
        m0 = np.stack([np.einsum("id,id->i", q, k[j, n_k - n_q:]) for j, q in enumerate(qs)])
    else:
        m0 = np.stack([q @ k[j, 0] for j, q in enumerate(qs)])
    return _Heads(
        indices=indices,
        q=qs,
        scale=scale,
        q_norm=q_norm,
        m0=m0 * scale,  # (g, n_q)
        k_aug=k_aug,
        k_norm_max=np.maximum.reduceat(k_norm, np.arange(0, n_k, block_k), axis=1),
        v_aug=v_aug,
    )


# Scores may exceed the reference m of their row by up to this many nats before
# m is raised (a pass over the tile): exp of at most 16 is at most 8.9e6, far from
# overflowing even float16's float32 accumulator, and no precision is lost.
_RESCALE_THRESHOLD = 16.0

# At most this many (batch, head) entries go through a query tile together.
_MAX_HEADS_PER_TASK = 4


def _attend_query_block(
    heads: _Heads,
    out: np.ndarray,
    i0: int,
    i1: int,
    causal: bool,
    block_k: int,
    check_overflow: bool,
    lse: np.ndarray | None = None,
    window: int | None = None,
) -> None:
    """Write rows ``i0:i1`` of the outputs of ``heads`` into ``out`` (..., n_q, d_v).

    Only ``g x (i1 - i0) x block_k`` scores exist at any time, ``g`` the number
    of entries in ``heads``. With ``lse`` (..., n_q), the rows' log-sum-exp of the
    scores goes there too; ``window`` is a sliding window (under ``causal``).
    """
    g = len(heads.indices)
    n_q, d_k = heads.q[0].shape
    n_k, d_v1 = heads.v_aug.shape[1:]  # d_v + 1
    dtype = heads.v_aug.dtype
    rows = i1 - i0
    spans = _key_spans(rows, n_q, n_k, i0, causal, block_k, window)
    first_key, last_key = spans[0][1], spans[-1][2]  # the keys visited: first_key:last_key
    diagonal = i0 + n_k - n_q  # the position of query i0 (under the causal rule)

    # The reference m of each row: a score the row really has, so that the sum l
    # (the last column of acc) holds a term exp(0) = 1 and cannot underflow.
    m = heads.m0[:, i0:i1].copy()  # (g, b_q)
    q_aug = np.empty((g, rows, d_k + 1), dtype=dtype)  # (g, b_q, d_k + 1), [q | -m]
    for j, q in enumerate(heads.q):
        np.multiply(q[i0:i1], heads.scale, out=q_aug[j, :, :d_k])
    q_aug[:, :, d_k] = -m
    q_norm = heads.q_norm[:, i0:i1]  # (g, b_q)
    # Cauchy-Schwarz: q_i . k_j <= |q_i| max|k_j|. When that bound exceeds m by
    # at most the threshold for every key the tile visits, no score can, and the
    # loop below needs no maximum at all (the usual case).
    k_blocks = slice(first_key // block_k, (last_key - 1) // block_k + 1)
    k_bound = heads.k_norm_max[:, k_blocks].max(axis=1)  # (g,)
    checked = bool((q_norm * k_bound[:, None] - m > _RESCALE_THRESHOLD).any())
    width = max(stop - start for _, start, stop, _ in spans)
    scratch = np.empty(g * rows * width, dtype=dtype)  # one (g, b_q, b_k) stack of tiles
    acc = np.empty((g, rows, d_v1), dtype=dtype)  # (g, b_q, d_v + 1): [P V | rowsum P]
    update = np.empty_like(acc)  # (g, b_q, d_v + 1)
    k_t = heads.k_aug.transpose(0, 2, 1)  # (g, d_k + 1, n_k), a view
    for number, (first, start, stop, masked) in enumerate(spans):
        s = scratch[: g * (rows - first) * (stop - start)].reshape(g, rows - first, stop - start)
        np.matmul(q_aug[:, first:], k_t[:, :, start:stop], out=s)  # S - m, (g, b, b_k)
        if check_overflow and not np.isfinite(s).all():
            raise_overflow(s, heads.indices, i0 + first, start)
        # The keys a window hides from each row of a masked span (future or too old).
        hidden = None if not masked or window is None else band_hidden(
            rows - first, stop - start, start - (diagonal + first), window)
        if checked:
            if masked:
                np.copyto(s, -np.inf,
                          where=future(rows - first, stop - start) if hidden is None else hidden)
            _raise_reference(heads, s, first, start, stop, block_k, q_norm, m, q_aug, acc,
                             number)
            np.exp(s, out=s)  # P = exp(S - m)
        else:
            np.exp(s, out=s)  # P = exp(S - m), every exponent <= the threshold
            if hidden is not None:  # keys out of the window: exp(score) -> 0
                np.copyto(s, 0, where=hidden)
            elif masked:  # future keys: exp(score) * 0, finite times zero
                np.multiply(s, past(rows - first, stop - start, s.dtype), out=s)
        if number == 0:  # first == 0: every row, nothing accumulated yet
            np.matmul(s, heads.v_aug[:, start:stop], out=acc)  # (g, b_q, d_v + 1)
        else:
            np.matmul(s, heads.v_aug[:, start:stop], out=update[:, first:])
            np.add(acc[:, first:], update[:, first:], out=acc[:, first:])
    for j, index in enumerate(heads.indices):
        np.divide(acc[j, :, :-1], acc[j, :, -1:], out=out[index][i0:i1])
        if lse is not None:  # log sum exp(S) = m + log l
            lse[index][i0:i1] = m[j] + np.log(acc[j, :, -1])


def _raise_reference(heads: _Heads, s: np.ndarray, first: int, start: int, stop: int,
                     block_k: int, q_norm: np.ndarray, m: np.ndarray, q_aug: np.ndarray,
                     acc: np.ndarray, number: int) -> None:
    """Raise ``m`` of rows ``first:`` where the tiles ``s = S - m`` may exceed the threshold.

    ``s`` (g, rows, keys) (its future keys already ``-inf``), the sums in ``acc``
    (unless this is the first span, ``number == 0``, when nothing is accumulated
    yet) and the ``-m`` column of ``q_aug`` are updated in place: afterwards no
    entry of ``s`` exceeds the threshold. The tiles' maxima are computed only when
    the Cauchy-Schwarz bound of some row exceeds its m by more than the threshold
    for these keys.
    """
    r = slice(first, None)
    k_bound = heads.k_norm_max[:, start // block_k: (stop - 1) // block_k + 1].max(axis=1)
    if not (q_norm[:, r] * k_bound[:, None] - m[:, r] > _RESCALE_THRESHOLD).any():
        return
    grow = s.max(axis=2)  # (g, rows): how far each row's scores exceed m
    np.maximum(grow, 0, out=grow)
    if grow.any():
        s -= grow[:, :, None]  # every exponent <= 0 again
        if number:  # sums so far: re-express them relative to the new m
            acc[:, r] *= np.exp(-grow)[:, :, None]  # <= 1
        m[:, r] += grow
        q_aug[:, r, -1] = -m[:, r]


def tiled_attention(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, *, causal: bool = False,
    block_size: int | tuple[int, int] = (256, 512), workers: int | None = None,
    window: int | None = None, return_lse: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    r"""Exact scaled dot-product attention without the ``n_q x n_k`` score matrix.

    Parameters
    ----------
    q, k, v : array_like, shapes (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)
        Queries, keys and values as in :func:`~attention_lib.scaled_dot_product_attention`
        (the same checks and dtypes; leading axes broadcast; float16 is accumulated in
        float32 and returned as float16).
    causal : bool, default False
        Query ``i`` attends only to keys ``j <= i``; with ``n_q < n_k`` the
        queries are the last ``n_q`` positions. Key blocks entirely in the
        future of a query block are never computed.
    block_size : int or (int, int), default (256, 512)
        Query rows and keys per tile, ``(b_q, b_k)``; an int sets both. At
        most ``b_q x max(b_k, b_q)`` scores exist at once per worker and
        (batch, head) entry in progress; a worker takes up to 4 entries at a
        time (fewer when that would leave the workers under 4 tasks each).
    workers : int, optional
        Threads that process query blocks in parallel (numpy releases the GIL
        in its kernels). Default: one per available CPU when the problem is
        large enough (at least about a million scores) and numpy's BLAS is
        one that ``threadpoolctl`` can control; otherwise 1. With more than
        one worker, numpy's BLAS is set to one thread for the duration of the
        call, and this setting is process-wide: other threads of the process
        get single-threaded BLAS meanwhile. Pass ``workers=1`` to leave BLAS
        alone.
    window : int, optional
        A sliding window of ``window`` keys (needs ``causal=True``): query ``i``
        attends only to the keys ``i - window < j <= i``, the mask of
        :func:`~attention_lib.sliding_window_mask`. Tiles entirely outside the
        band are never computed, so the work grows linearly with ``n`` for a
        fixed window.
    return_lse : bool, default False
        Return the log-sum-exp of each row's scores too, what
        :func:`~attention_lib.tiled_attention_backward` needs.

    Returns
    -------
    output : numpy.ndarray, shape (..., n_q, d_v)
        Equal to ``scaled_dot_product_attention(q, k, v, causal=causal)[0]``
        up to rounding (with a window, to that of
        ``mask=sliding_window_mask(n_q, n_k, window)``). The weights are not
        returned: they are never stored.
    lse : numpy.ndarray, shape (..., n_q)
        Only with ``return_lse``: :math:`\log \sum_j e^{s_{ij}}` over the keys
        row ``i`` sees (natural log of the softmax's normaliser, of the scaled
        scores :math:`s = q \cdot k / \sqrt{d_k}`), so that the weights are
        :math:`e^{s_{ij} - \mathrm{lse}_i}`. In the dtype of the computation
        (float32 for float16 input, as FlashAttention keeps it).

    Notes
    -----
    For each tile of ``b_q`` query rows, the key blocks are visited in turn
    and every row keeps a reference value :math:`m`, a running sum
    :math:`\ell` and an accumulator :math:`a` (see :func:`online_softmax_row`):

    .. math::

        P = e^{S - m}, \qquad
        \ell \leftarrow \ell + \operatorname{rowsum} P, \qquad
        a \leftarrow a + P V_{\text{block}},
        \qquad S = \frac{Q_{\text{tile}} K_{\text{block}}^{\mathsf T}}{\sqrt{d_k}},

    and the output rows are :math:`a / \ell`. The recurrence of
    :func:`online_softmax_row` raises :math:`m` to the running maximum at
    every block; here :math:`m` starts at a score the row really has (its own
    key under ``causal``, else key 0) and is raised, with :math:`\ell` and
    :math:`a` multiplied by :math:`e^{m - m'}`, only when a block's scores
    could exceed it by more than 16 (by Cauchy-Schwarz,
    :math:`q_i \cdot k_j \le |q_i|\,\max_j |k_j|`). The result is the same,
    since :math:`a / \ell` does not depend on :math:`m`; no exponent exceeds
    16, so nothing overflows, and :math:`\ell \ge 1`, so nothing underflows.
    The bound is checked once per tile of query rows, for all the keys it
    will meet; when it holds (the usual case) no tile of those rows needs a
    maximum or a subtraction (the subtraction of :math:`m` happens inside the
    product :math:`[q_i, -m_i] \cdot [k_j, 1]`), and the row sums come out of
    the second product, :math:`[a, \ell] \leftarrow [a, \ell] + P\,[V, 1]`:
    two matrix products and one ``exp`` per score, nothing else. Under
    ``causal`` tiles in the future of every row are skipped, and on the
    diagonal tile the future keys get weight 0 (:math:`P` is multiplied by a
    lower-triangular 0/1 tile; in a tile where :math:`m` may be raised, their
    scores are set to :math:`-\infty` first, so that the maximum ignores them).
    With a window the keys too far in the past are skipped as well, and the
    tiles the band's lower edge crosses are masked like the diagonal ones.
    The log-sum-exp is :math:`m + \log \ell` of each row.

    The (batch, head) entries go through their tiles in groups of up to 4,
    each step one numpy call on the stack of their tiles: fewer calls, so
    less time in Python, where only one worker can be at a time.

    Memory beyond the output is :math:`O(b_q \cdot b_k)` per worker and
    entry in progress, plus copies of the keys and values (each with its
    extra column) of the entries in progress, instead of
    :math:`O(n_q \cdot n_k)`; the arithmetic is that of plain attention.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.normal(size=(3, 2, 10, 4))   # 2 heads, 10 positions
    >>> out = tiled_attention(q, k, v, causal=True, block_size=3)
    >>> from attention_lib import scaled_dot_product_attention
    >>> ref, _ = scaled_dot_product_attention(q, k, v, causal=True)
    >>> bool(np.allclose(out, ref, rtol=0, atol=1e-12))
    True
    >>> out, lse = tiled_attention(q, k, v, causal=True, window=4, return_lse=True)
    >>> lse.shape
    (2, 10)
    """
    q, k, v, batch, causal, window, workers, (block_q, block_k), out_dtype = tiled_inputs(
        q, k, v, causal, block_size, window, workers)
    return_lse = check_flag(return_lse, "return_lse")
    n_q = q.shape[-2]
    n_k, d_v = v.shape[-2:]

    out = np.empty((*batch, n_q, d_v), dtype=q.dtype)  # (..., n_q, d_v)
    lse = np.empty((*batch, n_q), dtype=q.dtype) if return_lse else None  # (..., n_q)
    q_all, k_all, v_all = entry_views(batch, q, k, v)  # (..., n, d) each
    check_overflow = scores_may_overflow(q, k)
    starts = range(0, n_q, block_q)
    entries = list(np.ndindex(batch))
    workers = pool_size(workers, visible_scores(len(entries), n_q, n_k, causal, window),
                        len(entries) * len(starts))
    # Entries go through their query tiles in groups of g: as many as keep at
    # least 4 tasks per worker (so that the pool stays balanced to the end).
    g = max(1, min(_MAX_HEADS_PER_TASK, len(entries) * len(starts) // (4 * workers)))
    groups = [tuple(entries[j: j + g]) for j in range(0, len(entries), g)]
    # Group by group (so that few heads are prepared at once), and within a group
    # under the causal rule the longest query blocks (the last) first.
    tasks = [(number, i0, min(i0 + block_q, n_q)) for number in range(len(groups))
             for i0 in (reversed(starts) if causal else starts)]
    prepared: dict[int, _Heads] = {}
    pending = dict.fromkeys(range(len(groups)), len(starts))  # query blocks left per group
    group_locks = [threading.Lock() for _ in groups]
    pending_lock = threading.Lock()

    def run(task: tuple[int, int, int]) -> None:
        number, i0, i1 = task
        # Overflowing scores are reported as a ValueError (check_overflow); what remains
        # is harmless (exp underflowing to 0): the caller's errstate does not apply.
        with group_locks[number], np.errstate(all="ignore"):  # prepared once, by one worker
            if number not in prepared:
                prepared[number] = _prepare_heads(groups[number], q_all, k_all, v_all,
                                                  causal, block_k)
            heads = prepared[number]
        with np.errstate(all="ignore"):
            _attend_query_block(heads, out, i0, i1, causal, block_k, check_overflow, lse,
                                window)
        with pending_lock:
            pending[number] -= 1
            if pending[number] == 0:
                del prepared[number]  # its (g, n_k, d + 1) copies are no longer needed

    # On a pool of `workers` threads, numpy's BLAS at one thread per tile product
    # (BLAS threads competing with the pool for the same cores slow them down).
    run_tasks(run, tasks, workers)
    if return_lse:
        return out.astype(out_dtype, copy=False), lse
    return out.astype(out_dtype, copy=False)
