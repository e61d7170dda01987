r"""The backward pass of tiled attention: gradients from the saved log-sum-exp.

:func:`attention_lib.attention_backward` keeps the whole ``n_q x n_k`` matrix of
weights :math:`A` to compute the gradients. FlashAttention-2 (Dao, 2023) keeps
only what the tiled forward pass gives for free, the log-sum-exp of each row,
:math:`\mathrm{lse}_i = \log \sum_j e^{s_{ij}}`, and recomputes the weights of
one tile at a time: :math:`A_{ij} = e^{s_{ij} - \mathrm{lse}_i}`, exactly, from
the tile's scores. The softmax's backward needs one more number per row,
:math:`D_i = \sum_j A_{ij}\, dA_{ij}`, and since :math:`dA = dZ\,V^{\mathsf T}`
and :math:`Z = A V`, it is :math:`D_i = dZ_i \cdot Z_i`: the row sums of
:math:`dZ \odot Z`, computed from the output before the tiles are visited.

Dimension letters are those of :mod:`attention_lib.tiled`.
"""

from __future__ import annotations

import math
import threading

import numpy as np
from numpy.typing import ArrayLike

from ._threads import run_tasks
from ._tiles import (
    band_hidden,
    entry_views,
    pool_size,
    scores_may_overflow,
    tiled_inputs,
    visible_scores,
)
from ._validation import array_of_shape, first_true
from .attention import scaled_scores
from .gradients import _sum_to_shape

__all__ = ["tiled_attention_backward"]

# |rowsum(A) - 1| above this (in the dtype of the computation) means that lse is not
# the log-sum-exp of these scores: the weights it gives do not sum to one.
_ROW_SUM_TOLERANCE = {np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-6}


