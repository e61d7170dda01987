r"""Checking a function the reader wrote.

An "implement" exercise gives the reader a cell that is theirs: a function with the
exercise's signature whose body is ``raise NotImplementedError``, and a last line
``check_implementation(my_function, "<task>")``. The checker calls the function on the
task's hidden cases, one by one, and compares each result with a slow reference written
here (loops over positions and heads, not the library's vectorised code). It prints

- ``not answered yet`` while the function still raises ``NotImplementedError``;
- ``correct`` when every case agrees (``rtol=1e-6``, ``atol=1e-9``);
- ``not quite: <case>: <what differs>. Hint: <hint>`` at the first case that does not,
  whether the function gave a wrong number, the wrong shape, no floats, a NaN, changed
  its input or raised an exception. The reader's function never makes the checker fail.

:func:`implementation_tasks` lists the tasks with their signatures.

>>> import numpy as np
>>> def my_softmax(z):
...     e = np.exp(z)
...     return e / e.sum(axis=-1, keepdims=True)
>>> print(implementation_verdict(my_softmax, "softmax").split(". Hint")[0])
not quite: large scores [1000, 1001, 1002]: the result holds nan: [nan, nan, nan]
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ._implement_cases import _TASKS, _Case
from .exercises import CORRECT, NOT_ANSWERED

__all__ = ["check_implementation", "implementation_tasks", "implementation_verdict"]

RTOL, ATOL = 1e-6, 1e-9


def implementation_tasks() -> dict[str, str]:
    """The tasks :func:`implementation_verdict` checks, each with its signature.

    >>> implementation_tasks()["split_heads"][:25]
    'fn(x, num_heads) -> (num_'
    """
    return {name: task.signature for name, task in _TASKS.items()}


def _short(x: Any) -> str:
    text = np.array2string(np.asarray(x), precision=4, threshold=8, separator=", ") \
        if isinstance(x, np.ndarray | list | tuple | float | int) else repr(x)
    text = " ".join(text.split())
    return text if len(text) <= 70 else text[:67] + "..."


def _compare(got: Any, want: np.ndarray, what: str) -> str | None:
    """None if ``got`` agrees with ``want``, else what differs (for the verdict)."""
    want = np.asarray(want)
    if got is None:
        return f"{what} is None; did the function forget to return its result?"
    if isinstance(got, tuple) and want.ndim and len(got) != len(want):
        return (f"{what} is a tuple of {len(got)} items; expected one array (return only "
                "the output)")
    if isinstance(got, str | bytes | dict | set):
        return f"{what} is a {type(got).__name__}; expected an array of numbers"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = np.asarray(got)
    except Exception:  # noqa: BLE001  (ragged lists, odd objects: a verdict, not a crash)
        return f"{what} could not be read as an array ({type(got).__name__})"
    if a.shape != want.shape:
        return f"{what} has shape {a.shape}; expected {want.shape}"
    if a.dtype.kind not in "f":
        kind = {"b": "True/False values", "i": "integers", "u": "integers",
                "c": "complex numbers"}.get(a.dtype.kind, f"dtype {a.dtype}")
        return f"{what} holds {kind} (dtype {a.dtype}); expected floating-point numbers"
    if np.any(np.isnan(a)) and not np.any(np.isnan(want)):
        return f"{what} holds nan: {_short(a)}"
    wrong = ~np.isclose(a, want, rtol=RTOL, atol=ATOL, equal_nan=True)
    if wrong.any():
        first = tuple(int(i) for i in np.argwhere(wrong)[0])
        where = f" at index {first}" if first else ""
        return (f"{what} is {_short(a)}; expected {_short(want)} (first difference{where}: "
                f"{a[first]:.8g} instead of {want[first]:.8g})")
    return None


def _run_case(fn: Callable, case: _Case) -> str | None:
    """None if ``fn`` passes ``case``, else the detail; NotImplementedError propagates."""
    args = tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in case.args)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            got = fn(*args)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001  (the reader's bug becomes the verdict)
        message = " ".join(str(error).split())
        message = message if len(message) <= 90 else message[:87] + "..."
        return f"the function raised {type(error).__name__}" + (f": {message}" if message
                                                                  else "")
    for i, (before, after) in enumerate(zip(case.args, args, strict=True)):
        if isinstance(before, np.ndarray) and not np.array_equal(before, after,
                                                                 equal_nan=True):
            return f"the function changed its argument {i + 1} in place"
    if isinstance(case.expected, tuple):
        n = len(case.expected)
        if not isinstance(got, tuple | list) or len(got) != n:
            return (f"the function returned {type(got).__name__}; expected a tuple of {n} "
                    "arrays")
        for i, (g, w) in enumerate(zip(got, case.expected, strict=True)):
            detail = _compare(g, w, f"item {i + 1} of the result")
            if detail:
                return detail
        return None
    return _compare(got, case.expected, "the result")


def implementation_verdict(fn: Any, task: str) -> str:
    """The verdict on the reader's function ``fn`` for ``task`` (what
    :func:`check_implementation` prints).

    Parameters
    ----------
    fn : callable
        The reader's function, called with the task's arguments (copies: a function that
        changes its input is told so). ``None``, or a function that raises
        ``NotImplementedError``, is not answered yet.
    task : str
        One of :func:`implementation_tasks`: ``"qkv_projection"``, ``"attention"``,
        ``"softmax"``, ``"causal_attention"``, ``"split_heads"``, ``"recurrence"``,
        ``"sinusoidal_positions"``, ``"softmax_backward"``, ``"cross_entropy"``,
        ``"layer_norm"``, ``"kv_cache_step"``, ``"online_softmax_merge"``,
        ``"repeat_kv"``, ``"top_p"``, ``"ov_circuit"``, ``"restored_fraction"``,
        ``"sae_encode"``.

    Returns
    -------
    str
        ``"not answered yet"``, ``"correct"`` (every hidden case within ``rtol=1e-6``,
        ``atol=1e-9`` of a loop reference), or ``"not quite: <case>: <detail>. Hint: ..."``
        for the first case that fails. Whatever ``fn`` does (raises, returns the wrong
        shape, integers, NaN, a list, nothing), the result is a verdict, never an
        exception.

    Raises
    ------
    ValueError
        If ``task`` is not a known task (a mistake of the page, not of the reader).

    Examples
    --------
    >>> import numpy as np
    >>> wrong = implementation_verdict(lambda x, h: x.reshape(h, x.shape[0], -1), "split_heads")
    >>> wrong.split(": the")[0]
    'not quite: x of shape (4, 6) into 2 heads'
    >>> implementation_verdict(
    ...     lambda x, h: x.reshape(x.shape[0], h, -1).transpose(1, 0, 2), "split_heads")
    'correct'
    """
    if not isinstance(task, str) or task not in _TASKS:
        raise ValueError(f"task={task!r}; expected one of {', '.join(map(repr, _TASKS))}")
    if fn is None or fn is Ellipsis:
        return NOT_ANSWERED
    if not callable(fn):
        return (f"not quite: expected a function (def ...), got {type(fn).__name__}. "
                f"Hint: pass the function itself, without calling it: {task}'s "
                f"signature is {_TASKS[task].signature}")
    spec = _TASKS[task]
    for case in spec.cases():
        try:
            detail = _run_case(fn, case)
        except NotImplementedError:
            return NOT_ANSWERED
        if detail:
            stop = "" if detail.endswith("?") else "."
            return f"not quite: {case.name}: {detail}{stop} Hint: {spec.hint}"
    return CORRECT


def check_implementation(fn: Any, task: str) -> None:
    """Print the verdict of :func:`implementation_verdict` on the reader's function.

    >>> import numpy as np
    >>> def my_layer_norm(x, gamma, beta):
    ...     raise NotImplementedError
    >>> check_implementation(my_layer_norm, "layer_norm")
    not answered yet
    """
    print(implementation_verdict(fn, task))
