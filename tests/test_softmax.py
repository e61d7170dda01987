"""Tests of ``attention_lib.softmax`` against an independent slow reference.

The reference below is written from the definition, row by row, with
``math.exp`` and Python floats. It shares no code with the library: it does
not subtract the maximum through numpy, does not use ``np.exp`` and does not
import anything from ``attention_lib`` internals.
"""

from __future__ import annotations

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_lib import softmax

# --------------------------------------------------------------------------------------
# Independent slow reference
# --------------------------------------------------------------------------------------


def reference_softmax_rows(rows, mask_rows=None):
    """Softmax of every row of a list of rows, with an optional boolean mask.

    ``rows`` is a list of lists of numbers; ``mask_rows`` (same shape) holds
    True where the entry may be attended to. A row with no allowed entry gets
    all-zero weights (the ``fully_masked="zero"`` policy).
    """
    result = []
    for r, row in enumerate(rows):
        allowed = [True] * len(row) if mask_rows is None else [bool(b) for b in mask_rows[r]]
        kept = [float(x) for x, ok in zip(row, allowed, strict=True) if ok]
        if not kept:
            result.append([0.0] * len(row))
            continue
        biggest = max(kept)
        exps = [math.exp(float(x) - biggest) if ok else 0.0
                for x, ok in zip(row, allowed, strict=True)]
        total = math.fsum(exps)
        result.append([e / total for e in exps])
    return result


def reference_softmax(x, axis=-1, mask=None):
    """Softmax of an N-D array along ``axis`` by calling the row reference on each slice.

    numpy is used only to move the axis last and to flatten the other axes
    into a list of rows (bookkeeping, no arithmetic).
    """
    x = np.asarray(x, dtype=np.float64)
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), x.shape)
    moved = np.moveaxis(x, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1]).tolist()
    mask_rows = None
    if mask is not None:
        mask_rows = np.moveaxis(mask, axis, -1).reshape(-1, moved.shape[-1]).tolist()
    out = np.array(reference_softmax_rows(rows, mask_rows), dtype=np.float64)
    return np.moveaxis(out.reshape(moved.shape), -1, axis)


# --------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------

FLOAT_DTYPES = [np.float32, np.float64]
TOL = {np.float32: {"rtol": 1e-5, "atol": 1e-6}, np.float64: {"rtol": 1e-10, "atol": 1e-12}}


def finite(dtype, bound):
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False,
                     width=32 if dtype == np.float32 else 64)


@st.composite
def array_and_axis(draw, dtype=np.float64, bound=30.0):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    x = draw(hnp.arrays(dtype, shape, elements=finite(dtype, bound)))
    axis = draw(st.integers(-x.ndim, x.ndim - 1))
    return x, axis


@st.composite
def masked_array_and_axis(draw, dtype=np.float64, force_allowed=True):
    x, axis = draw(array_and_axis(dtype))
    mask = draw(hnp.arrays(np.bool_, x.shape))
    if force_allowed:
        # At least one True in every slice along `axis`, at a drawn position.
        moved = np.moveaxis(mask, axis, -1)  # a view: writing to it writes to `mask`
        cols = draw(hnp.arrays(np.intp, moved.shape[:-1],
                               elements=st.integers(0, moved.shape[-1] - 1)))
        np.put_along_axis(moved, cols[..., None], True, axis=-1)
    return x, axis, mask


# --------------------------------------------------------------------------------------
# Agreement with the reference
# --------------------------------------------------------------------------------------


def test_reference_itself_on_a_hand_computed_row():
    # exp(0), exp(1), exp(2) over their sum, written out.
    total = 1.0 + math.e + math.e**2
    expected = [1.0 / total, math.e / total, math.e**2 / total]
    got = reference_softmax_rows([[0.0, 1.0, 2.0]])[0]
    assert got == pytest.approx(expected, rel=1e-15)


def test_known_values():
    total = math.exp(1.0) + math.exp(2.0) + math.exp(3.0)
    expected = [math.exp(1.0) / total, math.exp(2.0) / total, math.exp(3.0) / total]
    np.testing.assert_allclose(softmax([1.0, 2.0, 3.0]), expected, rtol=1e-14)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
@given(data=st.data())
def test_matches_reference(dtype, data):
    x, axis = data.draw(array_and_axis(dtype))
    got = softmax(x, axis=axis)
    assert got.dtype == dtype
    assert got.shape == x.shape
    np.testing.assert_allclose(got, reference_softmax(x, axis), **TOL[dtype])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
@given(data=st.data())
def test_masked_matches_reference(dtype, data):
    x, axis, mask = data.draw(masked_array_and_axis(dtype))
    got = softmax(x, axis=axis, mask=mask)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, reference_softmax(x, axis, mask), **TOL[dtype])
    # Masked entries get exactly zero, not merely a tiny number.
    assert np.all(got[~mask] == 0.0)


