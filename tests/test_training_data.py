"""The tasks' data: soft-dictionary sequences keep their promises, shift sequences have their
shape, held-out rows that occur in training are found."""

from __future__ import annotations

import numpy as np
import pytest

from attention_lib import training as tr
from attention_lib.training.data import unseen


def test_retrieval_data_is_consistent():
    data = tr.make_retrieval_data(200, n_pairs=5, n_keys=6, n_values=4,
                                  rng=np.random.default_rng(8))
    assert data.keys.dtype == np.int64 and len(data) == 200
    for b in range(len(data)):
        assert len(set(data.keys[b].tolist())) == 5  # distinct keys
        assert data.keys[b, data.target[b]] == data.query[b]
        assert data.values[b, data.target[b]] == data.answer[b]
        assert data.keys[b].max() < 6 and data.values[b].max() < 4
    assert set(data.target.tolist()) == set(range(5))
    row = data.rows()[7]
    assert row.tolist() == data.keys[7].tolist() + data.values[7].tolist() + [data.query[7]]


def test_subset_keeps_every_field_together():
    data = tr.make_retrieval_data(10, rng=np.random.default_rng(0))
    part = data.subset(np.array([3, 1]))
    assert part.answer.tolist() == [data.answer[3], data.answer[1]]
    assert part.keys.tolist() == [data.keys[3].tolist(), data.keys[1].tolist()]
    shift = tr.make_shift_data(6, length=5, rng=np.random.default_rng(0))
    assert shift.subset(np.array([True, False] * 3)).tokens.tolist() == shift.tokens[::2].tolist()
    assert shift.subset([0]).shift == 2 and shift.rows().shape == (6, 5)


def test_unseen_drops_training_sequences():
    train = np.array([[1, 2], [3, 4]])
    test = np.array([[3, 4], [4, 3], [1, 2], [0, 0]])
    np.testing.assert_array_equal(unseen(test, train), [False, True, False, True])


def test_data_bad_input():
    with pytest.raises(ValueError, match="n_pairs=7 > n_keys=6"):
        tr.make_retrieval_data(3, n_pairs=7, n_keys=6, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="shift=4 >= length=4"):
        tr.make_shift_data(3, length=4, shift=4, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        tr.make_retrieval_data(3, rng=0)
    with pytest.raises(TypeError, match="n_sequences"):
        tr.make_shift_data(True, rng=np.random.default_rng(0))
