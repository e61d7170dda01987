"""Checking a reader's answer to an exercise.

Every exercise in the book has a cell that belongs to the reader: it starts
with ``answer = None`` and ends with :func:`check_answer`, which prints one of
``not answered yet``, ``correct`` or ``not quite: <hint>``. The worked
solution sits below it, hidden behind a click.

>>> check_answer(None, 16)
not answered yet
>>> check_answer(16.0, 16)
correct
>>> check_answer(15, 16, hint="count the pairs")
not quite: count the pairs
>>> check_answer("Cat ", "cat")
correct
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["answer_verdict", "check_answer"]

NOT_ANSWERED = "not answered yet"
CORRECT = "correct"


def _not_quite(hint: str, detail: str = "") -> str:
    parts = [p for p in (detail, hint) if p]
    return "not quite" + (": " + "; ".join(parts) if parts else "")


def answer_verdict(
    answer: Any,
    expected: Any,
    *,
    hint: str = "",
    rtol: float = 1e-6,
    atol: float = 1e-9,
) -> str:
    """The verdict on ``answer`` as a string (what :func:`check_answer` prints).

    Parameters
    ----------
    answer : object
        The reader's answer. ``None`` (or ``...``) means not answered yet.
    expected : object
        The right answer. A string is compared case-insensitively after
        stripping spaces; a bool, a set or a tuple/list of strings exactly;
        a number or an array numerically, within ``rtol`` and ``atol``
        (an array must also have the expected shape).
    hint : str
        Shown after "not quite: " when the answer is wrong.
    rtol, atol : float
        Tolerances of the numerical comparison (``numpy.allclose``).

    Returns
    -------
    str
        ``"not answered yet"``, ``"correct"`` or ``"not quite: ..."``.
    """
    if answer is None or answer is Ellipsis:
        return NOT_ANSWERED
    if isinstance(expected, str):
        if not isinstance(answer, str):
            return _not_quite(hint, f"expected a word or phrase, got {type(answer).__name__}")
        ok = " ".join(answer.split()).casefold() == " ".join(expected.split()).casefold()
        return CORRECT if ok else _not_quite(hint)
    if isinstance(expected, (bool, np.bool_)):
        if not isinstance(answer, (bool, np.bool_)):
            return _not_quite(hint, "expected True or False")
        return CORRECT if bool(answer) == bool(expected) else _not_quite(hint)
    if isinstance(expected, (set, frozenset)):
        return CORRECT if set(answer) == set(expected) else _not_quite(hint)
    if isinstance(expected, (tuple, list)) and any(isinstance(e, str) for e in expected):
        return CORRECT if tuple(answer) == tuple(expected) else _not_quite(hint)
    try:
        got = np.asarray(answer, dtype=float)
    except (TypeError, ValueError):
        return _not_quite(hint, f"expected a number or an array, got {type(answer).__name__}")
    want = np.asarray(expected, dtype=float)
    if got.shape != want.shape:
        return _not_quite(hint, f"expected shape {want.shape}, got {got.shape}")
    if not np.all(np.isfinite(got)):
        return _not_quite(hint, "the answer contains inf or nan")
    ok = np.allclose(got, want, rtol=rtol, atol=atol)
    return CORRECT if ok else _not_quite(hint)


def check_answer(
    answer: Any,
    expected: Any,
    *,
    hint: str = "",
    rtol: float = 1e-6,
    atol: float = 1e-9,
) -> None:
    """Print whether the reader's ``answer`` matches ``expected``.

    Prints ``not answered yet`` when ``answer`` is ``None``, ``correct`` when
    it matches and ``not quite: <hint>`` otherwise. See :func:`answer_verdict`
    for how answers are compared.
    """
    print(answer_verdict(answer, expected, hint=hint, rtol=rtol, atol=atol))
