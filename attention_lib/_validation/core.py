"""The checks of arrays, scalars, flags, sizes, dtypes, positions and attention inputs
(what they are for: see the package)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "as_bool_mask",
    "as_real_array",
    "attention_operands",
    "check_attention_inputs",
    "check_causal_sizes",
    "check_flag",
    "check_fully_masked",
    "common_float_dtype",
    "compute_dtype",
    "describe",
    "first_true",
    "index",
    "real_number",
    "token_position",
    "normalise_axis",
    "position_labels",
    "positive_int",
]

FULLY_MASKED_POLICIES = ("raise", "zero")


def describe(a: np.ndarray) -> str:
    """A short description of an array for error messages: ``shape (2, 3), dtype float32``."""
    return f"shape {tuple(a.shape)}, dtype {a.dtype}"


def first_true(flags: np.ndarray) -> tuple[int, tuple[int, ...]]:
    """How many entries of a boolean array are True, and the index of the first one.

    Uses no memory proportional to the number of True entries (unlike
    ``np.argwhere``), so error paths stay cheap on huge inputs.
    """
    count = int(np.count_nonzero(flags))
    first = np.unravel_index(int(np.argmax(flags)), flags.shape) if count else ()
    return count, tuple(int(i) for i in first)


def _asarray(x: Any, name: str) -> np.ndarray:
    """``np.asarray(x)`` with errors that name the argument."""
    if x is None:
        raise TypeError(f"{name} is None; expected an array")
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(
            f"{name} is a numpy masked array (np.ma); its mask would be silently ignored. "
            "Expected a plain array: pass the data and a boolean `mask=` (True = may attend, "
            "e.g. mask=~np.ma.getmaskarray(x)) where the function takes one"
        )
    try:
        return np.asarray(x)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(
            f"{name} could not be turned into an array ({exc}); expected a rectangular array"
        ) from exc
    except Exception as exc:  # noqa: BLE001 - e.g. a tensor that requires grad, or bfloat16
        raise TypeError(
            f"{name} of type {type(x).__name__} could not be turned into a numpy array "
            f"({type(exc).__name__}: {exc}); expected an array of real numbers "
            "(convert it to a numpy float32 or float64 array first)"
        ) from exc


def as_real_array(x: Any, name: str, *, min_ndim: int = 1) -> np.ndarray:
    """Convert ``x`` to a real, finite, non-empty numeric array or raise.

    Integer input is accepted (it is computed in float64 later); booleans,
    complex numbers, dates and time spans, strings, objects, masked arrays and
    ``None`` are refused with a ``TypeError``; NaN, infinity, too few
    dimensions and empty axes with a ``ValueError``.
    """
    a = _asarray(x, name)
    if a.dtype == np.bool_:
        raise TypeError(
            f"{name} has dtype bool; expected real numbers (a boolean array is a mask, "
            "pass it as `mask=`)"
        )
    if a.dtype.kind == "c":
        raise TypeError(f"{name} has complex dtype {a.dtype}; expected real numbers")
    if a.dtype.kind not in "iuf":  # not int, uint or float: timedelta64, datetime64, str, object
        raise TypeError(f"{name} has dtype {a.dtype}; expected an array of real numbers")
    if a.ndim < min_ndim:
        raise ValueError(
            f"{name} has {a.ndim} dimension(s) ({describe(a)}); expected at least {min_ndim}"
        )
    if 0 in a.shape:
        raise ValueError(f"{name} has an empty axis ({describe(a)}); every axis must be non-empty")
    # min and max propagate NaN and reach any infinity: two reductions, no temporary.
    if a.dtype.kind == "f" and not (np.isfinite(a.min()) and np.isfinite(a.max())):
        count, first = first_true(~np.isfinite(a))
        raise ValueError(
            f"{name} contains {count} NaN or infinite value(s), the first at index {first}; "
            "expected finite numbers"
        )
    return a


def common_float_dtype(*arrays: np.ndarray) -> np.dtype:
    """The floating dtype of the result: float16/32/64 stay themselves, integers become float64."""
    dtype = np.result_type(*arrays)
    if dtype.kind != "f":
        dtype = np.dtype(np.float64)
    return np.dtype(dtype)


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype to compute in: float16 is computed in float32 (its sums overflow at 65504)."""
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)


