"""The soft dictionary: gradient against central differences, loss against the formula written
out, the trained model against its targets (several seeds), tied W_K = W_V, and its forward
pass refusing indices it cannot read."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from training_reference import (
    RETRIEVAL_SHAPES,
    assert_gradients_match,
    central_differences,
    small_params,
)

import attention_lib as al
from attention_lib import training as tr

# The unit tests train a handful of seeds (about 3 s each on 2 cores); set
# RETRIEVAL_SEEDS=50 to sweep more.
SEEDS = range(int(os.environ.get("RETRIEVAL_SEEDS", "4")))


def small_data(seed, n=6):
    return tr.make_retrieval_data(n, n_pairs=4, n_keys=5, n_values=3,
                                  rng=np.random.default_rng(seed))


def test_retrieval_gradient_matches_central_differences():
    params = small_params(RETRIEVAL_SHAPES, seed=0)
    data = small_data(1)
    _, grads = tr.retrieval_loss_and_grads(params, data)
    fd = central_differences(lambda p: tr.retrieval_loss_and_grads(p, data)[0], params)
    assert_gradients_match(grads, fd)


def test_retrieval_loss_is_the_cross_entropy_written_out():
    params = small_params(RETRIEVAL_SHAPES, seed=2)
    data = tr.make_retrieval_data(5, n_pairs=3, n_keys=5, n_values=3,
                                  rng=np.random.default_rng(3))
    total = 0.0
    for b in range(len(data)):
        x = [params["key_embed"][k] + params["value_embed"][v]
             for k, v in zip(data.keys[b], data.values[b], strict=True)]
        q = params["query_embed"][data.query[b]] @ params["w_q"]
        scores = [q @ (xi @ params["w_k"]) / math.sqrt(3) for xi in x]
        e = [math.exp(s) for s in scores]
        z = sum(ei / sum(e) * (xi @ params["w_v"]) for ei, xi in zip(e, x, strict=True))
        logits = z @ params["w_out"] + params["b_out"]
        total -= logits[data.answer[b]] - math.log(sum(math.exp(v) for v in logits))
    loss, _ = tr.retrieval_loss_and_grads(params, data)
    assert abs(loss - total / len(data)) < 1e-12


def test_tied_kv_gradient_is_the_derivative_of_the_shared_matrix():
    """With W_V = W_K one matrix W, the task's gradient for it is d loss / d W (both uses)."""
    task = tr.retrieval_task(n_pairs=4, n_keys=5, n_values=3, d_model=4, d_k=3, tie_kv=True)
    params = small_params({k: v for k, v in RETRIEVAL_SHAPES.items() if k != "w_v"}
                          | {"w_k": (4, 3), "w_out": (3, 3)}, seed=5)
    data = small_data(6)

    def loss(p):
        return tr.retrieval_loss_and_grads(p | {"w_v": p["w_k"]}, data)[0]

    _, grads = task.loss_and_grads(params | {"w_v": params["w_k"]}, data)
    fd = central_differences(loss, params)
    assert_gradients_match({k: v for k, v in grads.items() if k != "w_v"}, fd)
    np.testing.assert_array_equal(grads["w_v"], grads["w_k"])


def test_tied_training_keeps_one_matrix():
    result = al.train_retrieval(seed=0, steps=30, tie_kv=True)
    np.testing.assert_array_equal(result.params["w_k"], result.params["w_v"])
    np.testing.assert_array_equal(result.initial_params["w_k"], result.initial_params["w_v"])
    untied = al.train_retrieval(seed=0, steps=30)
    # the same start everywhere else: only W_V differs
    for name in result.initial_params:
        same = np.array_equal(result.initial_params[name], untied.initial_params[name])
        assert same == (name != "w_v"), name
    assert result.config["tie_kv"] is True and untied.config["tie_kv"] is False


@pytest.mark.parametrize("seed", SEEDS)
def test_train_retrieval_reaches_its_targets(seed):
    result = al.train_retrieval(seed=seed)
    assert result.accuracy >= 0.95
    assert result.target_weight >= 0.9
    assert len(result.test) > 900  # held-out sequences, none of them in the training set
    train_rows = {r.tobytes() for r in tr.make_retrieval_data(
        4000, rng=np.random.default_rng(np.random.SeedSequence(seed).spawn(4)[0])).rows()}
    assert not any(r.tobytes() in train_rows for r in result.test.rows())
    # The headline numbers, recomputed here from the returned weights.
    logits, weights = al.retrieval_forward(result.params, result.test.keys,
                                           result.test.values, result.test.query)
    assert np.mean(logits.argmax(-1) == result.test.answer) == result.accuracy
    picked = weights[np.arange(len(result.test)), result.test.target]
    assert np.mean(picked) == result.target_weight
    assert result.losses[-100:].mean() < 0.1 * result.losses[:10].mean()


@pytest.fixture(scope="module")
def params():
    return al.train_retrieval(seed=0, steps=2).params


@pytest.mark.parametrize("keys, values, query, error, match", [
    ([[0, -1]], [[0, 1]], [0], ValueError, r"^keys contains 1 entry outside 0\.\.7, the first -1"),
    ([[0, 1]], [[-8, 1]], [0], ValueError, r"^values contains 1 entry outside 0\.\.7"),
    ([[0, 1]], [[0, 1]], [-1], ValueError, r"^query contains 1 entry outside 0\.\.7"),
    ([[0, 8]], [[0, 1]], [0], ValueError, r"^keys contains 1 entry outside 0\.\.7, the first 8"),
    ([[0.0, 1.0]], [[0, 1]], [0], TypeError, "^keys has dtype float64"),
    ([[True, False]], [[0, 1]], [0], TypeError, "^keys has dtype bool"),
    ([0, 1], [0, 1], [0], ValueError, r"^keys has 1 dimension"),
    ([[0, 1]], [[0, 1, 2]], [0], ValueError, "^keys"),
    ([[0, 1]], [[0, 1]], [0, 1], ValueError, "^keys"),
])
def test_retrieval_forward_refuses_indices_it_cannot_read(params, keys, values, query, error,
                                                          match):
    with pytest.raises(error, match=match):
        al.retrieval_forward(params, keys, values, query)


def test_retrieval_forward_refuses_bad_params(params):
    with pytest.raises(ValueError, match=r"^params lacks \['key_embed'"):
        al.retrieval_forward({"w_q": params["w_q"]}, [[0]], [[0]], [0])
    with pytest.raises(ValueError, match=r"^params\['w_k'\] has shape \(3, 16\)"):
        al.retrieval_forward(params | {"w_k": np.ones((3, 16))}, [[0]], [[0]], [0])
    with pytest.raises(ValueError, match=r"^params\['b_out'\] contains 1 NaN"):
        al.retrieval_forward(params | {"b_out": np.r_[np.nan, np.zeros(7)]}, [[0]], [[0]], [0])
    with pytest.raises(TypeError, match="^params is a list"):
        al.retrieval_forward([1], [[0]], [[0]], [0])
    with pytest.raises(TypeError, match="^data is a dict"):
        tr.retrieval_loss_and_grads(params, {"keys": [[0]]})
    logits, _ = al.retrieval_forward(params | {"note": "ignored"}, [[0]], [[1]], [0])
    assert logits.shape == (1, 8)
