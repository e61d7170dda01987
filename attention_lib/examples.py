"""The fixed numbers of the two source texts, as data.

Arrays are read-only so that a chapter cannot change them by accident for the
chapters that follow; call ``.copy()`` to experiment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "WalkthroughExample",
    "CorefExample",
    "cat_sat_on",
    "coreference",
    "SATURATION_SCORES",
    "SATURATION_PRINTED",
]


def _frozen(rows: list | np.ndarray) -> np.ndarray:
    a = np.array(rows, dtype=np.float64)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class WalkthroughExample:
    """The 4-word walkthrough: embeddings and the three projection matrices."""

    tokens: tuple[str, ...]
    x: np.ndarray  # (n, d_model) = (4, 4)
    w_q: np.ndarray  # (d_model, d_k) = (4, 3)
    w_k: np.ndarray  # (d_model, d_k) = (4, 3)
    w_v: np.ndarray  # (d_model, d_v) = (4, 3)


@dataclass(frozen=True)
class CorefExample:
    """The coreference sentence with the scores and weights the text prints for "it"."""

    tokens: tuple[str, ...]
    query: str
    raw_scores: np.ndarray  # (n,), as printed
    printed_weights: np.ndarray  # (n,), as printed (rounded to 2 decimals)


def cat_sat_on() -> WalkthroughExample:
    """The "The cat sat on" example: X (4 x 4), W_Q, W_K, W_V (4 x 3 each).

    Examples
    --------
    >>> ex = cat_sat_on()
    >>> ex.tokens
    ('The', 'cat', 'sat', 'on')
    >>> ex.x.shape, ex.w_q.shape, ex.w_k.shape, ex.w_v.shape
    ((4, 4), (4, 3), (4, 3), (4, 3))
    """
    # Row i of W_Q, W_K and W_V side by side: shape (d_model, 3, d_k) = (4, 3, 3).
    w_rows = np.array([
        # W_Q              W_K              W_V
        [[0.1, 0.0, 0.2], [0.3, 0.1, 0.0], [0.2, 0.1, 0.3]],
        [[0.0, 0.3, 0.1], [0.1, 0.2, 0.1], [0.1, 0.3, 0.1]],
        [[0.2, 0.1, 0.0], [0.0, 0.1, 0.3], [0.3, 0.0, 0.2]],
        [[0.1, 0.2, 0.3], [0.2, 0.0, 0.2], [0.0, 0.2, 0.1]],
    ])
    w_q, w_k, w_v = (_frozen(w_rows[:, j]) for j in range(3))  # (4, 3) each
    return WalkthroughExample(
        tokens=("The", "cat", "sat", "on"),
        x=_frozen([
            [0.1, 0.2, 0.3, 0.4],
            [0.5, 0.1, 0.8, 0.2],
            [0.3, 0.7, 0.2, 0.6],
            [0.4, 0.3, 0.5, 0.1],
        ]),
        w_q=w_q, w_k=w_k, w_v=w_v,
    )


def coreference() -> CorefExample:
    """The sentence "The animal didn't cross the street because it was too tired".

    ``raw_scores`` and ``printed_weights`` are the two columns the text prints
    for the query "it". The weights are *not* the softmax of the scores (the
    first chapter shows both).

    Examples
    --------
    >>> ex = coreference()
    >>> len(ex.tokens), ex.tokens[ex.tokens.index(ex.query)]
    (11, 'it')
    >>> float(ex.printed_weights.sum())
    1.0
    """
    return CorefExample(
        tokens=("The", "animal", "didn't", "cross", "the", "street",
                "because", "it", "was", "too", "tired"),
        query="it",
        raw_scores=_frozen([0.32, 2.14, 0.18, 0.55, 0.28, 1.02, 0.21, 1.15, 0.41, 0.38, 1.08]),
        printed_weights=_frozen([0.02, 0.43, 0.01, 0.04, 0.02, 0.12, 0.02, 0.15, 0.03, 0.03,
                                 0.13]),
    )


#: The saturation example's scores; the text multiplies them by 10.
SATURATION_SCORES = _frozen([0.5, 0.3, 0.1, 0.2])

#: The softmax values the text prints for the scores and for ten times the scores.
SATURATION_PRINTED = {
    1.0: _frozen([0.357, 0.293, 0.254, 0.281]),
    10.0: _frozen([0.999, 0.000, 0.000, 0.000]),
}
