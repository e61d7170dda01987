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

__all__ = ["BPETokenizer", "bits_per_character", "tokenizer_comparison", "train_bpe"]

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


COMPARISON_FILE = "tokens_comparison.json"


def bits_per_character(params: dict[str, np.ndarray], config: Any, ids: Any,
                       tokenizer: Any) -> float:
    r"""A language model's loss on a token stream, in bits per character of its text.

    Nats per token are not comparable across tokenizers: a token of a larger vocabulary
    holds more text. Every token but the first is predicted once
    (:func:`~attention_lib.sequence_loss`), so the total is that loss times
    :math:`N - 1` nats for the characters those tokens spell,

    .. math:: \text{bits per character} = \frac{(N - 1)\,\bar\ell}
              {\ln 2 \cdot \lvert\operatorname{decode}(t_2 \dots t_N)\rvert}.

    Parameters
    ----------
    params, config
        A GPT and its :class:`~attention_lib.GPTConfig`.
    ids : array_like of int, shape (N,)
        The token stream (``N >= 2``).
    tokenizer
        Anything with ``decode(ids) -> str``: a :class:`BPETokenizer` or a
        :class:`~attention_lib.CharTokenizer`.

    Examples
    --------
    >>> import attention_lib as al
    >>> tok = al.train_bpe("abababab", 4)
    >>> config = al.GPTConfig(tok.vocab_size, 4, 8, 1, 2)
    >>> params = al.init_gpt(config, dtype=np.float64)   # nearly uniform: log2(4) per token
    >>> ids = tok.encode("abababab")                    # 2 tokens of 4 characters
    >>> round(bits_per_character(params, config, ids, tok), 1)   # 2 bits for 4 characters
    0.5
    """
    from .gpt.train import sequence_loss

    ids = np.asarray(ids)
    if ids.ndim != 1 or ids.size < 2:
        raise ValueError(f"ids has shape {ids.shape}; expected a stream of at least 2 tokens")
    characters = len(tokenizer.decode(ids[1:]))
    nats = sequence_loss(params, config, ids) * (ids.size - 1)
    return float(nats / (np.log(2.0) * characters))


def tokenizer_comparison() -> dict[str, Any]:
    """The stored run that trains a character model and a BPE model with the same compute.

    Read from the package's data (``attention_lib/data/tokens_comparison.json``, written by
    ``tools/tokens_comparison.py``; the test suite replays each run's first steps and
    checks them against the file).

    Returns
    -------
    dict
        ``settings`` (the model sizes and training settings both runs share), ``runs``
        (one dict per tokenizer, ``"characters"`` and ``"bpe"``: ``vocab_size``,
        ``train_tokens``, ``val_tokens``, ``val_characters``, ``characters_per_token``,
        ``val_loss_nats_per_token`` and ``val_bits_per_character`` over the whole
        validation text, and the training ``log``), the ``cpu`` and the ``seconds`` taken.

    Examples
    --------
    >>> run = tokenizer_comparison()
    >>> sorted(run["runs"])
    ['bpe', 'characters']
    """
    import json
    from importlib import resources

    text = resources.files("attention_lib").joinpath("data", COMPARISON_FILE).read_text("utf-8")
    return json.loads(text)
