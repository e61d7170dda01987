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

Dimension letters used in the shape comments:

- ``...``  leading batch / head axes (broadcast between the arguments)
- ``n_q``  number of queries, ``n_k`` number of keys (= number of values)
- ``d_k``  size of a query or key vector, ``d_v`` size of a value vector
- ``b_q``  query rows in one tile, ``b_k`` keys in one tile
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from threadpoolctl import ThreadpoolController

from ._validation import (
    as_real_array,
    check_attention_inputs,
    check_causal_sizes,
    check_flag,
    common_float_dtype,
    compute_dtype,
    describe,
    first_true,
    positive_int,
)

__all__ = ["OnlineSoftmaxTrace", "online_softmax_row", "tiled_attention"]

# Below this many (query, key) scores a thread pool costs more than it saves.
_MIN_PARALLEL_SCORES = 1 << 20


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


def _block_sizes(block_size: int | tuple[int, int]) -> tuple[int, int]:
    sizes = block_size if isinstance(block_size, tuple) else (block_size, block_size)
    if len(sizes) != 2:
        raise ValueError(
            f"block_size={block_size!r}; expected a positive integer or a pair "
            "(block_q, block_k) of positive integers"
        )
    return (positive_int(sizes[0], "block_size[0]"), positive_int(sizes[1], "block_size[1]"))


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# --------------------------------------------------------------------------------------
# numpy's BLAS thread count while the worker threads run
# --------------------------------------------------------------------------------------


@functools.cache
def _numpy_blas() -> tuple[Any, ...]:
    """threadpoolctl's controllers of the BLAS library numpy uses (usually one OpenBLAS).

    Other BLAS copies in the process (torch's, say) are left alone.
    """
    libraries = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
    numpy_dir = os.path.dirname(os.path.dirname(os.path.abspath(np.__file__)))
    own = [lib for lib in libraries if os.path.abspath(lib.filepath).startswith(numpy_dir)
           and "numpy" in lib.filepath]
    return tuple(own or libraries)


_blas_lock = threading.Lock()
_blas_users = 0
_blas_saved: list[int] = []


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """Ask numpy's BLAS for one thread per call while the worker threads run.

    The BLAS thread count is process-wide: during the ``with`` block every
    thread of the process gets single-threaded BLAS. Concurrent and nested
    uses share one setting; the last to leave restores the previous count,
    unless someone else changed it meanwhile (then their setting stays).
    """
    global _blas_users, _blas_saved
    libraries = _numpy_blas()
    with _blas_lock:
        if _blas_users == 0:
            _blas_saved = [lib.get_num_threads() for lib in libraries]
            for lib in libraries:
                lib.set_num_threads(1)
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                for lib, saved in zip(libraries, _blas_saved, strict=True):
                    if lib.get_num_threads() == 1:  # still ours: restore
                        lib.set_num_threads(saved)


# --------------------------------------------------------------------------------------
# One tile row: the fast path of attention
# --------------------------------------------------------------------------------------


@functools.cache
def _future(rows: int, cols: int) -> np.ndarray:
    """Boolean (rows, cols), True above the diagonal: the future keys of a diagonal tile."""
    upper = ~np.tri(rows, cols, dtype=bool)
    upper.flags.writeable = False
    return upper


def _raise_overflow(s: np.ndarray, index: tuple[int, ...], i0: int, start: int) -> None:
    """Raise the same ``ValueError`` as :func:`scaled_dot_product_attention` for a bad tile."""
    _, (row, col) = first_true(~np.isfinite(s))
    raise ValueError(
        f"the scores q . k / sqrt(d_k) overflow {s.dtype}: the score at (..., query, key) "
        f"index {(*index, i0 + row, start + col)} is not finite; expected inputs whose dot "
        "products fit the dtype (rescale them, or use float64)"
    )


