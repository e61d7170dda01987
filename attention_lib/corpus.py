r"""The book's text: Shakespeare's plays as characters, and the tokens a model reads.

The corpus ships with the package (``data/shakespeare.txt.gz``, about 1.1 million
characters of nine plays, public domain; ``tools/make_corpus.py`` says where the text comes
from and how it was cleaned). Every speech is a ``Speaker:`` line followed by its lines, and
speeches are separated by a blank line. Models read it one character at a time: the
vocabulary is the set of characters in the corpus, each with an integer id.

The split is by position: the first 90 % of the characters (cut at the start of a speech)
are for training, the rest for validation, text a model trained on the first part has never
seen.
"""

from __future__ import annotations

import gzip
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from ._validation import index_array, positive_int, real_number

__all__ = ["CharTokenizer", "ngram_loss", "shakespeare_split", "shakespeare_text"]

VALIDATION_FRACTION = 0.1


@lru_cache(maxsize=1)
def shakespeare_text() -> str:
    """The whole corpus as one string.

    Returns
    -------
    str
        About 1.1 million printable ASCII characters and newlines.

    Examples
    --------
    >>> text = shakespeare_text()
    >>> text[:9]
    'Bernardo:'
    """
    data = resources.files("attention_lib").joinpath("data", "shakespeare.txt.gz").read_bytes()
    return gzip.decompress(data).decode("ascii")


def shakespeare_split(validation_fraction: float = VALIDATION_FRACTION) -> tuple[str, str]:
    """The corpus cut in two by position: ``(train, validation)``.

    Parameters
    ----------
    validation_fraction : float, default 0.1
        Roughly the share of characters for validation, ``0 < fraction < 1``; the cut
        moves forward to the start of the next speech, so training holds at least the
        first speech. A fraction smaller than the share of the last speech (about
        0.00024) would leave no speech for validation and is refused.

    Returns
    -------
    (str, str)
        The two parts, each of whole speeches; together they are the whole corpus.

    Raises
    ------
    ValueError
        When ``validation_fraction`` is outside ``0 < fraction < 1`` or leaves no
        speech for validation (the message names a fraction large enough).

    Examples
    --------
    >>> train, validation = shakespeare_split()
    >>> round(len(validation) / (len(train) + len(validation)), 2), validation[:6]
    (0.1, 'Romeo:')
    """
    fraction = real_number(validation_fraction, "validation_fraction", minimum=0.0,
                           maximum=1.0, strict_minimum=True)
    if fraction == 1.0:
        raise ValueError("validation_fraction=1.0 leaves no training text; expected < 1")
    text = shakespeare_text()
    gap = text.find("\n\n", int(len(text) * (1.0 - fraction)))  # before the next speech
    if gap < 0 or gap + 2 >= len(text):  # no speech starts after the cut
        last = text.rfind("\n\n")  # a fraction >= (len - last) / len cuts there or before
        smallest = math.ceil((len(text) - last) / len(text) * 1e5) / 1e5
        raise ValueError(
            f"validation_fraction={validation_fraction!r} leaves no speech for validation: "
            f"the last speech is {len(text) - last - 2} of the corpus's {len(text)} "
            f"characters; expected a validation_fraction of at least {smallest}"
        )
    return text[:gap + 2], text[gap + 2:]


