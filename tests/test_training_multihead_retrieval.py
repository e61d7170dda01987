"""The multi-head soft dictionary (query heads sharing key/value heads, linear attention, a
window, values of several symbols): gradients against central differences, the forward pass
against a loop over heads written out here, the one-head case against chapter 10's model,
training results, and the inputs it refuses."""

from __future__ import annotations

import math

import numpy as np
import pytest
from training_reference import assert_gradients_match, central_differences

import attention_lib as al
from attention_lib import training as tr


def shapes(h, h_kv, e=3, d=5, n_keys=6, n_values=3, f=1):
    return {"key_embed": (n_keys, d), "value_embed": (f, n_values, d),
            "query_embed": (n_keys, d), "w_q": (d, h, e), "w_k": (d, h_kv, e),
            "w_v": (d, h_kv, e), "w_out": (h, e, f, n_values), "b_out": (f, n_values)}


def random_params(h, h_kv, seed, **sizes):
    rng = np.random.default_rng(seed)
    return {name: rng.normal(0.0, 0.7, size=shape)
            for name, shape in shapes(h, h_kv, **sizes).items()}


def data(seed, n=6, n_pairs=5, n_keys=6, n_codes=3):
    return tr.make_retrieval_data(n, n_pairs=n_pairs, n_keys=n_keys, n_values=n_codes,
                                  rng=np.random.default_rng(seed))


# ----------------------------------------------------------------- an independent reference


def phi(x):
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def reference_forward(p, keys, values, query, attention="softmax", window=None):
    """Logits (B, f, c) and weights (B, h, n), one sequence and one head at a time, with the
    key/value head of query head i taken as i // g: no grouping, no batching, plain loops."""
    f, c, _ = p["value_embed"].shape
    h, h_kv = p["w_q"].shape[1], p["w_k"].shape[1]
    g = h // h_kv
    batch, n = np.shape(keys)
    logits = np.zeros((batch, f, c))
    weights = np.zeros((batch, h, n))
    for b in range(batch):
        xs = []
        for j in range(n):
            x = p["key_embed"][keys[b][j]].copy()
            code = values[b][j]
            for s in range(f):
                x += p["value_embed"][s, code % c]
                code //= c
            xs.append(x)
        x_q = p["query_embed"][query[b]]
        out = p["b_out"].copy()
        for i in range(h):
            a = i // g
            q = x_q @ p["w_q"][:, i, :]
            ks = [x @ p["w_k"][:, a, :] for x in xs]
            vs = [x @ p["w_v"][:, a, :] for x in xs]
            visible = [window is None or j >= n - window for j in range(n)]
            if attention == "softmax":
                scores = [q @ k / math.sqrt(len(q)) if ok else -math.inf
                          for k, ok in zip(ks, visible, strict=True)]
                top = max(scores)
                e = [math.exp(s - top) for s in scores]
            else:
                e = [float(phi(q) @ phi(k)) for k in ks]
            w = [ei / sum(e) for ei in e]
            z = sum(wi * vi for wi, vi in zip(w, vs, strict=True))
            weights[b, i] = w
            out = out + np.einsum("e,efc->fc", z, p["w_out"][i])
        logits[b] = out
    return logits, weights


@pytest.mark.parametrize("attention, window", [("softmax", None), ("softmax", 2),
                                               ("linear", None)])
@pytest.mark.parametrize("h, h_kv", [(4, 4), (4, 2), (4, 1), (2, 1)])
@pytest.mark.parametrize("f", [1, 2])
def test_forward_is_the_loop_over_heads(attention, window, h, h_kv, f):
    p = random_params(h, h_kv, seed=h * 10 + h_kv + f, f=f)
    batch = data(3, n_codes=3**f)
    logits, weights = tr.multihead_retrieval_forward(p, batch.keys, batch.values, batch.query,
                                                     attention=attention, window=window)
    want_logits, want_weights = reference_forward(p, batch.keys, batch.values, batch.query,
                                                  attention, window)
    np.testing.assert_allclose(logits, want_logits, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights, want_weights, rtol=1e-12, atol=1e-14)
    if window is not None:  # nothing outside the window is read
        assert np.all(weights[..., :-window] == 0)


@pytest.mark.parametrize("attention, window", [("softmax", None), ("softmax", 3),
                                               ("linear", None)])