def as_bool_mask(mask: Any, name: str = "mask") -> np.ndarray:
    """Convert ``mask`` to a boolean array (True = may attend) or raise ``TypeError``."""
    m = _asarray(mask, name)
    if m.dtype != np.bool_:
        raise TypeError(
            f"{name} has dtype {m.dtype}; expected a boolean array where True means "
            "'may attend' (additive float masks such as -1e9 or -inf are not accepted)"
        )
    return m


def positive_int(value: Any, name: str, *, minimum: int = 1, what: str = "") -> int:
    """``value`` as a Python int ``>= minimum``, or a TypeError/ValueError naming ``name``.

    Booleans are refused (``True`` is an int in Python but never a size).
    """
    expected = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    if what:
        expected += f" ({what})"
    if not isinstance(value, int | np.integer) or isinstance(value, bool | np.bool_):
        raise TypeError(f"{name}={value!r}; expected {expected}")
    if value < minimum:
        raise ValueError(f"{name}={value}; expected {expected}")
    return int(value)


def real_number(value: Any, name: str, *, minimum: float | None = None,
                maximum: float | None = None, strict_minimum: bool = False) -> float:
    """``value`` as a finite Python float, or a TypeError/ValueError naming ``name``.

    Python and numpy integers and floats (float16/32/64) are accepted; ``bool``, complex
    numbers, strings and arrays are refused. ``minimum`` is inclusive unless
    ``strict_minimum``; ``maximum`` is inclusive.

    Examples
    --------
    >>> real_number(np.float32(0.5), "lr", minimum=0.0, strict_minimum=True)
    0.5
    >>> real_number(True, "lr")
    Traceback (most recent call last):
        ...
    TypeError: lr=True; expected a real number
    """
    if not isinstance(value, int | float | np.integer | np.floating) \
            or isinstance(value, bool | np.bool_):
        raise TypeError(f"{name}={value!r}; expected a real number")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name}={value!r}; expected a finite number")
    if minimum is not None and (x < minimum or (strict_minimum and x == minimum)):
        relation = ">" if strict_minimum else ">="
        raise ValueError(f"{name}={value!r}; expected a number {relation} {minimum}")
    if maximum is not None and x > maximum:
        raise ValueError(f"{name}={value!r}; expected a number <= {maximum}")
    return x


def index(value: Any, n: int, name: str) -> int:
    """``value`` as a position ``0 <= value < n``, or a TypeError/ValueError naming ``name``.

    Negative positions are refused, never wrapped around: ``-1`` is an error here, not the
    last position.

    Examples
    --------
    >>> index(np.int64(2), 3, "key")
    2
    >>> index(-1, 3, "key")
    Traceback (most recent call last):
        ...
    ValueError: key=-1; expected a position from 0 to 2 (negative positions are not wrapped)
    """
    if not isinstance(value, int | np.integer) or isinstance(value, bool | np.bool_):
        raise TypeError(f"{name}={value!r}; expected an integer position from 0 to {n - 1}")
    if not 0 <= value < n:
        raise ValueError(f"{name}={value!r}; expected a position from 0 to {n - 1} "
                         "(negative positions are not wrapped)")
    return int(value)


def token_position(tokens: Any, query: Any, name: str = "query") -> int:
    """Position of ``query`` in ``tokens``: a token (its first occurrence) or a position.

    A position is ``0 <= query < len(tokens)``; negative positions are refused, as in
    :func:`index`. Raises ``ValueError`` naming ``name`` and listing the choices.

    Examples
    --------
    >>> token_position(["The", "cat", "sat"], "cat"), token_position(["The", "cat"], 1)
    (1, 1)
    """
    tokens = list(tokens)
    if isinstance(query, str):
        if query in tokens:
            return tokens.index(query)
    elif isinstance(query, int | np.integer) and not isinstance(query, bool | np.bool_) \
            and 0 <= query < len(tokens):
        return int(query)
    raise ValueError(f"{name}={query!r}; expected one of the tokens {tokens} "
                     f"or a position from 0 to {len(tokens) - 1}")