class _Head(NamedTuple):
    """One (batch, head) entry, prepared once for all its query tiles.

    ``k_aug`` carries an extra column of ones: a query row ``[q_i, -m_i]``
    times ``k_aug`` gives ``q_i . k_j - m_i`` in the product itself, which
    saves a pass over every score tile.
    """

    q: np.ndarray  # (n_q, d_k), a view of the input
    scale: float  # 1 / sqrt(d_k)
    q_norm: np.ndarray  # (n_q,), |q_i| / sqrt(d_k)
    m0: np.ndarray  # (n_q,), the score of one key each query sees: a start for m
    k_aug: np.ndarray  # (n_k, d_k + 1), [k | 1]
    k_norm_max: np.ndarray  # (n_blocks,), the largest |k_j| in each key block
    v: np.ndarray  # (n_k, d_v), a view of the input
    ones: np.ndarray  # (n_k,): P @ ones is the row sums of P (a BLAS product, faster than sum)


def _prepare_head(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool,
                  block_k: int) -> _Head:
    n_q, d_k = q.shape
    n_k = k.shape[0]
    scale = 1.0 / math.sqrt(d_k)  # a Python float keeps float32 float32
    k_aug = np.empty((n_k, d_k + 1), dtype=q.dtype)  # (n_k, d_k + 1)
    k_aug[:, :d_k] = k
    k_aug[:, d_k] = 1
    k_norm = np.sqrt(np.einsum("jd,jd->j", k, k))  # (n_k,)
    starts = np.arange(0, n_k, block_k)
    # The score of a key every query sees: its own position under the causal rule
    # (query i is at position i + n_k - n_q), else key 0.
    if causal:
        m0 = np.einsum("id,id->i", q, k[n_k - n_q:]) * scale  # (n_q,)
    else:
        m0 = (q @ k[0]) * scale  # (n_q,)
    return _Head(
        q=q,
        scale=scale,
        q_norm=np.sqrt(np.einsum("id,id->i", q, q)) * scale,
        m0=m0,
        k_aug=k_aug,
        k_norm_max=np.maximum.reduceat(k_norm, starts),
        v=v,
        ones=np.ones(n_k, dtype=q.dtype),
    )


# Scores may exceed the reference m of their row by up to this many nats before
# m is raised (a pass over the tile): exp of at most 16 is at most 8.9e6, far from
# overflowing even float16's float32 accumulator, and no precision is lost.
_RESCALE_THRESHOLD = 16.0


