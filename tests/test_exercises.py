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
