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
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from ._validation import index_array, real_number

__all__ = ["CharTokenizer", "shakespeare_split", "shakespeare_text"]

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
        moves forward to the start of the next speech.

    Returns
    -------
    (str, str)
        The two parts; together they are the whole corpus.

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
    cut = text.find("\n\n", int(len(text) * (1.0 - fraction))) + 2  # the next speech
    return text[:cut], text[cut:]


@dataclass(frozen=True)
class CharTokenizer:
    """Characters to integer ids and back.

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
