"""The one training loop: seeded (same seed, same result), its arguments checked, the held-out
set never empty, and a new task runs on it with nothing but a Task."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attention_lib as al
from attention_lib import training as tr


def test_the_loop_is_seeded():
    a = al.train_retrieval(seed=3, steps=50)
    b = al.train_retrieval(seed=3, steps=50)
    np.testing.assert_array_equal(a.losses, b.losses)
    for name in a.params:
        np.testing.assert_array_equal(a.params[name], b.params[name])
        np.testing.assert_array_equal(a.initial_params[name], b.initial_params[name])
    np.testing.assert_array_equal(a.test.keys, b.test.keys)
    assert (a.accuracy, a.target_weight) == (b.accuracy, b.target_weight)
    c = al.train_retrieval(seed=4, steps=50)
    assert not np.array_equal(a.losses, c.losses)
    assert not np.array_equal(a.initial_params["w_q"], c.initial_params["w_q"])


def test_the_result_records_the_run():
    result = al.train_shift(seed=2, steps=4, lr=np.float32(0.01))
    assert result.task == "shift" and result.losses.shape == (4,)
    assert result.config["seed"] == 2 and result.config["shift"] == 2
    assert type(result.config["lr"]) is float and result.config["lr"] == float(np.float32(0.01))
    assert list(result.config)[:1] == ["seed"]
    assert result.seconds > 0


def test_a_numpy_learning_rate_trains_as_the_same_python_float():
    a = al.train_retrieval(seed=0, steps=20, lr=np.float32(0.5))
    b = al.train_retrieval(seed=0, steps=20, lr=float(np.float32(0.5)))
    np.testing.assert_array_equal(a.losses, b.losses)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"lr": True}, TypeError, "^lr=True"),
    ({"lr": 0}, ValueError, "^lr=0"),
    ({"lr": math.inf}, ValueError, "^lr=inf"),
    ({"seed": -1}, ValueError, "^seed=-1"),
    ({"seed": 1.5}, TypeError, "^seed=1.5"),
    ({"seed": True}, TypeError, "^seed=True"),
    ({"steps": 0}, ValueError, "^steps=0"),
    ({"batch_size": 2.0}, TypeError, "^batch_size"),
    ({"n_test": -3}, ValueError, "^n_test"),
    ({"tie_kv": 1}, TypeError, "^tie_kv=1"),
    ({"n_keys": 27, "n_pairs": 6}, ValueError, "^n_keys=27"),
    ({"n_pairs": 9}, ValueError, "^n_pairs=9 > n_keys=8"),
])
def test_training_arguments_are_checked(kwargs, error, match):
    with pytest.raises(error, match=match):
        al.train_retrieval(**{"steps": 1, **kwargs})


@pytest.mark.parametrize("kwargs, error, match", [
    ({"lr": False}, TypeError, "^lr=False"),
    ({"seed": -2}, ValueError, "^seed=-2"),
    ({"base": 0.0}, ValueError, "^base=0.0"),
    ({"shift": 10}, ValueError, "^shift=10 >= length=10"),
])
def test_shift_training_arguments_are_checked(kwargs, error, match):
    with pytest.raises(error, match=match):
        al.train_shift(**{"steps": 1, **kwargs})


def test_a_task_with_no_held_out_sequence_says_which_sizes():
    # one key, one value, one pair: a single possible sequence, always in the training set
    with pytest.raises(ValueError, match=r"no held-out sequence.*n_pairs=1, n_keys=1, "
                                         r"n_values=1.*only 1 distinct"):
        al.train_retrieval(n_pairs=1, n_keys=1, n_values=1, steps=1)
    with pytest.raises(ValueError, match=r"no held-out.*length=2, n_tokens=2.*only 4 distinct"):
        al.train_shift(shift=1, length=2, n_tokens=2, steps=1)
    small = al.train_retrieval(n_pairs=2, n_keys=2, n_values=3, n_train=20, steps=1)
    assert 0 < len(small.test) <= 1000  # a few left: fine


def test_the_number_of_distinct_sequences_is_counted():
    task = tr.retrieval_task(n_pairs=2, n_keys=3, n_values=2)
    rows = task.make_data(5000, np.random.default_rng(0)).rows()
    assert len({r.tobytes() for r in rows}) == task.n_distinct == 48
    shift = tr.shift_task(shift=1, length=3, n_tokens=2)
    rows = shift.make_data(2000, np.random.default_rng(0)).rows()
    assert len({r.tobytes() for r in rows}) == shift.n_distinct == 8


def test_init_params_follows_its_rule():
    p = tr.init_params({"tok_embed": (4000, 25), "w_q": (400, 30), "b_out": (3,)},
                       np.random.default_rng(0))
    assert np.all(p["b_out"] == 0)
    assert abs(p["tok_embed"].std() - 1 / math.sqrt(25)) < 0.002  # N(0, 1/d)
    assert abs(p["w_q"].std() - 1 / math.sqrt(400)) < 0.001  # N(0, 1/fan_in)


def test_a_new_task_runs_on_the_loop():
    """Learn the mean of two numbers, written as a Task (least squares, no attention)."""

    class Pairs:
        def __init__(self, x):
            self.x = x

        def __len__(self):
            return len(self.x)

        def subset(self, index):
            return Pairs(self.x[index])

        def rows(self):
            return self.x

    def loss_and_grads(params, batch):
        x = batch.x.astype(float)
        err = x @ params["w"] - x.mean(axis=1)  # (B,)
        return float(np.mean(err**2)), {"w": 2 * x.T @ err / len(err)}

    def evaluate(params, test):
        x = test.x.astype(float)
        return float(np.mean(np.abs(x @ params["w"] - x.mean(1)) < 0.05)), 0.0

    task = tr.Task("mean", {"n": 2}, 100, lambda n, rng: Pairs(rng.integers(0, 10, (n, 2))),
                   lambda rng: {"w": rng.normal(size=2)}, loss_and_grads, evaluate)
    result = tr.train(task, seed=0, steps=300, batch_size=16, lr=0.05, n_train=30, n_test=200)
    np.testing.assert_allclose(result.params["w"], [0.5, 0.5], atol=0.01)
    assert result.accuracy == 1.0 and result.task == "mean" and result.config["n"] == 2
    assert 0 < len(result.test) < 200  # the test rows seen in training were dropped
    with pytest.raises(TypeError, match="task"):
        tr.train({"name": "mean"})
