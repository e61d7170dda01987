"""The shift task: gradient against central differences, the unlabelled positions left out, the
band learned, and its forward pass refusing tokens it cannot read."""

from __future__ import annotations

import numpy as np
import pytest
from training_reference import (
    SHIFT_SHAPES,
    assert_gradients_match,
    central_differences,
    small_params,
)

import attention_lib as al
from attention_lib import training as tr


def test_shift_gradient_matches_central_differences():
    params = small_params(SHIFT_SHAPES, seed=4)
    data = tr.make_shift_data(3, length=5, n_tokens=4, shift=2, rng=np.random.default_rng(5))
    _, grads = tr.shift_loss_and_grads(params, data, base=100.0)
    fd = central_differences(lambda p: tr.shift_loss_and_grads(p, data, base=100.0)[0], params)
    assert_gradients_match(grads, fd)


def test_shift_loss_ignores_the_unlabelled_positions():
    params = small_params(SHIFT_SHAPES, seed=6)
    data = tr.make_shift_data(2, length=5, n_tokens=4, shift=3, rng=np.random.default_rng(7))
    logits, weights = tr.shift_forward(params, data.tokens)
    log_p = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    expected = -np.mean([log_p[b, p, data.tokens[b, p - 3]] for b in range(2)
                         for p in range(3, 5)])
    assert abs(tr.shift_loss_and_grads(params, data)[0] - expected) < 1e-12
    assert np.all(np.triu(weights, k=1) == 0)  # causal


def test_train_shift_learns_the_band():
    result = al.train_shift(seed=0)
    assert result.accuracy >= 0.95
    _, weights = al.shift_forward(result.params, result.test.tokens)
    mean = weights.mean(axis=0)  # (n, n)
    shift = result.config["shift"]
    for p in range(shift, mean.shape[0]):
        assert mean[p].argmax() == p - shift  # the band: p attends to p - shift
    assert np.isclose(result.target_weight, np.mean([mean[p, p - shift]
                                                     for p in range(shift, mean.shape[0])]))
    assert result.target_weight > 0.5


@pytest.mark.parametrize("tokens, kwargs, error, match", [
    ([[0, -1, 2]], {}, ValueError, r"^tokens contains 1 entry outside 0\.\.3, the first -1"),
    ([[0, 4, 2]], {}, ValueError, r"^tokens contains 1 entry outside 0\.\.3, the first 4"),
    ([[0.0, 1.0]], {}, TypeError, "^tokens has dtype float64"),
    ([0, 1], {}, ValueError, "^tokens has 1 dimension"),
    ([[0, 1]], {"base": -1.0}, ValueError, "^base=-1.0"),
    ([[0, 1]], {"base": True}, TypeError, "^base=True"),
])
def test_shift_forward_refuses_what_it_cannot_read(tokens, kwargs, error, match):
    params = small_params(SHIFT_SHAPES, seed=0)
    with pytest.raises(error, match=match):
        al.shift_forward(params, tokens, **kwargs)