def _query_tiles(j0: int, j1: int, n_q: int, n_k: int, b_q: int, causal: bool,
                 window: int | None) -> list[tuple[int, int, np.ndarray | None]]:
    """The query tiles that see some of the keys ``j0:j1``: ``(i0, i1, hidden)`` each.

    ``hidden`` is None when every query of the tile sees every key, else the
    (rows, keys) boolean mask of the pairs the causal rule or the window hides.
    Query i sits at position i + n_k - n_q; under the causal rule it sees the
    keys j <= its position, and with a window only those more than its position
    minus ``window``. The tiles are those of the grid ``0, b_q, 2 b_q, ...``.
    """
    if not causal:
        return [(i0, min(i0 + b_q, n_q), None) for i0 in range(0, n_q, b_q)]
    offset = n_k - n_q
    first = max(0, j0 - offset)  # the first query whose position reaches key j0
    stop = n_q if window is None else min(n_q, window + j1 - 1 - offset)  # past the band
    reach = n_k if window is None else window  # no query is n_k keys past its oldest key
    tiles = []
    for i0 in range(first // b_q * b_q, stop, b_q):
        i1 = min(i0 + b_q, n_q)
        full = j1 - 1 <= i0 + offset and (i1 - 1 + offset) - j0 < reach
        tiles.append((i0, i1, None if full else band_hidden(i1 - i0, j1 - j0,
                                                             j0 - (i0 + offset), reach)))
    return tiles


def tiled_attention_backward(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, out: ArrayLike, lse: ArrayLike,
    grad_out: ArrayLike, *, causal: bool = False, window: int | None = None,
    block_size: int | tuple[int, int] = (256, 256), workers: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Gradients of attention with respect to q, k and v, tile by tile, from the saved lse.

    Parameters
    ----------
    q, k, v : array_like, shapes (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)
        The inputs of the forward pass, with the checks and dtypes of
        :func:`~attention_lib.tiled_attention` (float16 is computed in float32).
    out : array_like, shape (..., n_q, d_v)
        The output of the forward pass, :math:`Z`, with the broadcast leading axes.
    lse : array_like, shape (..., n_q)
        The log-sum-exp of each row's scores, from
        ``tiled_attention(q, k, v, causal=..., window=..., return_lse=True)``.
    grad_out : array_like, shape (..., n_q, d_v)
        :math:`dZ`, the gradient of a scalar loss with respect to ``out``.
    causal : bool, default False
        As in the forward pass (with ``n_q < n_k`` the queries are the last positions).
    window : int, optional
        The sliding window of the forward pass (needs ``causal=True``).
    block_size : int or (int, int), default (256, 256)
        Query rows and keys per tile, ``(b_q, b_k)``; an int sets both.
    workers : int, optional
        Threads that process (batch, head) entries and key blocks in parallel, as in
        :func:`~attention_lib.tiled_attention` (the same default, and with more than
        one, numpy's BLAS at one thread meanwhile). Each key block's share of
        ``dq`` is added to it under a lock, in the order the blocks finish: with
        several workers ``dq`` may differ in its last bits from run to run (as
        FlashAttention-2's does).

    Returns
    -------
    dq, dk, dv : numpy.ndarray, shapes of ``q``, ``k`` and ``v``
        Equal to :func:`~attention_lib.attention_backward`'s up to rounding; an
        input whose leading axes were broadcast gets its gradient summed over them.

    Raises
    ------
    ValueError
        Besides the checks of the forward pass: when ``out``, ``lse`` or ``grad_out``
        has the wrong shape, and when ``lse`` does not belong to ``q`` and ``k`` (the
        weights it gives do not sum to one in some row). ``out`` is taken on trust:
        another array of its shape gives wrong gradients.

    Notes
    -----
    With :math:`s = 1/\sqrt{d_k}`, :math:`D_i = \operatorname{rowsum}(dZ \odot Z)_i`,
    and for each tile of query rows :math:`I` and keys :math:`J` (tiles that the
    causal rule or the window hide entirely are skipped):

    .. math::

        S = s\, Q_I K_J^{\mathsf T}, \quad P = e^{S - \mathrm{lse}_I}, \quad
        dV_J \mathrel{+}= P^{\mathsf T} dZ_I, \quad dP = dZ_I V_J^{\mathsf T},

        dS = P \odot (dP - D_I), \quad
        dQ_I \mathrel{+}= s\, dS\, K_J, \quad dK_J \mathrel{+}= s\, dS^{\mathsf T} Q_I .

    These are the equations of :func:`~attention_lib.attention_backward` on one
    tile: :math:`dS = A \odot (dA - \operatorname{rowsum}(dA \odot A))` with
    :math:`\operatorname{rowsum}(dA \odot A) = D`. As in FlashAttention-2 the key
    blocks are the outer loop: one task per (batch, head) entry and key block
    keeps its :math:`dK_J, dV_J` and adds its share of :math:`dQ` at the end.
    Memory beyond the gradients is a few ``(b_q, b_k)`` tiles and a share of
    :math:`dQ` per worker, and :math:`D`, never :math:`n_q \times n_k`. The row
    sums of :math:`P` are accumulated too, as a check that ``lse`` belongs to
    these inputs.

    Examples
    --------
    >>> from attention_lib import attention_backward, tiled_attention
    >>> rng = np.random.default_rng(0)
    >>> q, k, v, d_out = rng.normal(size=(4, 2, 9, 3))   # 2 heads, 9 positions
    >>> out, lse = tiled_attention(q, k, v, causal=True, block_size=4, return_lse=True)
    >>> dq, dk, dv = tiled_attention_backward(q, k, v, out, lse, d_out, causal=True,
    ...                                       block_size=4)
    >>> ref = attention_backward(q, k, v, d_out, causal=True)
    >>> all(np.allclose(a, b, rtol=0, atol=1e-12) for a, b in zip((dq, dk, dv), ref))
    True
    """
    q, k, v, batch, causal, window, workers, (b_q, b_k), out_dtype = tiled_inputs(
        q, k, v, causal, block_size, window, workers)
    n_q, d_k = q.shape[-2:]
    n_k, d_v = v.shape[-2:]
    work = q.dtype  # float16 is computed in float32
    z = array_of_shape(out, "out", (*batch, n_q, d_v),
                       what="the attention output (..., n_q, d_v)").astype(work, copy=False)
    d_z = array_of_shape(grad_out, "grad_out", (*batch, n_q, d_v),
                         what="the shape of the output (..., n_q, d_v)").astype(work, copy=False)
    lse = array_of_shape(lse, "lse", (*batch, n_q),
                         what="(..., n_q), one per query").astype(work, copy=False)
    q_all, k_all, v_all = entry_views(batch, q, k, v)  # (..., n, d) each, views
    check_overflow = scores_may_overflow(q, k)
    scale = 1.0 / math.sqrt(d_k)  # a Python float keeps float32 float32

    delta = np.einsum("...id,...id->...i", d_z, z)  # (..., n_q): D = rowsum(dZ * Z)
    dq = np.zeros((*batch, n_q, d_k), dtype=work)  # (..., n_q, d_k)
    dk = np.zeros((*batch, n_k, d_k), dtype=work)  # (..., n_k, d_k)
    dv = np.zeros((*batch, n_k, d_v), dtype=work)  # (..., n_k, d_v)
    row_sums = np.zeros((*batch, n_q), dtype=work)  # (..., n_q): rowsum A, 1 if lse is right
    entries = list(np.ndindex(batch))
    locks = [threading.Lock() for _ in entries]  # one per entry: its dq and row sums
    tasks = [(number, j0) for number in range(len(entries)) for j0 in range(0, n_k, b_k)]
    workers = pool_size(workers, visible_scores(len(entries), n_q, n_k, causal, window),
                        len(tasks))

    def run(task: tuple[int, int]) -> None:
        number, j0 = task
        index = entries[number]
        keys = slice(j0, min(j0 + b_k, n_k))
        tiles = _query_tiles(keys.start, keys.stop, n_q, n_k, b_q, causal, window)
        if not tiles:  # keys before every query's window: no gradient
            return
        q_e, dz_e = q_all[index], d_z[index]  # (n_q, d_k), (n_q, d_v)
        lse_e, delta_e = lse[index], delta[index]  # (n_q,) each
        k_j, v_j = k_all[index][keys], v_all[index][keys]  # (b_k, d_k), (b_k, d_v)
        r0, r1 = tiles[0][0], tiles[-1][1]  # the query rows these keys meet
        dq_part = np.zeros((r1 - r0, d_k), dtype=work)  # this key block's share of dq
        sums_part = np.zeros(r1 - r0, dtype=work)
        dk_j = np.zeros(k_j.shape, dtype=work)  # (b_k, d_k), summed over query tiles
        dv_j = np.zeros(v_j.shape, dtype=work)  # (b_k, d_v)
        with np.errstate(all="ignore"):  # overflows are reported, not left to the errstate
            for i0, i1, hidden in tiles:
                q_i, dz_i = q_e[i0:i1], dz_e[i0:i1]  # (b_q, d_k), (b_q, d_v)
                s = scaled_scores(q_i, k_j)  # (b_q, b_k)
                if check_overflow and not np.isfinite(s).all():
                    _raise_overflow(s, index, i0, j0)
                if hidden is not None:
                    np.copyto(s, -np.inf, where=hidden)  # exp(-inf) = 0: no weight
                p = np.exp(s - lse_e[i0:i1, None])  # (b_q, b_k): the weights A of the tile
                sums_part[i0 - r0:i1 - r0] += p.sum(axis=-1)
                dv_j += p.T @ dz_i  # (b_k, b_q) @ (b_q, d_v)
                dp = dz_i @ v_j.T  # (b_q, d_v) @ (d_v, b_k)
                ds = p * (dp - delta_e[i0:i1, None])  # (b_q, b_k)
                ds *= scale
                dq_part[i0 - r0:i1 - r0] += ds @ k_j  # (b_q, b_k) @ (b_k, d_k)
                dk_j += ds.T @ q_i  # (b_k, b_q) @ (b_q, d_k)
        dk[index][keys] = dk_j  # each (entry, key block) belongs to one task
        dv[index][keys] = dv_j
        with locks[number]:  # the entry's dq rows and row sums take every key block's share
            dq[index][r0:r1] += dq_part
            row_sums[index][r0:r1] += sums_part

    run_tasks(run, tasks, workers)
    _check_row_sums(row_sums)
    grads = []
    for name, g, a in (("dq", dq, q), ("dk", dk, k), ("dv", dv, v)):
        if not np.isfinite(g).all():
            count, where = first_true(~np.isfinite(g))
            raise ValueError(f"the gradient {name} overflows {g.dtype}: {count} entries are not "
                             f"finite, the first at index {where}; expected inputs and "
                             "grad_out whose products fit the dtype (rescale them, or use "
                             "float64)")
        grads.append(_sum_to_shape(g, a.shape).astype(out_dtype, copy=False))
    return tuple(grads)


def _raise_overflow(s: np.ndarray, index: tuple[int, ...], i0: int, j0: int) -> None:
    """Raise the ``ValueError`` of the forward pass for a tile of scores that overflowed."""
    _, (row, col) = first_true(~np.isfinite(s))
    raise ValueError(
        f"the scores q . k / sqrt(d_k) overflow {s.dtype}: the score at (..., query, key) "
        f"index {(*index, i0 + row, j0 + col)} is not finite; expected inputs whose dot "
        "products fit the dtype (rescale them, or use float64)"
    )


def _check_row_sums(row_sums: np.ndarray) -> None:
    """Raise ``ValueError`` when the recomputed weights of some row do not sum to one."""
    count, where = first_true(~(np.abs(row_sums - 1) <= _ROW_SUM_TOLERANCE[row_sums.dtype]))
    if count:  # NaN counts as bad
        raise ValueError(
            f"lse does not belong to these q and k: the weights exp(score - lse) of "
            f"{count} query row(s) do not sum to 1, the first at (..., query) index {where} "
            f"sums to {float(row_sums[where]):.6g}; expected the lse that "
            "tiled_attention(q, k, v, causal=..., window=..., return_lse=True) returned"
        )
