"""Boolean masks for batches of sequences of different lengths.

The causal mask lives in :mod:`attention_lib.attention` (``causal_mask``); the
sliding window here is the causal mask cut to the last ``window`` keys.
Every mask in the library uses one convention: True means "this query may
attend to this key" (as in PyTorch's ``scaled_dot_product_attention``).

Dimension letters used in the shape comments:

- ``batch``  number of sequences in the batch
- ``n``      padded length (every sequence is padded to ``n`` positions)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._validation import check_causal_sizes, describe, positive_int, positive_ints

__all__ = ["causal_tile_kinds", "padding_mask", "sliding_window_mask"]


def padding_mask(lengths: ArrayLike, n: int) -> np.ndarray:
    r"""Boolean padding mask: True at the real tokens of each padded sequence.

    Parameters
    ----------
    lengths : array_like of int, shape (batch,)
        The true length of each sequence, each in ``0 .. n``.
    n : int
        The padded length, at least 1.

    Returns
    -------
    numpy.ndarray of bool, shape (batch, n)
        Row ``b`` is True at positions ``0 .. lengths[b] - 1`` and False at
        the padding positions after them.

    Notes
    -----
    .. math:: P_{bj} = [\, j < \ell_b \,],

    where :math:`\ell_b` is the length of sequence :math:`b`. To hide padded
    *keys* from every query, insert a query axis and pass it as ``mask`` to
    :func:`~attention_lib.scaled_dot_product_attention`:
    ``padding_mask(lengths, n)[:, None, :]`` has shape ``(batch, 1, n)`` and
    broadcasts over the queries (with a heads axis:
    ``[:, None, None, :]``). A padded *query* row is not hidden by this: it
    still sees the real keys and gets ordinary weights. A sequence of length
    0 leaves its queries with no key at all, so attention applies its
    ``fully_masked`` policy to them.

    Examples
    --------
    >>> padding_mask([4, 2, 3], 4).astype(int)
    array([[1, 1, 1, 1],
           [1, 1, 0, 0],
           [1, 1, 1, 0]])
    >>> padding_mask([1, 3], 3)[:, None, :].shape    # a key-padding mask
    (2, 1, 3)
    """
    n = positive_int(n, "n", what="the padded length")
    if lengths is None:
        raise TypeError("lengths is None; expected a 1-D array of integers")
    lens = np.asarray(lengths)
    if lens.ndim != 1 or lens.shape[0] == 0:
        raise ValueError(
            f"lengths has {describe(lens)}; expected a non-empty 1-D array, one length "
            "per sequence"
        )
    if lens.dtype == np.bool_ or not np.issubdtype(lens.dtype, np.integer):
        raise TypeError(
            f"lengths has dtype {lens.dtype}; expected integers (one length per sequence)"
        )
    bad = (lens < 0) | (lens > n)
    if bad.any():
        b = int(np.argmax(bad))
        raise ValueError(
            f"lengths[{b}]={int(lens[b])} is outside 0..n={n}; expected every length "
            "between 0 and the padded length n"
        )
    positions = np.arange(n)  # (n,)
    return positions[None, :] < lens[:, None]  # (1, n) < (batch, 1) -> (batch, n)


def sliding_window_mask(n_q: int, n_k: int, window: int) -> np.ndarray:
    r"""Boolean sliding-window mask: True where query ``i`` may attend to key ``j``.

    Parameters
    ----------
    n_q, n_k : int
        Numbers of queries (rows) and keys (columns), ``1 <= n_q <= n_k``, as in
        :func:`~attention_lib.causal_mask` (``n_k`` has no default here).
    window : int
        How many keys a query sees at most: its own position and the ``window - 1``
        before it. At least 1.

    Returns
    -------
    numpy.ndarray of bool, shape (n_q, n_k)
        The causal mask with the keys older than the window set to False; every row
        keeps at least its own key.

    Notes
    -----
    Aligned like :func:`~attention_lib.causal_mask`: the queries are the *last*
    ``n_q`` of the ``n_k`` positions, so query ``i`` sits at position
    :math:`p_i = i + n_k - n_q`, and

    .. math:: M_{ij} = [\, j \le p_i \,] \wedge [\, p_i - j < w \,].

    Every row keeps its own position, so no query is left without a key. With
    :math:`w \ge n_k` this is the causal mask; with :math:`w = 1` each query sees
    only its own key. Mistral 7B attends through such a band (:math:`w = 4096`).

    Examples
    --------
    >>> sliding_window_mask(4, 4, 2).astype(int)
    array([[1, 0, 0, 0],
           [1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])
    >>> sliding_window_mask(2, 4, 2).astype(int)    # the last 2 of 4 positions
    array([[0, 1, 1, 0],
           [0, 0, 1, 1]])
    """
    n_q, n_k = positive_ints(n_q=n_q, n_k=n_k)
    window = positive_int(window, "window", what="the number of keys a query sees")
    check_causal_sizes(n_q, n_k)
    # Query i is at position i + (n_k - n_q): keys j <= that position and > it minus window.
    causal = np.tri(n_q, n_k, k=n_k - n_q, dtype=bool)
    too_old = np.tri(n_q, n_k, k=n_k - n_q - window, dtype=bool)
    return causal & ~too_old


def causal_tile_kinds(n_q: int, n_k: int | None = None, *, block_q: int,
                      block_k: int | None = None, window: int | None = None) -> np.ndarray:
    r"""What a tiled causal pass does with each tile: ``"full"``, ``"diagonal"`` or ``"skipped"``.

    Parameters
    ----------
    n_q : int
        Number of queries, at least 1.
    n_k : int, optional
        Number of keys (default ``n_q``), at least ``n_q``; the queries are the last
        ``n_q`` positions, as in :func:`~attention_lib.causal_mask`.
    block_q, block_k : int
        Tile height (queries) and width (keys, default ``block_q``), at least 1.
    window : int, optional
        Classify the tiles of the band of :func:`sliding_window_mask` instead: tiles
        too far in the past are skipped too, and those the band's lower edge crosses
        are partial (called ``"diagonal"`` like the others).

    Returns
    -------
    numpy.ndarray of str, shape (ceil(n_q / block_q), ceil(n_k / block_k))
        ``"full"`` where every query of the tile may see every key (computed with no
        mask), ``"diagonal"`` where only some may (computed, then the future masked),
        ``"skipped"`` where none may (never computed).

    Notes
    -----
    Tile :math:`(I, J)` covers queries :math:`i \in [I b_q, (I+1) b_q)` and keys
    :math:`j \in [J b_k, (J+1) b_k)`; with the mask :math:`M` of
    :func:`~attention_lib.causal_mask` (or :func:`sliding_window_mask`) it is full when
    :math:`M` is all True on it, skipped when all False, diagonal otherwise. With a
    window of :math:`w` keys a row of tiles meets about :math:`w / b_k + 2` tiles,
    however long the sequence.

    Examples
    --------
    >>> causal_tile_kinds(4, block_q=2)
    array([['diagonal', 'skipped'],
           ['full', 'diagonal']], dtype='<U8')
    >>> causal_tile_kinds(6, block_q=2, window=2)
    array([['diagonal', 'skipped', 'skipped'],
           ['diagonal', 'diagonal', 'skipped'],
           ['skipped', 'diagonal', 'diagonal']], dtype='<U8')
    """
    from .attention import causal_mask

    n_q = positive_int(n_q, "n_q")
    n_k = n_q if n_k is None else positive_int(n_k, "n_k")
    block_q = positive_int(block_q, "block_q")
    block_k = block_q if block_k is None else positive_int(block_k, "block_k")
    if window is None:
        visible = causal_mask(n_q, n_k)  # (n_q, n_k), True = may attend
    else:
        visible = sliding_window_mask(n_q, n_k, window)  # (n_q, n_k), True = may attend
    rows = range(0, n_q, block_q)
    cols = range(0, n_k, block_k)
    kinds = np.empty((len(rows), len(cols)), dtype="<U8")
    for a, i0 in enumerate(rows):
        for b, j0 in enumerate(cols):
            tile = visible[i0:i0 + block_q, j0:j0 + block_k]  # (block_q, block_k) or less
            kinds[a, b] = "full" if tile.all() else "diagonal" if tile.any() else "skipped"
    return kinds
