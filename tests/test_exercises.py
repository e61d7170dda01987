"""The exercise checker: each verdict, for each kind of expected answer."""

import numpy as np
import pytest

from attention_lib import answer_verdict, check_answer


@pytest.mark.parametrize("empty", [None, ...])
def test_empty_answer_is_not_answered(empty):
    assert answer_verdict(empty, 3.0) == "not answered yet"


def test_numbers_within_tolerance():
    assert answer_verdict(0.1 + 0.2, 0.3) == "correct"
    assert answer_verdict(0.31, 0.3, hint="h") == "not quite: h"
    assert answer_verdict(0.3001, 0.3, rtol=1e-2) == "correct"


def test_arrays_need_the_shape_and_the_values():
    want = np.arange(6.0).reshape(2, 3)
    assert answer_verdict(want.tolist(), want) == "correct"
    assert answer_verdict(want.T, want).startswith("not quite: expected shape (2, 3), got (3, 2)")
    assert answer_verdict(want + 1, want) == "not quite"
    assert "inf or nan" in answer_verdict(np.full((2, 3), np.nan), want)


def test_words_ignore_case_and_spacing():
    assert answer_verdict("  The  Cat", "the cat") == "correct"
    assert answer_verdict("dog", "cat", hint="look at row 2") == "not quite: look at row 2"
    assert "expected a word" in answer_verdict(3, "cat")


def test_bools_sets_and_word_tuples_are_exact():
    assert answer_verdict(True, True) == "correct"
    assert answer_verdict(1, True).startswith("not quite: expected True or False")
    assert answer_verdict({2, 1}, {1, 2}) == "correct"
    assert answer_verdict({1}, {1, 2}) == "not quite"
    assert answer_verdict(["sat", "on"], ("sat", "on")) == "correct"
    assert answer_verdict(("on", "sat"), ("sat", "on")) == "not quite"


def test_a_non_number_for_a_number_says_so():
    assert "expected a number" in answer_verdict("three", 3.0)


def test_check_answer_prints_the_verdict(capsys):
    check_answer(None, 1)
    check_answer(1, 1)
    assert capsys.readouterr().out == "not answered yet\ncorrect\n"


# --------------------------------------------------------------------------------------
# Plausible wrong answers: a verdict, never a crash and never a false "correct"
# --------------------------------------------------------------------------------------

WRONG = [
    # (answer, expected, what the verdict says)
    (3, {0, 1}, "expected a set"),  # a bare number where a set is expected
    (True, {0, 1}, "expected a set"),
    ("01", {"0", "1"}, "expected a set"),  # a string is not the set of its characters
    ({True}, {1}, "True or False"),  # True is not the number 1
    ([[0], [1]], {0, 1}, "unhashable"),
    (np.zeros((2, 2)), {0, 1}, "expected a set"),
    (3, ("cat", "on"), "expected a tuple of 2 items"),  # a number against words
    ("ab", ("a", "b"), "expected a tuple of 2 items, got the string 'ab'"),
    (("cat",), ("cat", "on"), "expected 2 items, got 1"),
    (("cat", 3), ("cat", "on"), "item 1: expected a word"),
    (("Cat", "on"), ("cat", "on"), ""),  # words inside a tuple are exact
    (10**400, 16, ""),  # a huge integer against an integer: compared exactly
    (10**400, 16.0, "too large for a float"),
    (-(10**400), np.float32(2.5), "too large for a float"),
    ([10**400, 1], (16, 1), "too large for a float"),
    (1 + 2j, 1.0, "imaginary part"),  # the imaginary part is not dropped
    (np.array([1.0, 1j]), np.array([1.0, 0.0]), "imaginary part"),
    (True, 1, "got True"),  # True is not 1
    (False, 0.0, "got False"),
    ([True, 2], (1, 2), "got list"),
    (np.array([True, False]), np.array([1.0, 0.0]), "got ndarray"),
    ("3", 3, "got the string '3'"),  # a string that looks like a number
    (["1", "2"], (1, 2), "of dtype <U1"),
    ({1, 2}, (1, 2), "got set"),
    ({"a": 1}, 1.0, "got dict"),
    ([[1, 2], [3]], np.ones((2, 2)), "ragged"),
    (np.datetime64("2026-01-01"), 1.0, "dtype datetime64"),
    (1, True, "expected True or False, got int"),
    (np.array([1, 0]), np.array([True, False]), "array of True and False"),
    ([True], np.array([True, False]), "expected shape (2,), got (1,)"),
    ("cat", 3.0, "expected a number"),
    (3, "cat", "expected a word or phrase, got int"),
    (((4, 3), (4,)), ((4, 3), (4, 3)), "got a ragged tuple"),
    (((4, 3), (4,)), ((4, 3), (4, 3, 1)), "item 1: expected shape (3,), got (1,)"),
    ("on", np.array(["sat", "on"]), "expected a tuple of 2 items"),
    (("on", "sat"), np.array(["sat", "on"]), ""),
]


