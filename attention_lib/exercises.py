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

from fractions import Fraction
from typing import Any

import numpy as np

from ._validation import real_number

__all__ = ["answer_verdict", "check_answer"]

NOT_ANSWERED = "not answered yet"
CORRECT = "correct"


def _not_quite(hint: str, detail: str = "") -> str:
    parts = [p for p in (detail, hint) if p]
    return "not quite" + (": " + "; ".join(parts) if parts else "")


def _kind(x: Any) -> str:
    """What ``x`` is, for a verdict: ``the string 'abc'``, ``True``, ``int``, ..."""
    if isinstance(x, str):
        return f"the string {x!r}"
    if isinstance(x, bool | np.bool_):
        return str(bool(x))
    return type(x).__name__


def _has_bool(x: Any) -> bool:
    """Whether ``x`` is, or (in nested lists and tuples) holds, a bool or a boolean array."""
    if isinstance(x, bool | np.bool_):
        return True
    if isinstance(x, np.ndarray):
        return x.dtype == np.bool_
    return isinstance(x, list | tuple) and any(_has_bool(e) for e in x)


def _numbers(x: Any) -> np.ndarray | str:
    """``x`` as a float64 array, or what stops it being numbers (for a verdict)."""
    if isinstance(x, str | bytes) or _has_bool(x):
        return f"expected a number or numbers, got {_kind(x)}"
    try:
        a = np.asarray(x)
    except ValueError:  # ragged nested lists
        return f"expected a number or a rectangular array, got a ragged {_kind(x)}"
    if a.dtype.kind == "c":
        if np.any(a.imag != 0):
            return "the answer has an imaginary part; expected real numbers"
        a = a.real
    if a.dtype.kind in "USVmM":  # strings, bytes, records, dates and time spans
        return f"expected a number or numbers, got {_kind(x)} of dtype {a.dtype}"
    if a.dtype.kind == "O":  # huge integers, or a mix of things
        try:
            a = a.astype(np.float64)
        except OverflowError:
            return "the answer is too large for a float (beyond 1.8e308)"
        except (TypeError, ValueError):
            return f"expected a number or an array of numbers, got {_kind(x)}"
    return a.astype(np.float64, copy=False)


def _is_integer(x: Any) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool | np.bool_)


def _numeric_mismatch(answer: Any, expected: Any, rtol: float, atol: float) -> str | None:
    """None if ``answer`` is numerically ``expected`` within the tolerances, else a detail."""
    if _is_integer(answer) and _is_integer(expected):  # exact, whatever their size
        # exact rationals: the tolerances as written (1e-6 is 1/10**6) and any integer
        allowed = Fraction(repr(atol)) + Fraction(repr(rtol)) * abs(int(expected))
        return None if abs(int(answer) - int(expected)) <= allowed else ""
    want = _numbers(expected)
    if isinstance(want, str):
        raise TypeError(f"expected={expected!r} cannot be compared: {want}")
    got = _numbers(answer)
    if isinstance(got, str):
        return got
    if got.shape != want.shape:
        return f"expected shape {want.shape}, got {got.shape}"
    if not np.all(np.isfinite(got)):
        return "the answer contains inf or nan"
    return None if np.allclose(got, want, rtol=rtol, atol=atol) else ""