@pytest.mark.parametrize("h, h_kv", [(4, 4), (4, 2), (4, 1)])
@pytest.mark.parametrize("f", [1, 2])
def test_gradient_matches_central_differences(attention, window, h, h_kv, f):
    params = random_params(h, h_kv, seed=7 * h + h_kv + f, f=f)
    batch = data(h_kv + f, n_codes=3**f)

    def loss(p):
        return tr.multihead_retrieval_loss_and_grads(p, batch, attention=attention,
                                                     window=window)[0]

    _, grads = tr.multihead_retrieval_loss_and_grads(params, batch, attention=attention,
                                                     window=window)
    assert_gradients_match(grads, central_differences(loss, params))


def test_loss_is_the_mean_cross_entropy_of_every_symbol():
    p = random_params(4, 2, seed=11, f=2)
    batch = data(12, n_codes=9)
    logits, _ = reference_forward(p, batch.keys, batch.values, batch.query)
    total = 0.0
    for b in range(len(batch)):
        for s in range(2):
            symbol = batch.answer[b] // 3**s % 3
            row = logits[b, s]
            total -= row[symbol] - math.log(sum(math.exp(x) for x in row))
    loss, _ = tr.multihead_retrieval_loss_and_grads(p, batch)
    assert abs(loss - total / (2 * len(batch))) < 1e-12


def test_one_head_is_chapter_12s_model():
    """n_heads=1, d_head=d_model, one symbol: the soft dictionary of train_retrieval."""
    ch12 = al.train_retrieval(seed=0, steps=20).params
    d = ch12["w_q"].shape[0]
    p = {"key_embed": ch12["key_embed"], "value_embed": ch12["value_embed"][None],
         "query_embed": ch12["query_embed"], "w_q": ch12["w_q"][:, None, :],
         "w_k": ch12["w_k"][:, None, :], "w_v": ch12["w_v"][:, None, :],
         "w_out": ch12["w_out"][None, :, None, :], "b_out": ch12["b_out"][None]}
    batch = tr.make_retrieval_data(50, rng=np.random.default_rng(1))
    logits, w = tr.multihead_retrieval_forward(p, batch.keys, batch.values, batch.query)
    want_logits, want_w = al.retrieval_forward(ch12, batch.keys, batch.values, batch.query)
    np.testing.assert_allclose(logits[:, 0], want_logits, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w[:, 0], want_w, rtol=1e-12, atol=1e-15)
    loss, grads = tr.multihead_retrieval_loss_and_grads(p, batch)
    want_loss, want_grads = al.retrieval_loss_and_grads(ch12, batch)
    assert abs(loss - want_loss) < 1e-12
    np.testing.assert_allclose(grads["w_k"][:, 0], want_grads["w_k"], atol=1e-12)
    assert d == 16


def test_linear_output_is_linear_attention_and_its_weights():
    p = random_params(4, 2, seed=21)
    batch = data(22)
    _, w = tr.multihead_retrieval_forward(p, batch.keys, batch.values, batch.query,
                                          attention="linear")
    assert np.all(w > 0)  # linear attention gives every pair some weight
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)


def test_the_window_is_the_querys_row_of_the_sliding_window_mask():
    p = random_params(2, 2, seed=31)
    batch = data(32, n_pairs=5)
    for window in (1, 2, 4, 5, 9):
        _, w = tr.multihead_retrieval_forward(p, batch.keys, batch.values, batch.query,
                                              window=window)
        seen = al.sliding_window_mask(6, 6, window + 1)[-1, :5]  # the query is position 5
        assert np.array_equal(w[0, 0] > 0, seen)
        assert np.array_equal(w > 0, np.broadcast_to(seen, w.shape))


def test_training_reaches_the_targets():
    result = al.train_multihead_retrieval(seed=0, n_heads=4, n_kv_heads=1)
    assert result.task == "multihead_retrieval"
    assert result.accuracy >= 0.95 and result.target_weight >= 0.8
    assert result.params["w_k"].shape == (16, 1, 4)
    assert result.config["n_kv_heads"] == 1 and result.config["attention"] == "softmax"