def _attend_query_block(
    head: _Head,
    out: np.ndarray,
    index: tuple[int, ...],
    i0: int,
    i1: int,
    causal: bool,
    block_k: int,
    check_overflow: bool,
) -> None:
    """Write rows ``i0:i1`` of one (batch, head) entry's output into ``out`` (n_q, d_v).

    Only ``(i1 - i0) x block_k`` scores exist at any time.
    """
    n_q, d_k = head.q.shape
    n_k = head.k_aug.shape[0]
    rows = i1 - i0
    # Key spans to visit, as (first row, start, stop, on_diagonal): rows first:
    # of the tile meet keys start:stop. Under the causal rule query i sits at
    # position i + n_k - n_q: the keys before the first query's position are
    # visible to every row of the tile (no mask), the next `rows` keys form a
    # lower-triangular tile, and later keys are skipped entirely. The triangle
    # is cut in two: all rows meet its first half of keys, only the second half
    # of the rows meets the second half (a quarter of the tile is never computed).
    if causal:
        diagonal = i0 + (n_k - n_q)
        spans = [(0, j, min(j + block_k, diagonal), False) for j in range(0, diagonal, block_k)]
        half = rows // 2
        if half:
            spans.append((0, diagonal, diagonal + half, True))
        spans.append((half, diagonal + half, diagonal + rows, True))
    else:
        spans = [(0, j, min(j + block_k, n_k), False) for j in range(0, n_k, block_k)]

    # The reference m of each row: a score the row really has, so that the sum l
    # below holds a term exp(0) = 1 and cannot underflow; raised when a tile's
    # scores exceed it by more than the threshold.
    m = head.m0[i0:i1].copy()  # (b_q,)
    q_aug = np.empty((rows, d_k + 1), dtype=head.q.dtype)  # (b_q, d_k + 1), [q | -m]
    np.multiply(head.q[i0:i1], head.scale, out=q_aug[:, :d_k])
    q_aug[:, d_k] = -m
    q_norm = head.q_norm[i0:i1]  # (b_q,)
    width = max(stop - start for _, start, stop, _ in spans)
    scratch = np.empty(rows * width, dtype=head.q.dtype)  # one (b_q, b_k) tile at a time
    acc = out[i0:i1]  # (b_q, d_v), accumulated in place in the output
    acc[...] = 0
    update = np.empty_like(acc)  # (b_q, d_v)
    l_sum = np.zeros(rows, dtype=head.q.dtype)  # (b_q,)
    row_sum = np.empty_like(l_sum)
    for first, start, stop, on_diagonal in spans:
        r = slice(first, rows)  # the rows of the tile that meet these keys
        s = scratch[: (rows - first) * (stop - start)].reshape(rows - first, stop - start)
        np.matmul(q_aug[r], head.k_aug[start:stop].T, out=s)  # S - m: (b, d_k+1) @ (d_k+1, b_k)
        if check_overflow and not np.isfinite(s).all():
            _raise_overflow(s, index, i0 + first, start)
        if on_diagonal:
            np.copyto(s, -np.inf, where=_future(rows - first, stop - start))  # future keys
            k_bound = float(head.k_norm_max[start // block_k: (stop - 1) // block_k + 1].max())
        else:
            k_bound = float(head.k_norm_max[start // block_k])
        # Cauchy-Schwarz: q_i . k_j <= |q_i| max|k_j|. Only when that bound exceeds
        # m by more than the threshold is the tile's maximum needed.
        if (q_norm[r] * k_bound - m[r] > _RESCALE_THRESHOLD).any():
            grow = s.max(axis=1)  # how far each row's scores exceed m
            np.maximum(grow, 0, out=grow)
            if grow.any():
                s -= grow[:, None]  # every exponent <= 0 again
                rescale = np.exp(-grow)  # <= 1: the old sums relative to the new m
                acc[r] *= rescale[:, None]
                l_sum[r] *= rescale
                m[r] += grow
                q_aug[r, d_k] = -m[r]
        np.exp(s, out=s)  # P = exp(S - m)
        np.matmul(s, head.ones[start:stop], out=row_sum[r])  # the row sums of P
        l_sum[r] += row_sum[r]
        np.matmul(s, head.v[start:stop], out=update[r])  # (b, b_k) @ (b_k, d_v)
        acc[r] += update[r]
    acc /= l_sum[:, None]


def _scores_may_overflow(q: np.ndarray, k: np.ndarray) -> bool:
    """False when no score ``q . k / sqrt(d_k)`` can overflow (so no tile needs checking).

    Each score is a sum of ``d_k`` products, so ``|score| <= sqrt(d_k) max|q| max|k|``;
    when that bound is far below the largest float (a factor 4 covers rounding),
    every score is finite.
    """
    q_max = max(float(q.max()), -float(q.min()))  # max |q| without an |q| temporary
    k_max = max(float(k.max()), -float(k.min()))
    bound = math.sqrt(q.shape[-1]) * q_max * k_max
    return bound >= 0.25 * float(np.finfo(q.dtype).max)


def tiled_attention(
    q: ArrayLike,
    k: ArrayLike,
    v: ArrayLike,
    *,
    causal: bool = False,
    block_size: int | tuple[int, int] = (256, 512),
    workers: int | None = None,
) -> np.ndarray:
    r"""Exact scaled dot-product attention without the ``n_q x n_k`` score matrix.

    Parameters
    ----------
    q : array_like, shape (..., n_q, d_k)
    k : array_like, shape (..., n_k, d_k)
    v : array_like, shape (..., n_k, d_v)
        As in :func:`~attention_lib.scaled_dot_product_attention` (the same
        checks; leading axes broadcast; float32 stays float32; float16 is
        accumulated in float32 and returned as float16).
    causal : bool, default False
        Query ``i`` attends only to keys ``j <= i``; with ``n_q < n_k`` the
        queries are the last ``n_q`` positions. Key blocks entirely in the
        future of a query block are never computed.
    block_size : int or (int, int), default (256, 512)
        Query rows and keys per tile, ``(b_q, b_k)``; an int sets both. At
        most ``b_q x max(b_k, b_q)`` scores exist at once per worker.
    workers : int, optional
        Threads that process query blocks in parallel (numpy releases the GIL
        in its kernels). Default: one per available CPU when the problem is
        large enough (at least about a million scores) and numpy's BLAS is
        one that ``threadpoolctl`` can control; otherwise 1. With more than
        one worker, numpy's BLAS is set to one thread for the duration of the
        call, and this setting is process-wide: other threads of the process
        get single-threaded BLAS meanwhile. Pass ``workers=1`` to leave BLAS
        alone.

    Returns
    -------
    output : numpy.ndarray, shape (..., n_q, d_v)
        Equal to ``scaled_dot_product_attention(q, k, v, causal=causal)[0]``
        up to rounding. The weights are not returned: they are never stored.

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
    This spares the maximum and the subtraction over most tiles (the
    subtraction of :math:`m` happens inside the product
    :math:`[q_i, -m_i] \cdot [k_j, 1]`), leaving two matrix products and one
    ``exp`` per score. Under ``causal`` the tile on the diagonal is masked
    (its upper triangle set to :math:`-\infty`) and tiles in the future of
    every row are skipped.

    Memory beyond the output is :math:`O(b_q \cdot b_k)` per worker plus a
    copy of the keys of the heads in progress, instead of
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
    """
    q, k, v, batch = check_attention_inputs(q, k, v)
    causal = check_flag(causal, "causal")
    block_q, block_k = _block_sizes(block_size)
    if workers is not None:
        workers = positive_int(workers, "workers", what="or None")
    n_q, d_k = q.shape[-2:]
    n_k, d_v = v.shape[-2:]
    if causal:
        check_causal_sizes(n_q, n_k)

    out_dtype = q.dtype
    dtype = compute_dtype(out_dtype)  # float16 is accumulated in float32
    q, k, v = (a.astype(dtype, copy=False) for a in (q, k, v))
    out = np.empty((*batch, n_q, d_v), dtype=dtype)  # (..., n_q, d_v)
    q_all = np.broadcast_to(q, (*batch, n_q, d_k))  # views, no copies
    k_all = np.broadcast_to(k, (*batch, n_k, d_k))
    v_all = np.broadcast_to(v, (*batch, n_k, d_v))
    check_overflow = _scores_may_overflow(q, k)
    # Head by head (so that few heads are prepared at once), and within a head
    # under the causal rule the longest query blocks (the last) first.
    starts = range(0, n_q, block_q)
    tasks = [(index, i0, min(i0 + block_q, n_q)) for index in np.ndindex(batch)
             for i0 in (reversed(starts) if causal else starts)]
    heads: dict[tuple[int, ...], _Head] = {}
    pending = dict.fromkeys(np.ndindex(batch), len(starts))  # query blocks left per head
    heads_lock = threading.Lock()

    def run(task: tuple[tuple[int, ...], int, int]) -> None:
        index, i0, i1 = task
        # Overflowing scores are reported as a ValueError (check_overflow); what remains
        # is harmless (exp underflowing to 0): the caller's errstate does not apply.
        with heads_lock, np.errstate(all="ignore"):
            if index not in heads:
                heads[index] = _prepare_head(q_all[index], k_all[index], v_all[index],
                                             causal, block_k)
            head = heads[index]
        with np.errstate(all="ignore"):
            _attend_query_block(head, out[index], index, i0, i1, causal, block_k,
                                check_overflow)
        with heads_lock:
            pending[index] -= 1
            if pending[index] == 0:
                del heads[index]  # its (n_k, d + 1) copies are no longer needed

    n_scores = math.prod(batch) * n_q * n_k // (2 if causal else 1)
    if workers is None:
        parallel = bool(_numpy_blas()) and n_scores >= _MIN_PARALLEL_SCORES
        workers = _available_cpus() if parallel else 1
    workers = min(int(workers), len(tasks))
    if workers == 1:
        for task in tasks:
            run(task)
    else:
        # One BLAS thread per tile product: BLAS threads competing with the pool
        # for the same cores slow these small products down many times over.
        with _one_blas_thread(), ThreadPoolExecutor(workers) as pool:
            for _ in pool.map(run, tasks):
                pass
    return out.astype(out_dtype, copy=False)
