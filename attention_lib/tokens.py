r"""Byte-pair encoding (BPE) from scratch: a vocabulary of merged character pairs.

A character model reads one character per position. Byte-pair encoding, the start of
every large language model's tokenizer, learns a vocabulary of longer pieces from the
training text by merging the most frequent adjacent pair again and again, so that the same
text takes fewer positions. :func:`train_bpe` learns the merges; the
:class:`BPETokenizer` it returns encodes and decodes with them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._validation import positive_int

__all__ = ["BPETokenizer", "train_bpe"]

# Pair counts go into a table of vocab_size**2 bins while it is this small; past it, sorting.
_BINCOUNT_LIMIT = 1 << 24


def _merge(ids: np.ndarray, first: int, second: int, new_id: int) -> np.ndarray:
    """Every occurrence of the pair ``(first, second)`` in ``ids`` replaced by ``new_id``,
    scanning left to right: in a run such as ``a a a`` under the pair ``(a, a)`` the first
    two merge and the third stays."""
    if ids.size < 2:
        return ids
    starts = np.flatnonzero((ids[:-1] == first) & (ids[1:] == second))
    if starts.size == 0:
        return ids
    if first == second:  # occurrences can overlap: keep every other one within a run
        run_break = np.ones(starts.size, dtype=bool)
        run_break[1:] = np.diff(starts) != 1
        run_start = np.maximum.accumulate(np.where(run_break, np.arange(starts.size), 0))
        starts = starts[(np.arange(starts.size) - run_start) % 2 == 0]
    out = ids.copy()
    out[starts] = new_id
    return np.delete(out, starts + 1)


def _most_frequent_pair(ids: np.ndarray, n_ids: int) -> tuple[int, int] | None:
    """The most frequent adjacent pair (overlapping occurrences count); the smallest pair
    (first id, then second) among equals. None when ``ids`` has no pair."""
    if ids.size < 2:
        return None
    codes = ids[:-1].astype(np.int64) * n_ids + ids[1:]
    if n_ids * n_ids <= _BINCOUNT_LIMIT:
        counts = np.bincount(codes, minlength=n_ids * n_ids)
        best = int(np.argmax(counts))  # the first maximum: the smallest code, the smallest pair
    else:
        values, counts = np.unique(codes, return_counts=True)  # sorted codes
        best = int(values[np.argmax(counts)])
    return best // n_ids, best % n_ids


class BPETokenizer:
    r"""A byte-pair-encoding tokenizer: a base alphabet and the merges learned on a text.

    Made by :func:`train_bpe`. Token ids ``0 .. len(alphabet) - 1`` are the alphabet's
    characters in sorted order; id ``len(alphabet) + k`` is the ``k``-th merge's pair.

    Attributes
    ----------
    alphabet : str
        The training text's distinct characters, sorted.
    merges : list of tuple of int
        The merged pairs of ids, in the order they were learned.
    vocab_size : int
        ``len(alphabet) + len(merges)``.

    Examples
    --------
    >>> tok = train_bpe("low lower lowest", 12)
    >>> [tok.piece(i) for i in tok.encode("lower")]
    ['low', 'e', 'r']
    >>> tok.decode(tok.encode("lowest low"))
    'lowest low'
    """

    def __init__(self, alphabet: str, merges: list[tuple[int, int]]) -> None:
        self.alphabet = alphabet
        self.merges = [(int(a), int(b)) for a, b in merges]
        self._index = {ch: i for i, ch in enumerate(alphabet)}
        self._pieces = list(alphabet)
        for a, b in self.merges:
            self._pieces.append(self._pieces[a] + self._pieces[b])

    @property
    def vocab_size(self) -> int:
        return len(self._pieces)

    def __repr__(self) -> str:
        return (f"BPETokenizer(vocab_size={self.vocab_size}, alphabet={len(self.alphabet)} "
                f"characters, merges={len(self.merges)})")

    def piece(self, token_id: int) -> str:
        """The text of one token id."""
        if not isinstance(token_id, (int, np.integer)) or not 0 <= token_id < self.vocab_size:
            raise ValueError(f"token id {token_id!r} is not in 0 .. {self.vocab_size - 1}")
        return self._pieces[int(token_id)]

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text``: its characters' ids, then every merge in the order it
        was learned, each applied left to right. Raises ``ValueError`` naming a character
        the training text did not have."""
        if not isinstance(text, str):
            raise TypeError(f"text is {type(text).__name__}; expected a str")
        unknown = sorted(set(text) - self._index.keys())
        if unknown:
            raise ValueError(f"characters not in the training text: {unknown!r}")
        ids = np.array([self._index[ch] for ch in text], dtype=np.int64)
        for k, (a, b) in enumerate(self.merges):
            ids = _merge(ids, a, b, len(self.alphabet) + k)
        return ids.tolist()

    def decode(self, ids: Any) -> str:
        """The text of a sequence of token ids: their pieces, concatenated."""
        return "".join(self.piece(i) for i in ids)


def train_bpe(text: str, vocab_size: int) -> BPETokenizer:
    r"""Learn byte-pair-encoding merges on ``text`` until the vocabulary has ``vocab_size`` ids.

    Parameters
    ----------
    text : str
        The training text (at least one character).
    vocab_size : int
        The size of the vocabulary to reach, at least the number of distinct characters.

    Returns
    -------
    BPETokenizer
        Fewer than ``vocab_size`` ids only when the text is merged into a single token
        before that.

    Notes
    -----
    The rule, exactly:

    1. The base vocabulary is the sorted distinct characters of ``text``, with ids
       ``0, 1, ...`` in that order; the text becomes their ids.
    2. Each step counts every adjacent pair of ids in the current sequence (overlapping
       occurrences count: ``a a a`` holds the pair ``(a, a)`` twice), takes the most
       frequent pair, breaking ties by the smallest pair (first id, then second), and
       replaces it everywhere, left to right, by the next new id (in ``a a a`` the first two
       merge).
    3. Encoding applies the learned merges in the order they were learned; decoding
       concatenates the pieces.

    Examples
    --------
    >>> tok = train_bpe("aaabdaaabac", 7)
    >>> tok.alphabet, tok.merges
    ('abcd', [(0, 0), (0, 1), (4, 5)])
    >>> [tok.piece(i) for i in tok.encode("aaabdaaabac")]
    ['aaab', 'd', 'aaab', 'a', 'c']
    """
    if not isinstance(text, str):
        raise TypeError(f"text is {type(text).__name__}; expected a str")
    if not text:
        raise ValueError("text is empty; BPE learns its alphabet and merges from it")
    alphabet = "".join(sorted(set(text)))
    vocab_size = positive_int(vocab_size, "vocab_size")
    if vocab_size < len(alphabet):
        raise ValueError(f"vocab_size={vocab_size} is smaller than the text's "
                         f"{len(alphabet)} distinct characters")
    index = {ch: i for i, ch in enumerate(alphabet)}
    ids = np.array([index[ch] for ch in text], dtype=np.int64)
    merges: list[tuple[int, int]] = []
    for new_id in range(len(alphabet), vocab_size):
        found = _most_frequent_pair(ids, vocab_size)
        if found is None:
            break
        a, b = found
        merges.append((a, b))
        ids = _merge(ids, a, b, new_id)
    return BPETokenizer(alphabet, merges)