def test_a_code_needs_one_cached_value_number_per_symbol():
    """Six symbols through 2 key/value heads of size 2 (4 value numbers per pair): four
    symbols are read right, two stay near chance (1/8)."""
    result = al.train_multihead_retrieval(seed=0, n_heads=4, n_kv_heads=2, d_head=2,
                                          n_symbols=6, lr=0.01, steps=2000)
    test = result.test
    logits, _ = al.multihead_retrieval_forward(result.params, test.keys, test.values,
                                               test.query)
    symbols = test.answer[:, None] // 8 ** np.arange(6) % 8  # (B, 6)
    per_symbol = (logits.argmax(axis=-1) == symbols).mean(axis=0)
    assert np.sum(per_symbol > 0.95) == 4
    assert np.all(per_symbol[per_symbol <= 0.95] < 0.2)
    assert abs(result.accuracy - per_symbol.mean()) < 1e-12


def test_windowed_training_reads_inside_the_window_only():
    result = al.train_multihead_retrieval(seed=0, n_heads=1, d_head=16, window=3, n_pairs=8,
                                          steps=800)
    test = result.test
    logits, _ = al.multihead_retrieval_forward(result.params, test.keys, test.values,
                                               test.query, window=3)
    right = logits[:, 0].argmax(axis=-1) == test.answer
    inside = test.target >= 5
    assert right[inside].mean() > 0.95
    assert right[~inside].mean() < 0.25  # chance is 1/8


def test_linear_attention_loses_to_softmax_with_many_pairs():
    kwargs = dict(seed=0, n_heads=1, d_head=8, d_model=8, n_pairs=16, n_keys=24)
    softmax = al.train_multihead_retrieval(**kwargs)
    linear = al.train_multihead_retrieval(attention="linear", **kwargs)
    assert softmax.accuracy > 0.95
    assert linear.accuracy < 0.8
    assert linear.target_weight < softmax.target_weight - 0.3


def test_the_task_counts_its_sequences_and_draws_codes():
    task = tr.multihead_retrieval_task(n_pairs=2, n_keys=3, n_values=2, n_symbols=3)
    assert task.n_distinct == 3 * 2 * (2**3) ** 2 * 2
    batch = task.make_data(40, np.random.default_rng(0))
    assert batch.values.max() < 8 and batch.values.min() >= 0
    params = task.init_params(np.random.default_rng(0))
    assert params["value_embed"].shape == (3, 2, 16)
    assert params["w_out"].shape == (4, 4, 3, 2)
    assert np.all(params["b_out"] == 0)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(attention="cosine"), ValueError, "attention='cosine'"),
    (dict(attention="linear", window=2), ValueError, "window=2 with attention='linear'"),
    (dict(window=0), ValueError, "window"),
    (dict(n_heads=4, n_kv_heads=3), ValueError, "n_heads=4 is not a multiple of n_kv_heads=3"),
    (dict(n_symbols=0), ValueError, "n_symbols"),
    (dict(n_pairs=9), ValueError, "n_pairs=9 > n_keys=8"),
])
def test_the_task_refuses_bad_settings(kwargs, error, match):
    with pytest.raises(error, match=match):
        tr.multihead_retrieval_task(**kwargs)


def test_the_forward_pass_refuses_what_it_cannot_read():
    p = random_params(4, 2, seed=41, f=2)
    keys, values, query = [[0, 1]], [[2, 8]], [1]
    tr.multihead_retrieval_forward(p, keys, values, query)  # codes up to 3**2 - 1 = 8
    with pytest.raises(ValueError, match="values contains 1 entry outside 0..8"):
        tr.multihead_retrieval_forward(p, keys, [[2, 9]], query)
    with pytest.raises(ValueError, match="query contains 1 entry outside"):
        tr.multihead_retrieval_forward(p, keys, values, [-1])
    with pytest.raises(ValueError, match="expected keys and values of shape"):
        tr.multihead_retrieval_forward(p, keys, [[2]], query)
    bad = dict(p, w_k=np.ones((5, 3, 3)), w_v=np.ones((5, 3, 3)))
    with pytest.raises(ValueError, match="not a multiple of key/value heads"):
        tr.multihead_retrieval_forward(bad, keys, values, query)
    with pytest.raises(ValueError, match=r"params\['w_v'\] has shape"):
        tr.multihead_retrieval_forward(dict(p, w_v=np.ones((5, 2, 4))), keys, values, query)
    with pytest.raises(TypeError, match="expected RetrievalData"):
        tr.multihead_retrieval_loss_and_grads(p, {"keys": keys})
    with pytest.raises(ValueError, match="data.values contains"):
        tr.multihead_retrieval_loss_and_grads(p, data(1, n_codes=20))