@given(data=st.data())
def test_fully_masked_zero_matches_reference(data):
    x, axis, mask = data.draw(masked_array_and_axis(force_allowed=False))
    got = softmax(x, axis=axis, mask=mask, fully_masked="zero")
    np.testing.assert_allclose(got, reference_softmax(x, axis, mask), rtol=1e-10, atol=1e-12)
    empty = ~mask.any(axis=axis)
    assert np.all(np.moveaxis(got, axis, -1)[empty] == 0.0)


def test_integer_input_matches_reference_in_float64():
    x = np.array([[1, 2, 3], [-4, 0, 4]], dtype=np.int64)
    got = softmax(x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, reference_softmax(x), rtol=1e-12)


# --------------------------------------------------------------------------------------
# Invariants
# --------------------------------------------------------------------------------------


@given(data=st.data())
def test_slices_sum_to_one_and_are_non_negative(data):
    x, axis = data.draw(array_and_axis(bound=1e3))
    got = softmax(x, axis=axis)
    assert np.all(got >= 0.0)
    np.testing.assert_allclose(got.sum(axis=axis), 1.0, rtol=1e-12)


@given(
    x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=6),
                 elements=finite(np.float64, 10.0)),
    data=st.data(),
)
def test_shift_invariance_per_row(x, data):
    shift = data.draw(hnp.arrays(np.float64, (x.shape[0], 1), elements=finite(np.float64, 1e3)))
    np.testing.assert_allclose(softmax(x + shift), softmax(x), rtol=1e-10, atol=1e-10)


def test_axis_zero_is_the_transpose_of_axis_minus_one():
    x = np.arange(12.0).reshape(3, 4) / 7.0
    np.testing.assert_array_equal(softmax(x, axis=0), softmax(x.T, axis=-1).T)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(
    ("logits", "expected"),
    [
        ([1e4, 0.0], [1.0, 0.0]),
        ([0.0, 1e4], [0.0, 1.0]),
        ([1e4, 1e4], [0.5, 0.5]),
        ([-1e4, -1e4, -1e4, -1e4], [0.25, 0.25, 0.25, 0.25]),
        ([1e4, 1e4 - math.log(3.0)], [0.75, 0.25]),
    ],
)
def test_large_logits_do_not_overflow(dtype, logits, expected):
    x = np.array(logits, dtype=dtype)
    # The naive exp(x) / sum(exp(x)) overflows to inf / inf = NaN here.
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got = softmax(x)
    assert got.dtype == dtype
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-3 if dtype == np.float32 else 1e-12)


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=2, max_side=6),
                  elements=finite(np.float64, 1e4)))
def test_random_large_logits_stay_finite(x):
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got = softmax(x)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, rtol=1e-12)


def test_masked_entries_are_exactly_zero_even_with_the_largest_logit():
    x = np.array([[1e4, 1.0, 2.0], [3.0, 1e4, -1e4]])
    mask = np.array([[False, True, True], [True, False, True]])
    got = softmax(x, mask=mask)
    assert got[0, 0] == 0.0
    assert got[1, 1] == 0.0
    np.testing.assert_allclose(got[0, 1:], reference_softmax_rows([[1.0, 2.0]])[0], rtol=1e-14)
    np.testing.assert_allclose(got[1], [1.0, 0.0, 0.0], atol=1e-300)


def test_mask_broadcasts_over_rows():
    x = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]])
    mask = np.array([True, False, True])  # the same key mask for every row
    got = softmax(x, mask=mask)
    np.testing.assert_allclose(got, reference_softmax(x, -1, np.broadcast_to(mask, x.shape)),
                               rtol=1e-14)
    assert np.all(got[:, 1] == 0.0)


def test_axis_refers_to_x_when_the_mask_adds_leading_axes():
    # x has one axis, so axis=0 and axis=-1 both name it. A (2, 3) mask broadcasts
    # x to (2, 3); each of the two rows must be a softmax over x's own axis.
    x = np.array([1.0, 2.0, 3.0])
    mask = np.array([[True, True, True], [True, False, True]])
    expected = reference_softmax(np.broadcast_to(x, (2, 3)), -1, mask)
    np.testing.assert_allclose(softmax(x, axis=-1, mask=mask), expected, rtol=1e-14)
    np.testing.assert_allclose(softmax(x, axis=0, mask=mask), expected, rtol=1e-14)


def test_fully_masked_raise_names_the_slices():
    x = np.zeros((2, 3, 4))
    mask = np.ones((2, 3, 4), dtype=bool)
    mask[0, 2, :] = False
    mask[1, 0, :] = False
    with pytest.raises(ValueError, match=r"2 slice\(s\) along axis 2 .* \(0, 2\), \(1, 0\)"):
        softmax(x, mask=mask)


