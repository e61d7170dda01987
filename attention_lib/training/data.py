"""The tasks' data: soft-dictionary sequences, shift-task and induction token sequences.

A batch class holds int64 arrays with the sequences on the first axis and offers
the three things the training loop asks of a data set: ``len(data)``,
``data.subset(index)`` and ``data.rows()`` (one int64 row per sequence, to tell
held-out sequences from training ones).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._validation import positive_int, positive_ints, random_generator

__all__ = ["InductionData", "RetrievalData", "ShiftData", "make_induction_data",
           "make_retrieval_data", "make_shift_data"]


def _retrieval_sizes(n_pairs: int, n_keys: int, n_values: int) -> tuple[int, int, int]:
    """The soft dictionary's sizes checked: positive ints with ``n_pairs <= n_keys``."""
    n_pairs, n_keys, n_values = positive_ints(n_pairs=n_pairs, n_keys=n_keys, n_values=n_values)
    if n_pairs > n_keys:
        raise ValueError(f"n_pairs={n_pairs} > n_keys={n_keys}; expected n_pairs <= n_keys, "
                         "since the keys of a sequence are distinct")
    return n_pairs, n_keys, n_values


def _shift_sizes(length: int, n_tokens: int, shift: int) -> tuple[int, int, int]:
    """The shift task's sizes checked: positive ints with ``shift < length``."""
    length, n_tokens, shift = positive_ints(length=length, n_tokens=n_tokens, shift=shift)
    if shift >= length:
        raise ValueError(f"shift={shift} >= length={length}; expected shift < length")
    return length, n_tokens, shift


@dataclass(frozen=True)
class RetrievalData:
    """A batch of soft-dictionary sequences (all arrays of int64).

    Attributes
    ----------
    keys : numpy.ndarray, shape (B, n_pairs)
        The stored keys of each sequence, distinct within a sequence.
    values : numpy.ndarray, shape (B, n_pairs)
        The value stored with each key.
    query : numpy.ndarray, shape (B,)
        The key the final query token names (one of the stored keys).
    target : numpy.ndarray, shape (B,)
        The position of the queried pair.
    answer : numpy.ndarray, shape (B,)
        The value to output, ``values[b, target[b]]``.
    """

    keys: np.ndarray
    values: np.ndarray
    query: np.ndarray
    target: np.ndarray
    answer: np.ndarray

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    def subset(self, index: ArrayLike) -> RetrievalData:
        """The sequences at ``index`` (an integer array or a boolean mask)."""
        return RetrievalData(self.keys[index], self.values[index], self.query[index],
                             self.target[index], self.answer[index])

    def rows(self) -> np.ndarray:
        """One row per sequence, (B, 2 n_pairs + 1): its keys, values and query."""
        return np.column_stack([self.keys, self.values, self.query])


def make_retrieval_data(
    n_sequences: int,
    *,
    n_pairs: int = 6,
    n_keys: int = 8,
    n_values: int = 8,
    rng: np.random.Generator,
) -> RetrievalData:
    r"""Draw random soft-dictionary sequences.

    Parameters
    ----------
    n_sequences : int
    n_pairs : int, default 6
        Pairs stored per sequence (at most ``n_keys``, since keys are distinct).
    n_keys, n_values : int, default 8
        Sizes of the key and value vocabularies.
    rng : numpy.random.Generator

    Returns
    -------
    RetrievalData
        Arrays of shape (n_sequences, n_pairs) and (n_sequences,).

    Notes
    -----
    Keys are drawn without replacement within a sequence, values with
    replacement, the queried position uniformly:
    :math:`\text{answer}_b = \text{values}_{b,\,\text{target}_b}`.

    Examples
    --------
    >>> data = make_retrieval_data(2, n_pairs=3, rng=np.random.default_rng(0))
    >>> data.keys.shape, data.query.shape
    ((2, 3), (2,))
    >>> bool(np.all(data.keys[np.arange(2), data.target] == data.query))
    True
    """
    n_sequences = positive_int(n_sequences, "n_sequences")
    n_pairs, n_keys, n_values = _retrieval_sizes(n_pairs, n_keys, n_values)
    rng = random_generator(rng)
    keys = np.argsort(rng.random((n_sequences, n_keys)), axis=1)[:, :n_pairs]  # (B, n_pairs)
    values = rng.integers(0, n_values, size=(n_sequences, n_pairs))  # (B, n_pairs)
    target = rng.integers(0, n_pairs, size=n_sequences)  # (B,)
    rows = np.arange(n_sequences)
    return RetrievalData(keys.astype(np.int64), values.astype(np.int64),
                         keys[rows, target].astype(np.int64), target.astype(np.int64),
                         values[rows, target].astype(np.int64))


@dataclass(frozen=True)
class ShiftData:
    """A batch of token sequences for the shift task (int64).

    Attributes
    ----------
    tokens : numpy.ndarray, shape (B, n)
    shift : int
        Position ``p`` must output ``tokens[:, p - shift]`` (for ``p >= shift``).
    """

    tokens: np.ndarray
    shift: int

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    def subset(self, index: ArrayLike) -> ShiftData:
        """The sequences at ``index``."""
        return ShiftData(self.tokens[index], self.shift)

    def rows(self) -> np.ndarray:
        """One row per sequence, (B, n): its tokens."""
        return self.tokens


