r"""Where a score is largest in a text: a neuron's or a feature's top-activating contexts.

:func:`top_activating_contexts` takes one number per position of a text (a neuron's
activation, a sparse-autoencoder feature's) and returns the positions where it is largest,
each with the text around it (:class:`Context`). It is public as part of
:mod:`attention_lib.neurons`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import as_real_array, describe, positive_int

# --------------------------------------------------------------------------- contexts


@dataclass(frozen=True)
class Context:
    """One position of a text with the text around it (an entry of
    :func:`top_activating_contexts`).

    Attributes
    ----------
    position : int
        The position ``p`` in the text (and in the values).
    value : float
        The value at ``p``.
    before, token, after : str
        The text just before ``p``, the character (or token) at ``p``, whose value this
        is, and the text just after it (shorter at the text's ends).
    """

    position: int
    value: float
    before: str
    token: str
    after: str

    def marked(self, left: str = "[", right: str = "]", newline: str | None = "↵") -> str:
        """The snippet in one line, the token between ``left`` and ``right``.

        Each newline is shown as ``newline`` (the book's ``↵``); ``None`` keeps them.

        Examples
        --------
        >>> Context(4, 1.0, "ab\\nc", "d", "ef").marked()
        'ab↵c[d]ef'
        """
        shown = self.before + left + self.token + right + self.after
        return shown if newline is None else shown.replace("\n", newline)


def _pieces(text: Any) -> str | list[str]:
    """``text`` as a str, or a list of str (one token each)."""
    if isinstance(text, str):
        return text
    if isinstance(text, Sequence) and all(isinstance(t, str) for t in text):
        return list(text)
    raise TypeError(f"text is {type(text).__name__}; expected a str (one character per "
                    "position) or a sequence of str (one token per position)")


def top_activating_contexts(values: Any, text: Any, *, k: int = 8, before: int = 30,
                            after: int = 5, min_distance: int | None = None,
                            ) -> list[Context]:
    r"""The ``k`` positions of a text with the largest values, each with the text around it.

    Parameters
    ----------
    values : array_like of real, shape (N,)
        One number per position: a neuron's activation (a column of
        :func:`~attention_lib.stream_activations` at ``"blocks.l.ff.hidden"``), a feature's,
        or any other score. Finite.
    text : str of N characters, or sequence of N str
        The text the values were read on: position ``p`` is ``text[p]`` (a character of the
        book's character-level model, or one token's string of a model with a tokenizer).
    k : int, default 8
        How many positions to return.
    before, after : int, default 30 and 5
        How many characters (tokens) of text to keep before and after each position.
    min_distance : int, optional
        The least distance between two returned positions. The default,
        ``before + after + 1``, keeps any two snippets apart (no character shown twice);
        ``1`` gives the plain top ``k``, where a neuron that fires on several neighbouring
        characters fills the list with one passage.

    Returns
    -------
    list of Context
        Largest value first (of equal values, the earlier position first); fewer than ``k``
        when the text has fewer positions far enough apart. Each :class:`Context` holds
        ``position``, ``value`` and the text: ``before + token + after ==
        text[p - before : p + after + 1]`` (clipped at the ends); :meth:`Context.marked`
        shows it in one line.

    Notes
    -----
    The positions are taken in the order of

    .. math::

        (-v_p,\ p) \quad \text{ascending},

    and a position is kept if :math:`|p - q| \ge` ``min_distance`` for every position
    :math:`q` kept before it (a greedy choice), until ``k`` are kept. A position of the
    book's model has just read ``text[p]``: its activation depends on ``text[:p + 1]``
    (within its window), never on what follows, which is shown only to help the eye.

    Examples
    --------
    >>> found = top_activating_contexts([0.0, 3.0, 1.0, 3.0, 0.5], "abcde", k=2, before=1,
    ...                                 after=1, min_distance=1)
    >>> [(c.position, c.value, c.marked()) for c in found]
    [(1, 3.0, 'a[b]c'), (3, 3.0, 'c[d]e')]
    >>> [c.position for c in top_activating_contexts([0.0, 3.0, 1.0, 3.0], "abcd", k=2)]
    [1]
    """
    v = as_real_array(values, "values")
    if v.ndim != 1:
        raise ValueError(f"values has {describe(v)}; expected one number per position, "
                         "shape (N,)")
    pieces = _pieces(text)
    if len(pieces) != v.size:
        raise ValueError(f"values has {v.size} entries but text has {len(pieces)} "
                         f"{'characters' if isinstance(pieces, str) else 'tokens'}; expected "
                         "one value per position of the text")
    k = positive_int(k, "k")
    before = positive_int(before, "before", minimum=0)
    after = positive_int(after, "after", minimum=0)
    spacing = (before + after + 1 if min_distance is None
               else positive_int(min_distance, "min_distance"))
    order = np.lexsort((np.arange(v.size), -v.astype(np.float64)))  # (-value, position)
    chosen: list[int] = []
    for p in order.tolist():
        if all(abs(p - q) >= spacing for q in chosen):
            chosen.append(p)
            if len(chosen) == k:
                break

    def join(part: str | list[str]) -> str:
        return part if isinstance(part, str) else "".join(part)

    return [Context(p, float(v[p]), join(pieces[max(p - before, 0):p]), join(pieces[p]),
                    join(pieces[p + 1:p + 1 + after])) for p in chosen]
