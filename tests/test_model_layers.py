"""The one model's smaller pieces: the read-out model of the retrieval tasks (one attention
layer whose output projection is the read-out) against central differences, the loss against
its formula written out, the embeddings' scatter-add, and the hooks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from training_reference import assert_gradients_match, central_differences, small_params

import attention_lib as al
from attention_lib.model.hooks import merge_hooks
from attention_lib.model.layers import embedding_backward
from attention_lib.model.loss import cross_entropy
from attention_lib.model.readout import readout_backward, readout_forward


@pytest.mark.parametrize("causal", [False, True])
def test_readout_backward_matches_central_differences(causal):
    rng = np.random.default_rng(11)
    params = small_params({"w_q": (4, 3), "w_k": (4, 3), "w_v": (4, 2), "w_out": (2, 5),
                           "b_out": (5,)}, seed=12)
    t = 4 if causal else 2
    x_q, x_kv = rng.normal(size=(3, t, 4)), rng.normal(size=(3, 4, 4))
    labels = rng.integers(0, 5, size=(3, t))
    valid = rng.random((3, t)) < 0.7
    valid[0, 0] = True
    memory = None if causal else x_kv  # causal: self-attention over the positions themselves

    def loss(p, x_q=x_q, x_kv=memory):
        logits, _, _ = readout_forward(p, x_q if x_kv is not None else p.get("x", x_q), x_kv,
                                       causal=causal)
        return cross_entropy(logits, labels, valid)[0]

    x_q = x_kv.copy() if causal else x_q
    logits, _, saved = readout_forward(params, x_q, memory, causal=causal)
    _, d_logits = cross_entropy(logits, labels, valid)
    grads, d_x_q, d_x_kv = readout_backward(params, d_logits, saved)
    assert_gradients_match(grads, central_differences(lambda p: loss(p, x_q, memory), params))
    if not causal:  # the inputs' gradients, with x_q and x_kv apart
        fd = central_differences(lambda d: loss(params, d["x_q"], d["x_kv"]),
                                 {"x_q": x_q.copy(), "x_kv": x_kv.copy()})
        assert_gradients_match({"x_q": d_x_q, "x_kv": d_x_kv}, fd)
    else:  # x gave the queries, the keys and the values: one gradient with all three
        fd = central_differences(lambda d: cross_entropy(readout_forward(
            params, d["x"], None, causal=True)[0], labels, valid)[0], {"x": x_q.copy()})
        assert d_x_kv is None
        assert_gradients_match({"x": d_x_q}, fd)


def test_multi_head_readout_keeps_the_tasks_shapes():
    rng = np.random.default_rng(1)
    params = small_params({"w_q": (6, 4, 2), "w_k": (6, 2, 2), "w_v": (6, 2, 2),
                           "w_out": (4, 2, 3, 5), "b_out": (3, 5)}, seed=2)
    x_q, x_kv = rng.normal(size=(2, 1, 6)), rng.normal(size=(2, 7, 6))
    labels = rng.integers(0, 15, size=(2, 1))

    def loss(p):
        logits, _, _ = readout_forward(p, x_q, x_kv, n_heads=4, n_kv_heads=2)
        return cross_entropy(logits, labels)[0]

    logits, weights, saved = readout_forward(params, x_q, x_kv, n_heads=4, n_kv_heads=2)
    assert logits.shape == (2, 1, 15) and weights.shape == (2, 4, 1, 7)
    grads, _, _ = readout_backward(params, cross_entropy(logits, labels)[1], saved)
    assert {k: g.shape for k, g in grads.items()} == {k: a.shape for k, a in params.items()}
    assert_gradients_match(grads, central_differences(loss, params))


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
    every = cross_entropy(logits, labels)[0]
    assert abs(every - np.mean([math.log(sum(math.exp(x) for x in logits[b, t]))
                                - logits[b, t, labels[b, t]]
                                for b in range(2) for t in range(3)])) < 1e-12


def test_cross_entropy_over_the_allowed_classes_only():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(2, 5))
    allowed = np.array([[True, False, True, False, False], [False, True, True, True, False]])
    labels = np.array([2, 1])
    loss, d = cross_entropy(logits, labels, allowed=allowed)
    ref = np.mean([math.log(sum(math.exp(logits[b, c]) for c in range(5) if allowed[b, c]))
                   - logits[b, labels[b]] for b in range(2)])
    assert abs(loss - ref) < 1e-12
    assert np.all(d[~allowed] == 0)
    fd = central_differences(lambda p: cross_entropy(p["z"], labels, allowed=allowed)[0],
                             {"z": logits.copy()})["z"]
    np.testing.assert_allclose(d, fd, atol=1e-9)


def test_embedding_backward_sums_repeated_rows():
    rows = np.arange(12.0).reshape(2, 3, 2)
    index = np.array([[0, 2, 0], [1, 0, 2]])
    grad = embedding_backward(np.zeros((4, 2)), (4, 2), index, rows)
    expected = np.zeros((4, 2))
    for b in range(2):
        for j in range(3):
            expected[index[b, j]] += rows[b, j]
    np.testing.assert_array_equal(grad, expected)


CONFIG = al.GPTConfig(vocab_size=9, context=6, d_model=8, n_layers=2, n_heads=2, d_ff=12)


def _model():
    return al.init_gpt(CONFIG, seed=3, dtype=np.float64, std=0.3)


def test_every_site_is_reached_in_order_with_its_shape():
    params, tokens = _model(), np.array([[1, 2, 3, 4]])
    order = []
    hooks = {site: (lambda v, site=site: order.append((site, v.shape)))
             for site in al.hook_sites(CONFIG)}
    al.gpt_logits(params, CONFIG, tokens, hooks=hooks)
    assert [s for s, _ in order] == al.hook_sites(CONFIG)
    shapes = dict(order)
    assert shapes["embed"] == (1, 4, 8) and shapes["logits"] == (1, 4, 9)
    assert shapes["blocks.1.attn.weights"] == (1, 2, 4, 4)
    assert shapes["blocks.0.attn.heads"] == (1, 2, 4, 4)
    assert shapes["blocks.0.ff.hidden"] == (1, 4, 12)


def test_capture_changes_nothing_and_keeps_copies():
    params, tokens = _model(), np.array([[1, 2, 3, 4]])
    seen = {}
    hooked = al.gpt_logits(params, CONFIG, tokens,
                           hooks=al.capture_hooks(seen, al.hook_sites(CONFIG)))
    assert np.array_equal(hooked, al.gpt_logits(params, CONFIG, tokens))
    assert np.array_equal(seen["logits"], hooked)
    np.testing.assert_allclose(seen["blocks.1.resid_post"] @ np.zeros((8, 1)), 0)
    w = al.gpt_attention_weights(params, CONFIG, tokens)
    assert np.array_equal(seen["blocks.0.attn.weights"], w[0])


def test_scaling_heads_is_the_head_mask_and_removes_a_head():
    params, tokens = _model(), np.array([[1, 2, 3, 4]])
    mask = np.array([[1.0, 0.0], [0.5, 1.0]])
    by_hooks = al.gpt_logits(params, CONFIG, tokens, hooks=al.head_scale_hooks(mask))
    assert np.array_equal(by_hooks, al.gpt_logits(params, CONFIG, tokens, head_mask=mask))
    # removing head 1 of layer 0 by hand: its columns of the merged heads are zero before W_O
    seen = {}
    al.gpt_logits(params, CONFIG, tokens, head_mask=mask,
                  hooks=al.capture_hooks(seen, ["blocks.0.attn.heads", "blocks.0.attn.out"]))
    assert np.all(seen["blocks.0.attn.heads"][:, 1] == 0)
    merged = np.concatenate([seen["blocks.0.attn.heads"][0, 0],
                             np.zeros((4, 4))], axis=-1)  # (T, d)
    expected = merged @ params["blocks.0.attn.w_o"] + params["blocks.0.attn.b_o"]
    np.testing.assert_allclose(seen["blocks.0.attn.out"][0], expected, rtol=1e-12)


def test_replaced_weights_are_what_the_heads_average_with():
    params, tokens = _model(), np.array([[1, 2, 3, 4]])
    forced = np.zeros((1, 2, 4, 4))
    forced[..., 0] = 1.0  # every query of every head on position 0
    seen = {}
    hooks = merge_hooks({"blocks.0.attn.weights": lambda w: forced},
                        al.capture_hooks(seen, ["blocks.0.attn.v", "blocks.0.attn.heads"]))
    al.gpt_logits(params, CONFIG, tokens, hooks=hooks)
    v0 = seen["blocks.0.attn.v"][0, :, 0]  # (h, e): each head's value at position 0
    np.testing.assert_allclose(seen["blocks.0.attn.heads"][0],
                               np.broadcast_to(v0[:, None, :], (2, 4, 4)), rtol=1e-12)


def test_hooks_refuse_what_would_be_silently_wrong():
    params, tokens = _model(), np.array([[1, 2]])
    with pytest.raises(ValueError, match="'blocks.7.attn.weights'"):
        al.gpt_logits(params, CONFIG, tokens, hooks={"blocks.7.attn.weights": print})
    with pytest.raises(TypeError, match="hooks\\['embed'\\]"):
        al.gpt_logits(params, CONFIG, tokens, hooks={"embed": 3})
    with pytest.raises(ValueError, match="'blocks.0.attn.heads' returned shape"):
        al.gpt_logits(params, CONFIG, tokens,
                      hooks={"blocks.0.attn.heads": lambda h: h[..., :1]})
    with pytest.raises(ValueError, match="3 entries per layer"):
        al.gpt_logits(params, CONFIG, tokens, hooks=al.head_scale_hooks(np.ones((2, 3))))
    with pytest.raises(TypeError, match="hooks is a list"):
        al.gpt_logits(params, CONFIG, tokens, hooks=[])
