"""The reusable checks for index arrays and named weight arrays (a model in memory or read from
a weights file): what they accept, and the error for each way to be wrong."""

from __future__ import annotations

import numpy as np
import pytest

from attention_lib._validation import index_array, json_document, token_names, weight_arrays

SHAPES = {"embed": ("n", "d"), "w": ("d", 3), "b": (3,)}


def good():
    return {"embed": np.ones((5, 2)), "w": np.ones((2, 3)), "b": [0, 0, 0]}


def test_weight_arrays_binds_each_letter_once():
    tables = good()
    arrays, dims = weight_arrays(tables, SHAPES, "p")
    assert dims == {"n": 5, "d": 2} and list(arrays) == ["embed", "w", "b"]
    assert all(a.dtype == np.float64 for a in arrays.values())
    arrays["w"][0, 0] = 7.0  # a copy: the caller's array is untouched
    assert tables["w"][0, 0] == 1.0
    _, dims = weight_arrays(good(), SHAPES, "p", dims={"n": 5})
    assert dims["n"] == 5
    kept, _ = weight_arrays(good() | {"note": "x"}, SHAPES, "p", extra="ignore")
    assert "note" not in kept


@pytest.mark.parametrize("change, kwargs, error, match", [
    ({"w": np.ones((4, 3))}, {}, ValueError,
     r"^p\['w'\] has shape \(4, 3\); expected \(d, 3\) = \(2, 3\), since d = 2 "
     r"\(from p\['embed'\]\)"),
    ({"b": np.ones(4)}, {}, ValueError, r"^p\['b'\] has shape \(4,\); expected \(3,\) = \(3,\)$"),
    ({}, {"dims": {"n": 6}}, ValueError, r"^p\['embed'\] has shape \(5, 2\); expected \(n, d\) "
                                         r"= \(6, 2\), since n = 6 \(given\)"),
    ({"w": np.ones(2)}, {}, ValueError, r"^p\['w'\] has 1 dimension"),
    ({"w": np.full((2, 3), np.inf)}, {}, ValueError, r"^p\['w'\] contains 6 NaN or infinite"),
    ({"b": ["a", "b", "c"]}, {}, TypeError, r"^p\['b'\] has dtype <U1"),
    ({"b": np.ones(3, dtype=complex)}, {}, TypeError, r"^p\['b'\] has complex dtype"),
    ({"extra": 1.0}, {}, ValueError, r"^p has unexpected entries \['extra'\]"),
    ({"embed": None}, {}, TypeError, r"^p\['embed'\] is None"),
])
def test_weight_arrays_names_what_is_wrong(change, kwargs, error, match):
    with pytest.raises(error, match=match):
        weight_arrays(good() | change, SHAPES, "p", **kwargs)


def test_weight_arrays_refuses_what_is_not_a_mapping_or_lacks_a_name():
    with pytest.raises(TypeError, match="^p is a list"):
        weight_arrays([1.0], SHAPES, "p")
    with pytest.raises(ValueError, match=r"^p lacks \['b'\]"):
        weight_arrays({k: v for k, v in good().items() if k != "b"}, SHAPES, "p")


def test_index_array_refuses_negative_and_large_indices():
    np.testing.assert_array_equal(index_array(np.array([2, 0], dtype=np.uint8), 3, "i"), [2, 0])
    with pytest.raises(ValueError, match=r"^i contains 2 entries outside 0\.\.2, the first -1 "
                                         r"at index \(0, 1\)"):
        index_array([[0, -1], [3, 1]], 3, "i")
    with pytest.raises(ValueError, match="^i has an empty axis"):
        index_array(np.zeros((0, 2), dtype=int), 3, "i")
    with pytest.raises(TypeError, match="^i has dtype float64"):
        index_array([1.0], 3, "i")


def test_strict_json_and_token_names():
    assert json_document('{"a": [1, 2.5]}', "f") == {"a": [1, 2.5]}
    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ValueError, match=f"^f contains a bare {constant}"):
            json_document(f'{{"a": [{constant}]}}', "f")
    assert token_names(("x", "y1"), "v") == ["x", "y1"]
    with pytest.raises(ValueError, match=r"^v names \['x'\] more than once"):
        token_names(["x", "y", "x"], "v")
    with pytest.raises(ValueError, match="^v is empty"):
        token_names([], "v")
    with pytest.raises(ValueError, match=r"^v\[1\]='\?'"):
        token_names(["x", "?"], "v")