@pytest.mark.parametrize(("answer", "expected", "says"), WRONG,
                         ids=[f"{type(a).__name__}-for-{type(e).__name__}-{i}"
                              for i, (a, e, _) in enumerate(WRONG)])
def test_a_plausible_wrong_answer_gets_a_verdict(answer, expected, says):
    verdict = answer_verdict(answer, expected, hint="the hint")
    assert verdict.startswith("not quite: "), verdict
    assert says in verdict and verdict.endswith("the hint"), verdict


RIGHT = [
    # every kind of expected answer the chapters use, answered right in a plausible form
    (np.bool_(True), True),
    (np.float32(0.1) + np.float32(0.2), 0.3),  # float32 arithmetic, within rtol
    (12 * 1024**2 + 13 * 1024, 12 * 1024**2 + 13 * 1024),
    (12.6e6 + 13 * 1024 - 12.6e6, np.int64(13 * 1024)),
    (10**400, 10**400),  # huge integers compared exactly
    (10**400 + 1, 10**400),  # ... within rtol
    (2 + 0j, 2.0),  # no imaginary part
    ([0, 1], {1, 0}),  # a list for a set
    (np.array([2, 5]), {5, 2}),
    (frozenset({"a"}), {"a"}),
    (["most", "least"], ("most", "least")),
    (np.array(["sat", "on"]), ("sat", "on")),
    ([(4, 3), (4, 3)], [(4, 3), (4, 3)]),  # a list of shapes
    ([(4, 3), (4,)], [(4, 3), (4,)]),  # ... of different lengths
    (("cat", 3.0), ("cat", 3)),
    ((1, 10), (1, 10)),
    ((2.0, 4), np.array([2, 4])),
    (" More ", "more"),
    ([True, False], np.array([True, False])),
    ([True, False], [True, False]),
    (("sat", "on"), np.array(["sat", "on"])),  # an array of words as the expected answer
    (np.str_("cat"), "cat"),
]


@pytest.mark.parametrize(("answer", "expected"), RIGHT)
def test_a_right_answer_in_a_plausible_form_is_correct(answer, expected):
    assert answer_verdict(answer, expected) == "correct"


def test_huge_integers_and_tolerances_follow_numpy_allclose():
    # |a - e| <= atol + rtol |e|, as np.allclose, but exact on integers of any size
    e = 10**30
    assert answer_verdict(e + 10**24, e) == "correct"  # 1e24 <= 1e-6 * 1e30: the edge
    assert answer_verdict(e + 10**24 + 1, e) == "not quite"
    assert answer_verdict(e + 1, e, rtol=0, atol=0) == "not quite"
    assert answer_verdict(e + 1, e, rtol=0, atol=1) == "correct"
    close = {"rtol": 1e-6, "atol": 1e-9}  # the defaults of answer_verdict
    assert np.allclose(float(e + 10**23), float(e), **close)  # the same verdicts on floats
    assert not np.allclose(float(e + 10**25), float(e), **close)


def test_bad_options_are_the_authors_error():
    with pytest.raises(TypeError, match="^hint=3"):
        answer_verdict(1, 1, hint=3)
    with pytest.raises(ValueError, match="^rtol=-1"):
        answer_verdict(1, 1, rtol=-1)
    with pytest.raises(TypeError, match="^expected=.* cannot be compared"):
        answer_verdict(1, object())