def make_shift_data(
    n_sequences: int, *, length: int = 10, n_tokens: int = 8, shift: int = 2,
    rng: np.random.Generator,
) -> ShiftData:
    """Draw uniformly random token sequences for the shift task.

    Parameters
    ----------
    n_sequences : int
    length : int, default 10
        Tokens per sequence; must exceed ``shift``.
    n_tokens : int, default 8
        Vocabulary size.
    shift : int, default 2
    rng : numpy.random.Generator

    Returns
    -------
    ShiftData
        ``tokens`` of shape (n_sequences, length).

    Examples
    --------
    >>> make_shift_data(3, length=5, rng=np.random.default_rng(0)).tokens.shape
    (3, 5)
    """
    n_sequences = positive_int(n_sequences, "n_sequences")
    length, n_tokens, shift = _shift_sizes(length, n_tokens, shift)
    rng = random_generator(rng)
    tokens = rng.integers(0, n_tokens, size=(n_sequences, length)).astype(np.int64)
    return ShiftData(tokens, shift)


def _induction_sizes(length: int, vocab_size: int, min_period: int,
                     max_period: int) -> tuple[int, int, int, int]:
    """The induction task's sizes checked: ``2 <= min_period <= max_period <= length / 2``."""
    length, vocab_size = positive_ints(length=length, vocab_size=vocab_size)
    min_period = positive_int(min_period, "min_period", minimum=2,
                              what="a copy of one token predicts nothing")
    max_period = positive_int(max_period, "max_period", minimum=min_period,
                              what="at least min_period")
    if 2 * max_period > length:
        raise ValueError(f"max_period={max_period} but length={length}; expected "
                         "2 * max_period <= length, so that both copies fit")
    return length, vocab_size, min_period, max_period


@dataclass(frozen=True)
class InductionData:
    """A batch of induction sequences: random tokens with one segment written twice (int64).

    Attributes
    ----------
    tokens : numpy.ndarray, shape (B, n)
    start : numpy.ndarray, shape (B,)
        Where the first copy of the segment begins.
    period : numpy.ndarray, shape (B,)
        The segment's length ``L``, which is also the distance between its copies:
        ``tokens[b, start + L + i] == tokens[b, start + i]`` for ``0 <= i < L``.
    """

    tokens: np.ndarray
    start: np.ndarray
    period: np.ndarray

    def __len__(self) -> int:
        return int(self.tokens.shape[0])

    def subset(self, index: ArrayLike) -> InductionData:
        """The sequences at ``index``."""
        return InductionData(self.tokens[index], self.start[index], self.period[index])

    def rows(self) -> np.ndarray:
        """One row per sequence, (B, n): its tokens."""
        return self.tokens


def make_induction_data(
    n_sequences: int, *, length: int = 33, vocab_size: int = 64, min_period: int = 8,
    max_period: int = 16, rng: np.random.Generator,
) -> InductionData:
    r"""Draw random token sequences in which a random segment appears twice, back to back.

    Parameters
    ----------
    n_sequences : int
    length : int, default 33
        Tokens per sequence.
    vocab_size : int, default 64
    min_period, max_period : int, default 8 and 16
        The segment's length ``L`` is drawn uniformly from ``min_period .. max_period``
        (``2 <= min_period``, ``2 * max_period <= length``).
    rng : numpy.random.Generator

    Returns
    -------
    InductionData
        ``tokens`` of shape (n_sequences, length), ``start`` and ``period`` of shape
        (n_sequences,).

    Notes
    -----
    Every token is uniform over the vocabulary, drawn independently, except the second
    copy: with the segment's length :math:`L` and start :math:`s` (uniform over
    :math:`0 \dots n - 2L`, so random tokens come before and after the copies)

    .. math::

        x_{s + L + i} = x_{s + i}, \qquad 0 \le i < L .

    Both :math:`L` and :math:`s` change from sequence to sequence, so neither the
    distance between the copies nor their place is fixed: a head that attends by
    position alone cannot find the earlier copy.

    Examples
    --------
    >>> data = make_induction_data(2, length=12, vocab_size=9, min_period=3, max_period=5,
    ...                            rng=np.random.default_rng(0))
    >>> data.tokens.shape, data.period.tolist(), data.start.tolist()
    ((2, 12), [4, 5], [2, 0])
    >>> data.tokens[0].tolist()        # L = 4 tokens from position 2, then again
    [7, 5, 4, 2, 2, 0, 4, 2, 2, 0, 5, 8]
    """
    n_sequences = positive_int(n_sequences, "n_sequences")
    length, vocab_size, min_period, max_period = _induction_sizes(length, vocab_size,
                                                                  min_period, max_period)
    rng = random_generator(rng)
    tokens = rng.integers(0, vocab_size, size=(n_sequences, length)).astype(np.int64)
    period = rng.integers(min_period, max_period + 1, size=n_sequences).astype(np.int64)
    start = rng.integers(0, length - 2 * period + 1).astype(np.int64)  # (B,), inclusive
    cols = np.arange(length)  # (n,)
    second = (cols >= (start + period)[:, None]) & (cols < (start + 2 * period)[:, None])
    rows = np.arange(n_sequences)[:, None]  # (B, 1)
    earlier = np.clip(cols - period[:, None], 0, None)  # (B, n): the position L back
    tokens[second] = tokens[np.broadcast_to(rows, second.shape), earlier][second]
    return InductionData(tokens, start, period)


def unseen(test_rows: np.ndarray, train_rows: np.ndarray) -> np.ndarray:
    """Boolean mask of the test rows (2-D int arrays) that do not occur among the train rows."""
    seen = {row.tobytes() for row in np.ascontiguousarray(train_rows)}
    return np.array([row.tobytes() not in seen for row in np.ascontiguousarray(test_rows)],
                    dtype=bool)
