"""Tile plumbing shared by the tiled forward pass and its backward pass.

The checks both start with, how many threads they run on, which keys a tile of
query rows meets (under the causal rule and a sliding window), the masks of the
tiles a mask crosses, and the overflow checks of the scores.
:mod:`attention_lib.tiled` holds the forward pass, :mod:`attention_lib.tiled_backward`
the backward pass; the thread pool itself is in :mod:`attention_lib._threads`.

Dimension letters are those of :mod:`attention_lib.tiled`; ``w`` is the window.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ._threads import available_cpus, numpy_blas
from ._validation import attention_operands, check_flag, check_window, first_true, positive_int

__all__ = ["band_hidden", "block_sizes", "entry_views", "future", "key_spans", "past",
           "pool_size", "raise_overflow", "scores_may_overflow", "tiled_inputs",
           "visible_scores"]

# Below this many (query, key) scores a thread pool costs more than it saves.
_MIN_PARALLEL_SCORES = 1 << 20


def block_sizes(block_size: int | tuple[int, int]) -> tuple[int, int]:
    """``(b_q, b_k)`` from an int or a pair, each a positive int, or an error naming it."""
    sizes = block_size if isinstance(block_size, tuple) else (block_size, block_size)
    if len(sizes) != 2:
        raise ValueError(
            f"block_size={block_size!r}; expected a positive integer or a pair "
            "(block_q, block_k) of positive integers"
        )
    return (positive_int(sizes[0], "block_size[0]"), positive_int(sizes[1], "block_size[1]"))


def tiled_inputs(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, causal: bool, block_size: int | tuple[int, int],
    window: int | None, workers: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...], bool, int | None, int | None,
           tuple[int, int], np.dtype]:
    """The checks the tiled passes start with.

    Returns q, k, v cast to the dtype they are computed in (float16 in float32),
    their broadcast leading shape, ``causal`` as a bool, the ``window`` and the
    ``workers`` (each None or a positive int), ``(b_q, b_k)`` and the dtype of the
    result. Under ``causal`` the queries must not outnumber the keys.
    """
    causal = check_flag(causal, "causal")
    q, k, v, batch, out_dtype = attention_operands(q, k, v, causal=causal)
    blocks = block_sizes(block_size)
    window = check_window(window, causal)
    if workers is not None:
        workers = positive_int(workers, "workers", what="or None")
    return q, k, v, batch, causal, window, workers, blocks, out_dtype


def entry_views(batch: tuple[int, ...], *arrays: np.ndarray) -> list[np.ndarray]:
    """Each array broadcast to the leading shape ``batch``: views, no copies, so that
    ``a[index]`` is the ``(n, d)`` matrix of one (batch, head) entry."""
    return [np.broadcast_to(a, (*batch, *a.shape[-2:])) for a in arrays]


def pool_size(workers: int | None, n_scores: int, n_tasks: int) -> int:
    """Threads for a tiled pass of ``n_tasks`` tasks that computes ``n_scores`` scores.

    ``workers`` when given, else one per available CPU when the pass is large enough
    for a pool to pay (``_MIN_PARALLEL_SCORES``) and numpy's BLAS is one that
    ``threadpoolctl`` can set to one thread, else 1; never more than the tasks.
    """
    if workers is None:
        parallel = bool(numpy_blas()) and n_scores >= _MIN_PARALLEL_SCORES
        workers = available_cpus() if parallel else 1
    return min(workers, n_tasks)


def visible_scores(n_entries: int, n_q: int, n_k: int, causal: bool,
                   window: int | None) -> int:
    """About how many scores ``n_entries`` (batch, head) entries compute: all of them,
    half under the causal rule, at most ``window`` per query under a window."""
    if window is not None:
        return n_entries * n_q * min(n_k, window)
    return n_entries * n_q * n_k // (2 if causal else 1)


def key_spans(rows: int, n_q: int, n_k: int, i0: int, causal: bool, block_k: int,
              window: int | None = None) -> list[tuple[int, int, int, bool]]:
    """The key spans query rows ``i0:i0 + rows`` meet: (first row, start, stop, masked).

    Rows ``first:`` of the tile meet keys ``start:stop``; ``masked`` spans hold keys
    that some of those rows may not see. Under the causal rule query i sits at
    position i + n_k - n_q: the keys before the first query's position are visible to
    every row of the tile (no mask), the next ``rows`` keys form a lower-triangular
    tile, and later keys are skipped entirely. The triangle is cut in two: all rows
    meet its first half of keys, only the second half of the rows meets the second
    half (a quarter of the tile is never computed). With a ``window`` of w keys the
    keys before the first row's position minus w + 1 are skipped too, and the keys
    that only some rows see (the band's lower edge) are masked spans: a row of tiles
    meets about w + rows keys, however long the sequence.
    """
    if not causal:
        return [(0, j, min(j + block_k, n_k), False) for j in range(0, n_k, block_k)]
    diagonal = i0 + (n_k - n_q)
    lo = full = 0  # keys lo:full are seen by some rows only, full:diagonal by all
    if window is not None:
        lo = max(0, diagonal - window + 1)  # the first key the first row sees
        full = min(max(lo, diagonal + rows - window), diagonal)  # the last row's first
    spans = [(0, j, min(j + block_k, full), True) for j in range(lo, full, block_k)]
    spans += [(0, j, min(j + block_k, diagonal), False) for j in range(full, diagonal, block_k)]
    half = rows // 2
    if half:
        spans.append((0, diagonal, diagonal + half, True))
    spans.append((half, diagonal + half, diagonal + rows, True))
    return spans


@functools.cache
def future(rows: int, cols: int) -> np.ndarray:
    """Boolean (rows, cols), True above the diagonal: the future keys of a diagonal tile."""
    upper = ~np.tri(rows, cols, dtype=bool)
    upper.flags.writeable = False
    return upper


@functools.cache
def past(rows: int, cols: int, dtype: np.dtype) -> np.ndarray:
    """(rows, cols) of ``dtype``, 1 on and below the diagonal (the keys kept), 0 above."""
    lower = np.tri(rows, cols, dtype=dtype)
    lower.flags.writeable = False
    return lower


@functools.lru_cache(maxsize=64)
def band_hidden(rows: int, cols: int, offset: int, window: int) -> np.ndarray:
    """Boolean (rows, cols), True at the keys a sliding window hides from each row.

    Key column ``c`` is ``offset + c - r`` positions after row ``r``'s own position:
    hidden when that is positive (the future) or at most ``-window`` (too old).
    The tiles of one call repeat a few offsets, so few masks are ever made.
    """
    ahead = offset + np.arange(cols)[None, :] - np.arange(rows)[:, None]  # (rows, cols)
    hidden = (ahead > 0) | (ahead <= -window)
    hidden.flags.writeable = False
    return hidden


def raise_overflow(s: np.ndarray, indices: Sequence[tuple[int, ...]], i0: int,
                   start: int) -> None:
    """Raise the same ``ValueError`` as :func:`scaled_dot_product_attention` for a bad tile.

    ``s`` has shape (g, rows, keys), one tile per (batch, head) entry of ``indices``.
    """
    _, (entry, row, col) = first_true(~np.isfinite(s))
    raise ValueError(
        f"the scores q . k / sqrt(d_k) overflow {s.dtype}: the score at (..., query, key) "
        f"index {(*indices[entry], i0 + row, start + col)} is not finite; expected inputs "
        "whose dot products fit the dtype (rescale them, or use float64)"
    )


def scores_may_overflow(q: np.ndarray, k: np.ndarray) -> bool:
    """False when no score ``q . k / sqrt(d_k)`` can overflow (so no tile needs checking).

    Each score is a sum of ``d_k`` products, so ``|score| <= sqrt(d_k) max|q| max|k|``;
    when that bound is far below the largest float (a factor 4 covers rounding),
    every score is finite.
    """
    q_max = max(float(q.max()), -float(q.min()))  # max |q| without an |q| temporary
    k_max = max(float(k.max()), -float(k.min()))
    bound = math.sqrt(q.shape[-1]) * q_max * k_max
    return bound >= 0.25 * float(np.finfo(q.dtype).max)