def position_labels(labels: Any, n: int, name: str, *, first: int = 0) -> list[str]:
    """``n`` labels, one per position: ``labels`` as strings, or the positions counted from
    ``first`` when it is None. A string, a set or mapping (no order), or anything without a
    length, is a TypeError."""
    if labels is None:
        return [str(first + i) for i in range(n)]
    if (isinstance(labels, (str, bytes, set, frozenset, dict))
            or not hasattr(labels, "__len__")):
        raise TypeError(f"{name}={labels!r}; expected a sequence of {n} strings")
    out = [str(s) for s in labels]
    if len(out) != n:
        raise ValueError(f"{name} has {len(out)} labels; expected {n}, one per position")
    return out


def check_flag(value: Any, name: str) -> bool:
    """``value`` as a Python bool, or a ``TypeError`` naming ``name``."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name}={value!r}; expected True or False")
    return bool(value)


def check_fully_masked(policy: Any) -> str:
    """The ``fully_masked`` policy, or a ``ValueError`` listing the choices."""
    if not isinstance(policy, str) or policy not in FULLY_MASKED_POLICIES:
        raise ValueError(f"fully_masked={policy!r}; expected one of {FULLY_MASKED_POLICIES}")
    return policy


def check_causal_sizes(n_q: int, n_k: int) -> None:
    """Raise ``ValueError`` when a causal rule would leave the first queries with no key."""
    if n_q > n_k:
        raise ValueError(
            f"causal attention with n_q={n_q} queries and n_k={n_k} keys: the queries are the "
            f"last n_q positions, so the first {n_q - n_k} queries would have no key to attend "
            "to; expected n_q <= n_k"
        )


def normalise_axis(axis: Any, ndim: int) -> int:
    """``axis`` as a non-negative int for an array of ``ndim`` dimensions, or raise."""
    if not isinstance(axis, int | np.integer) or isinstance(axis, bool):
        raise TypeError(f"axis={axis!r}; expected an integer")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis={axis} is out of range for an array with {ndim} dimension(s)")
    return int(axis) % ndim


def _check_qkv_sizes(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
    """Raise ``ValueError`` naming the two arrays unless q and k share ``d_k`` (the last
    axis) and k and v share ``n_k`` (the second to last)."""
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q has d_k={q.shape[-1]} ({describe(q)}) but k has d_k={k.shape[-1]} "
            f"({describe(k)}); expected the same last axis, since scores are q . k"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k has n_k={k.shape[-2]} positions ({describe(k)}) but v has "
                         f"{v.shape[-2]} ({describe(v)}); expected one value per key "
                         "(k.shape[-2] == v.shape[-2])")


def check_attention_inputs(
    q: ArrayLike, k: ArrayLike, v: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]:
    """Validate q, k, v and cast them to one floating dtype.

    Returns the three arrays and their broadcast leading (batch, head) shape.
    Raises ``TypeError`` or ``ValueError`` naming the argument at fault.

    Examples
    --------
    >>> q, k, v, batch = check_attention_inputs(
    ...     np.ones((2, 3, 4)), np.ones((5, 4)), np.ones((5, 6)))
    >>> batch
    (2,)
    """
    q = as_real_array(q, "q", min_ndim=2)
    k = as_real_array(k, "k", min_ndim=2)
    v = as_real_array(v, "v", min_ndim=2)
    _check_qkv_sizes(q, k, v)
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading (batch, head) axes do not broadcast: q {q.shape[:-2]}, "
            f"k {k.shape[:-2]}, v {v.shape[:-2]}; expected shapes that numpy can broadcast"
        ) from None
    dtype = common_float_dtype(q, k, v)
    return (q.astype(dtype, copy=False), k.astype(dtype, copy=False),
            v.astype(dtype, copy=False), batch)


def attention_operands(
    q: ArrayLike, k: ArrayLike, v: ArrayLike, *, causal: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...], np.dtype]:
    """:func:`check_attention_inputs`, then q, k, v in the dtype attention computes in.

    Returns the three arrays cast to that dtype (float16 is computed in float32, its
    sums overflow at 65504), their broadcast leading shape and the dtype of the result
    (that of the inputs). With ``causal`` the queries, the last ``n_q`` positions, must
    not outnumber the keys (:func:`check_causal_sizes`).

    Examples
    --------
    >>> x = np.ones((3, 4), dtype=np.float16)
    >>> q, k, v, batch, out_dtype = attention_operands(x, x, x, causal=True)
    >>> q.dtype, out_dtype
    (dtype('float32'), dtype('float16'))
    """
    q, k, v, batch = check_attention_inputs(q, k, v)
    if causal:
        check_causal_sizes(q.shape[-2], k.shape[-2])
    out_dtype = q.dtype
    work = compute_dtype(out_dtype)
    return (*(a.astype(work, copy=False) for a in (q, k, v)), batch, out_dtype)


# --------------------------------------------------------------------------------------
# Sizes with a default, choices, generators, dtypes, square matrices
# --------------------------------------------------------------------------------------

__all__ += ["numeric_dtype", "one_of", "optional_positive_int", "positive_ints",
            "random_generator", "square_matrix"]


def positive_ints(**sizes: Any) -> tuple[int, ...]:
    """Each keyword's value checked by :func:`positive_int` under its own name, in order.

    Examples
    --------
    >>> positive_ints(n_q=4, n_k=np.int64(6))
    (4, 6)
    >>> positive_ints(n=3, d=0)
    Traceback (most recent call last):
        ...
    ValueError: d=0; expected a positive integer
    """
    return tuple(positive_int(value, name) for name, value in sizes.items())


def optional_positive_int(value: Any, name: str, default: int) -> int:
    """``default`` when ``value`` is None, else ``value`` checked by :func:`positive_int`.

    Examples
    --------
    >>> optional_positive_int(None, "d_ff", 4 * 8), optional_positive_int(16, "d_ff", 32)
    (32, 16)
    """
    return int(default) if value is None else positive_int(value, name)


def one_of(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """``value`` if it is one of the strings ``choices``, or a ``ValueError`` listing them.

    Examples
    --------
    >>> one_of("pre", "norm", ("pre", "post"))
    'pre'
    >>> one_of(["pre"], "norm", ("pre", "post"))
    Traceback (most recent call last):
        ...
    ValueError: norm=['pre']; expected one of 'pre', 'post'
    """
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={value!r}; expected one of {', '.join(map(repr, choices))}")
    return value


def random_generator(rng: Any, name: str = "rng", *,
                     optional: bool = False) -> np.random.Generator:
    """``rng`` if it is a ``numpy.random.Generator``, or a ``TypeError`` naming ``name``.

    With ``optional``, None gives a fresh unseeded generator.

    Examples
    --------
    >>> type(random_generator(None, optional=True)).__name__
    'Generator'
    >>> random_generator(0)
    Traceback (most recent call last):
        ...
    TypeError: rng=0 (type int); expected a numpy.random.Generator, e.g. np.random.default_rng(0)
    """
    if rng is None and optional:
        return np.random.default_rng()
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name}={rng!r} (type {type(rng).__name__}); expected a "
                        "numpy.random.Generator, e.g. np.random.default_rng(0)")
    return rng


def numeric_dtype(dtype: Any, name: str = "dtype") -> np.dtype:
    """``dtype`` as a numeric numpy dtype (integer, float or complex), or a ``TypeError``.

    ``None`` (which ``np.dtype`` silently reads as float64), ``str``, ``"U"``, ``bool``,
    ``object``, dates and anything numpy cannot read as a dtype are refused.

    Examples
    --------
    >>> numeric_dtype("float16"), numeric_dtype(np.int8)
    (dtype('float16'), dtype('int8'))
    >>> numeric_dtype(None)
    Traceback (most recent call last):
        ...
    TypeError: dtype=None; expected a numeric numpy dtype such as np.float16 or np.float32
    """
    expected = "expected a numeric numpy dtype such as np.float16 or np.float32"
    if dtype is None:
        raise TypeError(f"{name}=None; {expected}")
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"{name}={dtype!r} is not a numpy dtype ({exc}); {expected}") from exc
    if dt.kind not in "iufc":
        raise TypeError(f"{name}={dtype!r} is dtype {dt} (kind {dt.kind!r}); {expected}")
    return dt


def square_matrix(w: Any, name: str) -> np.ndarray:
    """``w`` as a real square 2-D array (its dtype kept), or an error naming ``name``.

    Examples
    --------
    >>> square_matrix([[1, 2], [3, 4]], "w").shape
    (2, 2)
    """
    a = as_real_array(w, name, min_ndim=2)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{name} has {describe(a)}; expected a square (d, d) matrix")
    return a


# --------------------------------------------------------------------------------------
# Rows with nothing to attend to
# --------------------------------------------------------------------------------------

__all__ += ["raise_if_fully_masked"]


def raise_if_fully_masked(empty: np.ndarray, what: str, *, where: str = "",
                          also: str = "", remedy: str | None = None) -> None:
    """Raise ``ValueError`` when ``empty`` (True = a row the mask leaves nothing to attend
    to) has a True entry, listing the first ten by index.

    ``what`` names the rows and what they lack (``"query row(s) with no key"``), ``where``
    what the index counts (``"(..., query) "``), ``also`` the end of the message (what else
    ``fully_masked='zero'`` does, or what else to do). ``remedy`` replaces the sentence
    about ``fully_masked`` for a function that has no such option.

    Examples
    --------
    >>> raise_if_fully_masked(np.array([False, True]), "row(s) with nothing",
    ...                       also=", or fix the mask")
    Traceback (most recent call last):
        ...
    ValueError: mask leaves 1 row(s) with nothing to attend to, at index (1,); their softmax is undefined. Pass fully_masked='zero' to give them zero weights, or fix the mask
    """  # noqa: E501
    count = int(np.count_nonzero(empty))
    if not count:
        return
    rows = [tuple(int(i) for i in idx) for idx in np.argwhere(empty)[:10]]
    shown = ", ".join(map(str, rows)) + (" ..." if count > 10 else "")
    if remedy is None:
        remedy = f"Pass fully_masked='zero' to give them zero weights{also}"
    raise ValueError(
        f"mask leaves {count} {what} to attend to, at {where}index {shown}; "
        f"their softmax is undefined. {remedy}"
    )


# --------------------------------------------------------------------------------------
# Token rows of a model width
# --------------------------------------------------------------------------------------

__all__ += ["broadcast_shape", "head_size", "token_rows"]


def head_size(d_model: int, num_heads: int, *, heads: str = "num_heads") -> int:
    """``d_model // num_heads``, or a ``ValueError`` naming both when it does not divide
    (``heads`` is the name the message gives the number of heads).

    Examples
    --------
    >>> head_size(12, 3)
    4
    >>> head_size(8, 3)
    Traceback (most recent call last):
        ...
    ValueError: d_model=8 is not divisible by num_heads=3; every head gets d_model / num_heads features, so expected a d_model that is a multiple of 3
    """  # noqa: E501
    if d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} is not divisible by {heads}={num_heads}; every head "
            f"gets d_model / {heads} features, so expected a d_model that is a "
            f"multiple of {num_heads}"
        )
    return d_model // num_heads


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape ``shapes`` broadcast to, or None where numpy cannot broadcast them.

    Examples
    --------
    >>> broadcast_shape((2, 1, 4), (3, 1)), broadcast_shape((2,), (3,))
    ((2, 3, 4), None)
    """
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def token_rows(a: Any, name: str, d_model: int) -> np.ndarray:
    """``a`` as a real array of shape (..., n, d_model), or an error naming ``name``.

    Examples
    --------
    >>> token_rows(np.ones((3, 4)), "memory", 8)
    Traceback (most recent call last):
        ...
    ValueError: memory has last axis 4 (shape (3, 4), dtype float64); expected d_model=8, i.e. shape (..., n, 8)
    """  # noqa: E501
    a = as_real_array(a, name, min_ndim=2)
    if a.shape[-1] != d_model:
        raise ValueError(f"{name} has last axis {a.shape[-1]} ({describe(a)}); expected "
                         f"d_model={d_model}, i.e. shape (..., n, {d_model})")
    return a