def _mismatch(answer: Any, expected: Any, rtol: float, atol: float, *, word_rule: bool) -> \
        str | None:
    """None if ``answer`` matches ``expected``, else what is wrong ("" when only the value).

    ``word_rule``: a string is compared ignoring case and spacing (a whole answer), or
    exactly (a word inside a tuple).
    """
    if isinstance(expected, np.ndarray) and expected.dtype.kind in "US" and expected.ndim:
        expected = expected.tolist()  # words: compared item by item, as a list of words
    if isinstance(expected, str):
        if not isinstance(answer, str):
            return f"expected a word or phrase, got {_kind(answer)}"
        if word_rule:
            same = " ".join(answer.split()).casefold() == " ".join(expected.split()).casefold()
        else:
            same = answer == expected
        return None if same else ""
    if isinstance(expected, bool | np.bool_):
        if not isinstance(answer, bool | np.bool_):
            return f"expected True or False, got {_kind(answer)}"
        return None if bool(answer) == bool(expected) else ""
    if isinstance(expected, np.ndarray) and expected.dtype == np.bool_:
        got = np.asarray(answer) if isinstance(answer, list | tuple | np.ndarray) else None
        if got is None or got.dtype != np.bool_:
            return f"expected an array of True and False, got {_kind(answer)}"
        if got.shape != expected.shape:
            return f"expected shape {expected.shape}, got {got.shape}"
        return None if np.array_equal(got, expected) else ""
    if isinstance(expected, set | frozenset):
        if not isinstance(answer, set | frozenset | list | tuple | range | np.ndarray) or \
                (isinstance(answer, np.ndarray) and answer.ndim != 1):
            return f"expected a set such as {{0, 1}}, got {_kind(answer)}"
        items = answer.tolist() if isinstance(answer, np.ndarray) else list(answer)
        if any(isinstance(e, bool | np.bool_) for e in items) and \
                not any(isinstance(e, bool | np.bool_) for e in expected):
            return "the set holds True or False; expected numbers"
        try:
            return None if set(items) == set(expected) else ""
        except TypeError:  # unhashable items, e.g. lists
            return "expected a set of numbers or words, got unhashable items"
    if isinstance(expected, tuple | list) and isinstance(_numbers(expected), str):
        # words, or items of different kinds or lengths: compared item by item
        if not isinstance(answer, tuple | list | np.ndarray) or \
                (isinstance(answer, np.ndarray) and answer.ndim == 0):
            return f"expected a tuple of {len(expected)} items, got {_kind(answer)}"
        items = answer.tolist() if isinstance(answer, np.ndarray) else list(answer)
        if len(items) != len(expected):
            return f"expected {len(expected)} items, got {len(items)}"
        for i, (a, e) in enumerate(zip(items, expected, strict=True)):
            detail = _mismatch(a, e, rtol, atol, word_rule=False)
            if detail is not None:
                return f"item {i}: {detail}" if detail else ""
        return None
    return _numeric_mismatch(answer, expected, rtol, atol)


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
        stripping spaces; a bool exactly (``1`` is not ``True``); a set exactly
        (a list or tuple answer counts as the set of its items); a tuple or list
        holding words item by item, each word exactly; a number or an array
        numerically, within ``rtol`` and ``atol`` (an array must also have the
        expected shape; two integers are compared exactly, whatever their size).
        True and False are not numbers, and a number with an imaginary part is
        not a real one.
    hint : str
        Shown after "not quite: " when the answer is wrong.
    rtol, atol : float
        Tolerances of the numerical comparison (``numpy.allclose``).

    Returns
    -------
    str
        ``"not answered yet"``, ``"correct"`` or ``"not quite: ..."``. A wrong
        answer of any type gets a verdict, never an exception.

    Examples
    --------
    >>> answer_verdict({0, 2}, {2, 0}), answer_verdict(True, 1)
    ('correct', 'not quite: expected a number or numbers, got True')
    >>> answer_verdict("cat", ("c", "a", "t"))
    "not quite: expected a tuple of 3 items, got the string 'cat'"
    """
    if not isinstance(hint, str):
        raise TypeError(f"hint={hint!r}; expected a string")
    rtol = real_number(rtol, "rtol", minimum=0.0)
    atol = real_number(atol, "atol", minimum=0.0)
    if answer is None or answer is Ellipsis:
        return NOT_ANSWERED
    detail = _mismatch(answer, expected, rtol, atol, word_rule=True)
    return CORRECT if detail is None else _not_quite(hint, detail)


def check_answer(answer: Any, expected: Any, **options: Any) -> None:
    """Print whether the reader's ``answer`` matches ``expected``.

    Prints ``not answered yet`` when ``answer`` is ``None``, ``correct`` when
    it matches and ``not quite: <hint>`` otherwise. ``options`` are those of
    :func:`answer_verdict` (``hint``, ``rtol``, ``atol``), which says how answers
    are compared.
    """
    print(answer_verdict(answer, expected, **options))