def test_fully_masked_raise_is_the_default_and_zero_gives_zero_rows():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    mask = np.array([[True, True], [False, False]])
    with pytest.raises(ValueError, match=r"1 slice\(s\) .* at index \(1,\)"):
        softmax(x, mask=mask)
    got = softmax(x, mask=mask, fully_masked="zero")
    np.testing.assert_array_equal(got[1], [0.0, 0.0])
    np.testing.assert_allclose(got[0], softmax(x[0]), rtol=0, atol=0)


# --------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        (np.float32, np.float32),
        (np.float64, np.float64),
        (np.int64, np.float64),
        (np.int32, np.float64),
        (np.int8, np.float64),
        (np.uint8, np.float64),
    ],
)
@pytest.mark.parametrize("masked", [False, True])
def test_dtype(dtype, expected, masked):
    x = np.array([[1, 2, 3], [4, 5, 6]], dtype=dtype)
    mask = np.array([True, False, True]) if masked else None
    assert softmax(x, mask=mask).dtype == expected


def test_python_list_input_is_float64():
    assert softmax([1, 2, 3]).dtype == np.float64


def test_input_is_not_modified():
    x = np.array([[1.0, 2.0, 3.0]])
    before = x.copy()
    x.setflags(write=False)  # a write would raise
    softmax(x, mask=np.array([[True, False, True]]))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("masked", [False, True])
def test_input_is_not_modified_in_either_dtype(dtype, masked):
    x = np.array([[3.0, -1.0, 2.0], [0.5, 0.5, 9.0]], dtype=dtype)
    before = x.copy()
    mask = np.array([True, False, True]) if masked else None
    softmax(x, mask=mask)
    np.testing.assert_array_equal(x, before)


# --------------------------------------------------------------------------------------
# unusual but legitimate input
# --------------------------------------------------------------------------------------


def test_float16_row_longer_than_float16_can_sum():
    # 70000 equal logits: a float16 sum of 70000 ones would overflow 65504.
    w = softmax(np.zeros(70000, np.float16))
    assert w.dtype == np.float16
    expected = np.float16(1 / 70000)  # a subnormal float16, the nearest to 1/70000
    assert np.all(w == expected)
    assert abs(float(w.astype(np.float64).sum()) - 1.0) < 0.01


def test_float16_weights_agree_with_float64():
    rng = np.random.default_rng(16)
    x = rng.normal(size=(4, 300)).astype(np.float16)
    w = softmax(x)
    assert w.dtype == np.float16
    e = np.exp(x.astype(np.float64) - x.astype(np.float64).max(axis=-1, keepdims=True))
    np.testing.assert_allclose(w, e / e.sum(axis=-1, keepdims=True), rtol=2e-3, atol=1e-6)


def test_masked_arrays_are_refused_not_silently_unmasked():
    x = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 0, 1])
    with pytest.raises(TypeError, match=r"^x is a numpy masked array .*mask would be silently"):
        softmax(x)
    with pytest.raises(TypeError, match=r"^mask is a numpy masked array"):
        softmax([1.0, 2.0], mask=np.ma.masked_array([True, True], mask=[0, 1]))


def test_the_callers_error_state_does_not_matter():
    with np.errstate(all="raise"):
        np.testing.assert_array_equal(softmax([0.0, -1000.0]), [1.0, 0.0])
        np.testing.assert_array_equal(softmax([1e308, -1e308]), [1.0, 0.0])
        w = softmax([[1.0, 2.0], [3.0, 4.0]], mask=[[False, False], [True, True]],
                    fully_masked="zero")
        np.testing.assert_array_equal(w[0], [0.0, 0.0])


def test_no_warning_on_the_widest_finite_range():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning fails the test
        np.testing.assert_array_equal(softmax([1e308, -1e308]), [1.0, 0.0])
        np.testing.assert_array_equal(softmax(np.array([3e38, -3e38], np.float32)), [1.0, 0.0])


def test_time_spans_are_not_numbers():
    with pytest.raises(TypeError, match=r"^x has dtype timedelta64\[s\]; expected an array"):
        softmax(np.array([1, 2], dtype="timedelta64[s]"))


def test_ragged_mask_names_the_mask():
    with pytest.raises(ValueError, match=r"^mask could not be turned into an array .*rectangular"):
        softmax([[1.0, 2.0], [3.0, 4.0]], mask=[[True, True], [True]])


class _Unconvertible:
    """Stands for another library's array whose conversion to numpy fails (a tensor that
    requires grad, a bfloat16 tensor): ``__array__`` raises that library's error."""

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("Can't call numpy() on Tensor that requires grad.")


def test_objects_that_fail_conversion_get_a_type_error_naming_the_argument():
    with pytest.raises(TypeError, match=r"^x of type _Unconvertible could not be turned into a "
                                        r"numpy array \(RuntimeError: Can't call numpy"):
        softmax(_Unconvertible())