# --------------------------------------------------------------------------------------
# Arrays of a known shape, key/value head groups, sliding windows
# --------------------------------------------------------------------------------------

__all__ += ["array_of_shape", "check_grouped_heads", "check_window", "kv_group_size"]


def array_of_shape(a: Any, name: str, shape: tuple[int, ...], *, what: str = "") -> np.ndarray:
    """``a`` as a real, finite array of exactly ``shape``, or an error naming ``name``.

    ``what`` says what the shape is (``"(..., n_q), one per query"``).

    Examples
    --------
    >>> array_of_shape(np.zeros((2, 3)), "lse", (2, 4), what="(..., n_q)")
    Traceback (most recent call last):
        ...
    ValueError: lse has shape (2, 3), dtype float64; expected (..., n_q) = (2, 4)
    """
    arr = as_real_array(a, name)
    if arr.shape != tuple(shape):
        expected = f"{what} = {tuple(shape)}" if what else f"shape {tuple(shape)}"
        raise ValueError(f"{name} has {describe(arr)}; expected {expected}")
    return arr


def kv_group_size(num_heads: int, num_kv_heads: int, *, heads: str = "num_heads",
                  kv_heads: str = "num_kv_heads") -> int:
    """How many query heads share one key/value head, or a ``ValueError`` naming both counts.

    ``heads`` and ``kv_heads`` are the names the message gives the two counts.

    Examples
    --------
    >>> kv_group_size(8, 2), kv_group_size(8, 8)    # GQA, and one key/value head per query head
    (4, 1)
    >>> kv_group_size(6, 4)
    Traceback (most recent call last):
        ...
    ValueError: num_heads=6 is not a multiple of num_kv_heads=4; every key/value head serves the same number of query heads, so expected num_kv_heads to divide num_heads
    """  # noqa: E501
    if num_heads % num_kv_heads:
        raise ValueError(
            f"{heads}={num_heads} is not a multiple of {kv_heads}={num_kv_heads}; every "
            f"key/value head serves the same number of query heads, so expected {kv_heads} "
            f"to divide {heads}"
        )
    return num_heads // num_kv_heads