@dataclass(frozen=True)
class CharTokenizer:
    """Characters to integer ids and back.

    The id of a character is its position in ``alphabet``.

    Parameters
    ----------
    alphabet : str
        The vocabulary, one character per id, in order (no character twice).

    Examples
    --------
    >>> tok = CharTokenizer.from_text("hello")
    >>> tok.alphabet, tok.encode("hole").tolist(), tok.decode([3, 2, 0])
    ('ehlo', [1, 3, 2, 0], 'ole')
    """

    alphabet: str

    def __post_init__(self) -> None:
        if not isinstance(self.alphabet, str) or not self.alphabet:
            raise TypeError(f"alphabet={self.alphabet!r}; expected a non-empty string")
        if len(set(self.alphabet)) != len(self.alphabet):
            raise ValueError("alphabet has a character twice; expected each once")

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """The tokenizer whose alphabet is the sorted set of ``text``'s characters."""
        if not isinstance(text, str) or not text:
            raise TypeError(f"text={text!r:.40}; expected a non-empty string")
        return cls("".join(sorted(set(text))))

    @property
    def vocab_size(self) -> int:
        """Number of ids."""
        return len(self.alphabet)

    def encode(self, text: str) -> np.ndarray:
        """``text`` as an int64 array of ids; a character outside the alphabet is an error."""
        if not isinstance(text, str):
            raise TypeError(f"text is {type(text).__name__}; expected a str")
        table = {c: i for i, c in enumerate(self.alphabet)}
        unknown = sorted(set(text) - table.keys())
        if unknown:
            raise ValueError(f"text has characters outside the alphabet: {unknown}; expected "
                             f"only {self.alphabet!r}")
        return np.fromiter((table[c] for c in text), dtype=np.int64, count=len(text))

    def decode(self, tokens: Any) -> str:
        """Ids back to text; an id outside ``0 .. vocab_size - 1`` is an error."""
        if np.size(tokens) == 0 and np.ndim(tokens) == 1:
            return ""
        t = index_array(tokens, self.vocab_size, "tokens", ndim=1)  # no id wrapped
        return "".join(self.alphabet[i] for i in t)


def ngram_loss(train_tokens: Any, eval_tokens: Any, vocab_size: int, *, n: int = 2,
               alpha: float = 1.0) -> float:
    r"""Nats per token of a counting model: the next token from the ``n - 1`` before it.

    The baseline a language model must beat. Counts come from ``train_tokens``, every
    count gets ``alpha`` added (so an unseen pair is unlikely, not impossible), and the
    loss is measured on ``eval_tokens``.

    Parameters
    ----------
    train_tokens, eval_tokens : array_like of int, shape (N,)
        Token ids in ``0 .. vocab_size - 1``; ``eval_tokens`` longer than ``n - 1``.
    vocab_size : int
    n : int, default 2
        1: how often each token occurs (unigram); 2: which token follows which (bigram);
        3: which follows each pair (trigram).
    alpha : float, default 1.0
        Added to every count (add-alpha smoothing), > 0.

    Returns
    -------
    float
        The mean of :math:`-\ln p(t_i \mid t_{i-n+1} \dots t_{i-1})` over every token of
        ``eval_tokens`` after its first ``n - 1`` (the probability is in Notes).

    Notes
    -----
    .. math::

        p(t \mid c) = \frac{\operatorname{count}(c, t) + \alpha}
                           {\operatorname{count}(c) + \alpha V} .

    Examples
    --------
    >>> train, held = [0, 1, 0, 1, 0, 1], [0, 1, 0]
    >>> round(ngram_loss(train, held, 2, n=2, alpha=0.5), 3)  # -(ln(3.5/4) + ln(2.5/3)) / 2
    0.158
    """
    V = positive_int(vocab_size, "vocab_size")
    n = positive_int(n, "n")
    if n > 3:
        raise ValueError(f"n={n}; expected 1, 2 or 3 (a table of V**(n-1) rows)")
    alpha = real_number(alpha, "alpha", minimum=0.0, strict_minimum=True)
    train = index_array(train_tokens, V, "train_tokens", ndim=1)
    held = index_array(eval_tokens, V, "eval_tokens", ndim=1)
    if held.size < n:
        raise ValueError(f"eval_tokens has {held.size} tokens; expected at least n={n}")

    def contexts(t: np.ndarray) -> np.ndarray:  # each position's n - 1 predecessors, as one id
        c = np.zeros(t.size - n + 1, dtype=np.int64)
        for j in range(n - 1):
            c = c * V + t[j:t.size - n + 1 + j]
        return c

    counts = np.zeros((V ** (n - 1), V))  # (contexts, next token)
    if train.size >= n:
        np.add.at(counts, (contexts(train), train[n - 1:]), 1.0)
    counts += alpha
    log_p = np.log(counts) - np.log(counts.sum(axis=1, keepdims=True))
    return float(-log_p[contexts(held), held[n - 1:]].mean())
