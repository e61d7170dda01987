"""The attention head: its backward pass against central differences of its forward pass,
and the masked cross-entropy against the formula written out."""

from __future__ import annotations

import math

import numpy as np
import pytest
from training_reference import assert_gradients_match, central_differences, small_params

from attention_lib.training.head import cross_entropy, head_backward, head_forward, scatter_rows


@pytest.mark.parametrize("causal", [False, True])
def test_head_backward_matches_central_differences(causal):
    rng = np.random.default_rng(11)
    params = small_params({"w_q": (4, 3), "w_k": (4, 3), "w_v": (4, 2), "w_out": (2, 5),
                           "b_out": (5,)}, seed=12)
    t = 4 if causal else 2
    x_q, x_kv = rng.normal(size=(3, t, 4)), rng.normal(size=(3, 4, 4))
    if causal:
        x_q = x_kv.copy()  # causal self-attention: the queries are the positions themselves
    labels = rng.integers(0, 5, size=(3, t))
    valid = rng.random((3, t)) < 0.7
    valid[0, 0] = True

    def loss(p, x_q=x_q, x_kv=x_kv):
        logits, _, _ = head_forward(p, x_q, x_kv, causal)
        return cross_entropy(logits, labels, valid)[0]

    logits, _, cache = head_forward(params, x_q, x_kv, causal)
    _, d_logits = cross_entropy(logits, labels, valid)
    grads, d_x_q, d_x_kv = head_backward(params, cache, d_logits, causal)
    assert_gradients_match(grads, central_differences(loss, params))
    if not causal:  # the inputs' gradients, with x_q and x_kv apart
        fd = central_differences(lambda d: loss(params, d["x_q"], d["x_kv"]),
                                 {"x_q": x_q.copy(), "x_kv": x_kv.copy()})
        assert_gradients_match({"x_q": d_x_q, "x_kv": d_x_kv}, fd)


def test_cross_entropy_is_the_formula_written_out():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 4)) * 3
    labels = rng.integers(0, 4, size=(2, 3))
    valid = np.array([[True, False, True], [False, True, True]])
    terms = [math.log(sum(math.exp(x) for x in logits[b, t])) - logits[b, t, labels[b, t]]
             for b in range(2) for t in range(3) if valid[b, t]]
    loss, d_logits = cross_entropy(logits, labels, valid)
    assert abs(loss - sum(terms) / len(terms)) < 1e-12
    assert np.all(d_logits[~valid] == 0)
    np.testing.assert_allclose(d_logits.sum(axis=-1), 0.0, atol=1e-15)  # softmax - one-hot


def test_scatter_rows_sums_repeated_rows():
    rows = np.arange(12.0).reshape(2, 3, 2)
    index = np.array([[0, 2, 0], [1, 0, 2]])
    grad = scatter_rows((4, 2), index, rows)
    expected = np.zeros((4, 2))
    for b in range(2):
        for j in range(3):
            expected[index[b, j]] += rows[b, j]
    np.testing.assert_array_equal(grad, expected)