def check_window(window: Any, causal: bool) -> int | None:
    """A sliding window: None, or a positive int under the causal rule; else an error.

    Examples
    --------
    >>> check_window(None, False), check_window(4, True)
    (None, 4)
    >>> check_window(4, False)
    Traceback (most recent call last):
        ...
    ValueError: window=4 with causal=False; a sliding window is a causal band (query i sees the keys j with i - window < j <= i), so expected causal=True
    """  # noqa: E501
    if window is None:
        return None
    window = positive_int(window, "window", what="the number of keys a query sees, or None")
    if not causal:
        raise ValueError(
            f"window={window} with causal=False; a sliding window is a causal band (query i "
            "sees the keys j with i - window < j <= i), so expected causal=True"
        )
    return window


def check_grouped_heads(
    q: ArrayLike, k: ArrayLike, v: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Check grouped-query inputs: q (..., h, n_q, d_k), k (..., h_kv, n_k, d_k), v (..., h_kv,
    n_k, d_v) with ``h`` a multiple of ``h_kv``; returns the arrays and ``g = h / h_kv``.

    Examples
    --------
    >>> check_grouped_heads(np.ones((4, 3, 2)), np.ones((2, 5, 2)), np.ones((2, 5, 1)))[3]
    2
    >>> check_grouped_heads(np.ones((4, 3, 2)), np.ones((3, 5, 2)), np.ones((3, 5, 1)))
    Traceback (most recent call last):
        ...
    ValueError: q has h=4 heads (shape (4, 3, 2), dtype float64) but k has h_kv=3 (shape (3, 5, 2), dtype float64); expected h to be a multiple of h_kv, each key/value head serving h / h_kv query heads
    """  # noqa: E501
    qa = as_real_array(q, "q", min_ndim=3)
    ka = as_real_array(k, "k", min_ndim=3)
    va = as_real_array(v, "v", min_ndim=3)
    h, h_kv = qa.shape[-3], ka.shape[-3]
    if va.shape[-3] != h_kv:
        raise ValueError(f"k has h_kv={h_kv} heads ({describe(ka)}) but v has {va.shape[-3]} "
                         f"({describe(va)}); expected one value head per key head")
    if h % h_kv:
        raise ValueError(f"q has h={h} heads ({describe(qa)}) but k has h_kv={h_kv} "
                         f"({describe(ka)}); expected h to be a multiple of h_kv, each "
                         "key/value head serving h / h_kv query heads")
    _check_qkv_sizes(qa, ka, va)
    if broadcast_shape(qa.shape[:-3], ka.shape[:-3], va.shape[:-3]) is None:
        raise ValueError(f"the leading (batch) axes before the heads do not broadcast: q "
                         f"{qa.shape[:-3]}, k {ka.shape[:-3]}, v {va.shape[:-3]}; expected "
                         "shapes that numpy can broadcast")
    return qa, ka, va, h // h_kv
