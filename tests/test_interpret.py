"""Taking a model apart: composition scores against loops over the heads with d x d products,
their bounds and baseline, the logit lens against a forward pass written here block by
block, and direct logit attribution against the same forward pass read out position by
position (its parts adding up to the model's own logit)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import reference_attention, rotate_reference

import attention_lib as al
from attention_lib.gpt import GPTConfig, gpt_parameter_shapes
from attention_lib.model.loss import log_softmax

COMPOSITION_CONFIGS = {
    "three_layers": GPTConfig(11, 8, 12, 3, 3, attention_only=True),
    "with_ffn_rope": GPTConfig(11, 8, 16, 3, 2, positions="rope"),
    "grouped": GPTConfig(11, 8, 16, 3, 4, n_kv_heads=2, attention_only=True),
    "one_kv_head": GPTConfig(11, 8, 12, 2, 3, n_kv_heads=1, tie_embeddings=False),
    "rms_no_biases": GPTConfig(11, 8, 8, 2, 2, norm="rms", attention_biases=False,
                               ffn="swiglu"),
}

LENS_CONFIGS = {
    "learned": GPTConfig(vocab_size=9, context=7, d_model=8, n_layers=3, n_heads=2, d_ff=12),
    "attention_only_rope": GPTConfig(9, 7, 8, 2, 2, attention_only=True, positions="rope"),
    "untied_grouped": GPTConfig(9, 7, 8, 2, 4, n_kv_heads=2, d_ff=12,
                                tie_embeddings=False),
    "no_positions": GPTConfig(9, 7, 8, 1, 2, d_ff=12, positions="none"),
}


def _random_params(config, seed=0, scale=0.5):
    """Every entry random (gains, biases, embeddings), float64."""
    rng = np.random.default_rng(seed)
    return {name: rng.normal(0.0, scale, shape) + (1.0 if name.endswith("gamma") else 0.0)
            for name, shape in gpt_parameter_shapes(config).items()}


# ---------------------------------------------------------------- composition: a loop reference

def _head_matrices(params, config, layer, head):
    """W_OV and W_QK (d x d) of one head, by slicing the layer's matrices."""
    p = {k: np.asarray(a, dtype=np.float64) for k, a in params.items()}
    e = config.d_head
    g = config.n_heads // config.kv_heads
    b = f"blocks.{layer}.attn."
    q = p[b + "w_q"][:, head * e:(head + 1) * e]
    kv = head // g  # the key/value head this query head reads
    k = p[b + "w_k"][:, kv * e:(kv + 1) * e]
    v = p[b + "w_v"][:, kv * e:(kv + 1) * e]
    o = p[b + "w_o"][head * e:(head + 1) * e, :]
    return v @ o, q @ k.T


def reference_composition(params, config):
    L, h = config.n_layers, config.n_heads
    out = {kind: np.full((L, h, L, h), np.nan) for kind in "qkv"}
    for l2 in range(L):
        for h2 in range(h):
            ov2, qk2 = _head_matrices(params, config, l2, h2)
            for l1 in range(l2):
                for h1 in range(h):
                    ov1, _ = _head_matrices(params, config, l1, h1)
                    fro = np.linalg.norm
                    out["q"][l2, h2, l1, h1] = fro(ov1 @ qk2) / (fro(ov1) * fro(qk2))
                    out["k"][l2, h2, l1, h1] = fro(qk2 @ ov1.T) / (fro(qk2) * fro(ov1))
                    out["v"][l2, h2, l1, h1] = fro(ov1 @ ov2) / (fro(ov1) * fro(ov2))
    return out


@pytest.mark.parametrize("name", COMPOSITION_CONFIGS)
@pytest.mark.parametrize("draw", ["init_gpt", "random"])
def test_composition_scores_equal_the_loop_reference(name, draw):
    config = COMPOSITION_CONFIGS[name]
    params = (al.init_gpt(config, seed=3, dtype=np.float64) if draw == "init_gpt"
              else _random_params(config, seed=3))
    got = al.composition_scores(params, config)
    want = reference_composition(params, config)
    assert sorted(got) == ["k", "q", "v"]
    for kind in "qkv":
        assert got[kind].dtype == np.float64
        assert got[kind].shape == (config.n_layers, config.n_heads) * 2
        np.testing.assert_allclose(got[kind], want[kind], rtol=1e-10, atol=1e-13,
                                   err_msg=kind)


def test_float32_parameters_give_float64_scores_close_to_float64_parameters():
    config = COMPOSITION_CONFIGS["three_layers"]
    p64 = al.init_gpt(config, seed=1, dtype=np.float64)
    p32 = {k: a.astype(np.float32) for k, a in p64.items()}
    got = al.composition_scores(p32, config)
    want = reference_composition({k: a.astype(np.float64) for k, a in p32.items()}, config)
    for kind in "qkv":
        assert got[kind].dtype == np.float64
        np.testing.assert_allclose(got[kind], want[kind], rtol=1e-10, err_msg=kind)


@pytest.mark.parametrize("name", COMPOSITION_CONFIGS)
def test_nan_exactly_where_the_writer_is_not_earlier(name):
    config = COMPOSITION_CONFIGS[name]
    scores = al.composition_scores(al.init_gpt(config, seed=0), config)
    L, h = config.n_layers, config.n_heads
    l2 = np.arange(L)[:, None, None, None]
    l1 = np.arange(L)[None, None, :, None]
    later = np.broadcast_to(l1 < l2, (L, h, L, h))
    for kind in "qkv":
        assert np.array_equal(np.isnan(scores[kind]), ~later), kind
        assert np.isfinite(scores[kind][later]).all(), kind


def test_grouped_heads_score_as_their_blocks_copied_out():
    # A model with n_kv_heads < n_heads computes exactly as the model whose every query head
    # has its own copy of the shared key/value columns: both give the same scores (and the
    # same logits, which ties the convention to the forward pass).
    grouped = COMPOSITION_CONFIGS["grouped"]
    full = GPTConfig(11, 8, 16, 3, 4, attention_only=True)
    p = _random_params(grouped, seed=5)
    e, g = grouped.d_head, grouped.n_heads // grouped.kv_heads
    copied = dict(p)
    for layer in range(grouped.n_layers):
        for m in "kv":
            w = p[f"blocks.{layer}.attn.w_{m}"].reshape(16, grouped.kv_heads, e)
            copied[f"blocks.{layer}.attn.w_{m}"] = np.repeat(w, g, axis=1).reshape(16, 16)
            b = p[f"blocks.{layer}.attn.b_{m}"].reshape(grouped.kv_heads, e)
            copied[f"blocks.{layer}.attn.b_{m}"] = np.repeat(b, g, axis=0).reshape(16)
    tokens = [[1, 5, 2, 9, 9, 0]]
    np.testing.assert_allclose(al.gpt_logits(copied, full, tokens),
                               al.gpt_logits(p, grouped, tokens), rtol=1e-12, atol=1e-12)
    a, b = al.composition_scores(p, grouped), al.composition_scores(copied, full)
    for kind in "qkv":
        np.testing.assert_allclose(a[kind], b[kind], rtol=1e-12, err_msg=kind)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_layers=st.integers(2, 3),
       n_heads=st.sampled_from([1, 2, 4]), d_head=st.integers(1, 4), rank_one=st.booleans(),
       std=st.sampled_from([1e-3, 0.02, 1.0, 30.0]))
def test_scores_lie_in_zero_one(seed, n_layers, n_heads, d_head, rank_one, std):
    # ||A B||_F <= ||A||_F ||B||_F (submultiplicativity), for any weights: dense, tiny,
    # large, or with every head's blocks of rank one.
    config = GPTConfig(5, 4, n_heads * d_head, n_layers, n_heads, attention_only=True)
    params = al.init_gpt(config, seed=seed % 1000, dtype=np.float64, std=std)
    if rank_one:
        rng = np.random.default_rng(seed)
        for layer in range(n_layers):
            for m in "qkvo":
                name = f"blocks.{layer}.attn.w_{m}"
                rows, cols = params[name].shape
                params[name] = rng.normal(size=(rows, 1)) @ rng.normal(size=(1, cols))
    for kind, s in al.composition_scores(params, config).items():
        finite = s[~np.isnan(s)]
        assert finite.size == n_layers * (n_layers - 1) // 2 * n_heads**2
        assert (finite >= 0).all() and (finite <= 1 + 1e-12).all(), (kind, finite.max())


def test_aligned_heads_reach_one_and_orthogonal_heads_zero():
    # Head 0 of layer 0 writes along e_0; head 0 of layer 1 queries with e_0 (Q-composition
    # 1) and keys with e_0 (K-composition 1); head 1 of layer 1 reads only e_1 (all 0).
    config = GPTConfig(5, 4, 4, 2, 2, attention_only=True, attention_biases=False)
    params = {k: np.zeros(s) for k, s in gpt_parameter_shapes(config).items()}
    for k in params:
        if k.endswith("gamma"):
            params[k] = np.ones_like(params[k])
    params["wte"] = np.eye(5, 4)
    params["wpe"] = np.eye(4)
    for layer in range(2):
        for m in "qkvo":
            w = np.zeros((4, 4))
            w[0, 0] = w[1, 2] = 1.0  # head 0 (columns 0-1) on e_0, head 1 (columns 2-3) on e_1
            params[f"blocks.{layer}.attn.w_{m}"] = w.T if m == "o" else w
    s = al.composition_scores(params, config)
    for kind in "qkv":
        np.testing.assert_allclose(s[kind][1, :, 0, :], [[1, 0], [0, 1]], atol=1e-15)
    params["blocks.0.attn.w_o"] = np.zeros((4, 4))  # a head that writes nothing: scores 0
    s = al.composition_scores(params, config)
    assert (s["k"][1, :, 0, :] == 0).all() and (s["v"][1, :, 0, :] == 0).all()


# ---------------------------------------------------------------- the shuffled baseline

def test_baseline_shape_nan_pattern_and_seed():
    config = COMPOSITION_CONFIGS["grouped"]
    params = al.init_gpt(config, seed=2)
    base = al.shuffled_composition_baseline(params, config, seed=4, n_shuffles=6)
    real = al.composition_scores(params, config)
    for kind in "qkv":
        assert base[kind].shape == (6,) + real[kind].shape and base[kind].dtype == np.float64
        assert np.array_equal(np.isnan(base[kind]),
                              np.broadcast_to(np.isnan(real[kind]), base[kind].shape))
        finite = base[kind][~np.isnan(base[kind])]
        assert (finite >= 0).all() and (finite <= 1 + 1e-12).all()
    again = al.shuffled_composition_baseline(params, config, seed=4, n_shuffles=6)
    other = al.shuffled_composition_baseline(params, config, seed=5, n_shuffles=6)
    for kind in "qkv":
        assert np.array_equal(base[kind], again[kind], equal_nan=True)
        assert not np.array_equal(base[kind], other[kind], equal_nan=True)


def _shuffle_reference(params, config, rng):
    """The weights with each head's blocks shuffled, in the baseline's order of draws."""
    L, h, h_kv, d, e = (config.n_layers, config.n_heads, config.kv_heads, config.d_model,
                        config.d_head)
    out = dict(params)
    blocks = {}
    for m, heads in (("q", h), ("k", h_kv), ("v", h_kv), ("o", h)):
        blocks[m] = [[None] * heads for _ in range(L)]
        for layer in range(L):
            w = np.asarray(params[f"blocks.{layer}.attn.w_{m}"], dtype=np.float64)
            for i in range(heads):
                part = slice(i * e, (i + 1) * e)
                blocks[m][layer][i] = w[part, :] if m == "o" else w[:, part]
    shuffled = {}
    for m in "qkvo":
        flat = np.stack([np.stack([b.reshape(-1) for b in row]) for row in blocks[m]])
        flat = rng.permuted(flat, axis=-1)
        shuffled[m] = flat
    for layer in range(L):
        for m, heads in (("q", h), ("k", h_kv), ("v", h_kv), ("o", h)):
            if m == "o":
                w = np.concatenate([shuffled[m][layer, i].reshape(e, d) for i in range(heads)])
            else:
                w = np.concatenate([shuffled[m][layer, i].reshape(d, e) for i in range(heads)],
                                   axis=1)
            out[f"blocks.{layer}.attn.w_{m}"] = w
    return out


def test_baseline_is_the_scores_of_shuffled_blocks():
    # Each head's block keeps its own entries (a permutation of them): the baseline equals
    # the loop reference on weights shuffled block by block, and a block whose entries are
    # all equal is left as it was.
    config = COMPOSITION_CONFIGS["grouped"]
    params = _random_params(config, seed=8)
    base = al.shuffled_composition_baseline(params, config, seed=11, n_shuffles=3)
    rng = np.random.default_rng(11)
    for s in range(3):
        want = reference_composition(_shuffle_reference(params, config, rng), config)
        for kind in "qkv":
            np.testing.assert_allclose(base[kind][s], want[kind], rtol=1e-10, err_msg=kind)
    flat = {k: (np.full_like(a, 0.3) if ".attn.w_" in k else a) for k, a in params.items()}
    base = al.shuffled_composition_baseline(flat, config, n_shuffles=2)
    real = al.composition_scores(flat, config)
    for kind in "qkv":
        np.testing.assert_allclose(base[kind][1], real[kind], rtol=1e-12)


def test_baseline_of_random_weights_is_about_one_over_sqrt_d():
    config = GPTConfig(5, 4, 32, 2, 4, attention_only=True)
    base = al.shuffled_composition_baseline(al.init_gpt(config, dtype=np.float64), config,
                                            n_shuffles=30)
    for kind in "qkv":
        assert abs(np.nanmean(base[kind]) * math.sqrt(32) - 1) < 0.1, kind


# ---------------------------------------------------------------- the logit lens

def _ln(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


def _gelu(h):
    return 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))



def _log_softmax(z):
    out = np.empty_like(z)
    for idx in np.ndindex(z.shape[:-1]):
        row = z[idx]
        top = row.max()
        out[idx] = row - top - math.log(math.fsum(np.exp(row - top)))
    return out


def reference_lens(params, config, seq):
    """One sequence, one block at a time: the stream after each, read out through ln_f."""
    p = {name: np.asarray(a, dtype=np.float64) for name, a in params.items()}
    w_out = p["wte"].T if config.tie_embeddings else p["w_out"]
    _, streams = reference_components(params, config, seq)
    return np.stack([_log_softmax(_ln(s, p["ln_f.gamma"], p["ln_f.beta"]) @ w_out)
                     for s in streams])


@pytest.mark.parametrize("name", LENS_CONFIGS)
def test_logit_lens_equals_the_block_by_block_reference(name):
    config = LENS_CONFIGS[name]
    params = _random_params(config, seed=1)
    tokens = np.array([[1, 4, 0, 8, 2, 2, 7], [3, 3, 5, 1, 0, 4, 6]])
    got = al.logit_lens(params, config, tokens)
    assert got.shape == (config.n_layers + 1, 2, 7, 9) and got.dtype == np.float64
    for b in range(2):
        np.testing.assert_allclose(got[:, b], reference_lens(params, config, tokens[b]),
                                   rtol=1e-10, atol=1e-10)
        single = al.logit_lens(params, config, tokens[b])  # ids of shape (T,)
        assert single.shape == (config.n_layers + 1, 7, 9)
        np.testing.assert_allclose(single, got[:, b], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", LENS_CONFIGS)
def test_the_last_reading_is_the_models_own_prediction(name, dtype):
    config = LENS_CONFIGS[name]
    params = {k: a.astype(dtype) for k, a in _random_params(config, seed=2).items()}
    tokens = np.array([[0, 1, 2, 3, 4, 5], [8, 7, 6, 5, 4, 3]])
    lens = al.logit_lens(params, config, tokens)
    logits = al.gpt_logits(params, config, tokens)
    assert lens.dtype == dtype
    assert np.array_equal(lens[-1], log_softmax(logits))  # the very numbers
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(lens[-1], _log_softmax(logits.astype(np.float64)), rtol=tol,
                               atol=tol)
    np.testing.assert_allclose(np.exp(lens).sum(axis=-1), 1.0, rtol=tol)


def test_logit_lens_reads_only_earlier_positions():
    # Every reading at position t depends on ids[:t + 1] only (the causal stack).
    config = LENS_CONFIGS["learned"]
    params = _random_params(config, seed=3)
    a = al.logit_lens(params, config, [1, 2, 3, 4, 5])
    b = al.logit_lens(params, config, [1, 2, 3, 0, 0])
    np.testing.assert_allclose(a[:, :3], b[:, :3], rtol=1e-12, atol=1e-12)
    assert not np.allclose(a[1:, 3], b[1:, 3])


# ---------------------------------------------------------------- bad input

def test_bad_input_is_refused_with_a_clear_error():
    config = COMPOSITION_CONFIGS["three_layers"]
    params = al.init_gpt(config)
    functions = (al.composition_scores, al.shuffled_composition_baseline,
                 lambda p, c: al.logit_lens(p, c, [1, 2]))
    for fn in functions:
        with pytest.raises(TypeError, match="expected a GPTConfig"):
            fn(params, config.as_dict())
        with pytest.raises(TypeError, match="expected a dict of arrays"):
            fn([params], config)
        missing = {k: a for k, a in params.items() if k != "blocks.2.attn.w_k"}
        with pytest.raises(ValueError, match="blocks.2.attn.w_k"):
            fn(missing, config)
        wrong = dict(params, **{"blocks.1.attn.w_o": np.zeros((12, 13), np.float32)})
        with pytest.raises(ValueError, match=r"params\['blocks.1.attn.w_o'\].*expected shape"):
            fn(wrong, config)
        other = GPTConfig(11, 8, 12, 2, 3, attention_only=True)  # two layers, not three
        with pytest.raises(ValueError, match="params"):
            fn(params, other)
        bad = dict(params, **{"blocks.0.attn.w_q": np.full((12, 12), np.nan, np.float32)})
        with pytest.raises(ValueError, match="non-finite"):
            fn(bad, config)
    decoder = GPTConfig(11, 8, 12, 1, 3, cross_attention=True)
    for fn in functions:
        with pytest.raises(ValueError, match="cross_attention"):
            fn(al.init_gpt(decoder), decoder)
    with pytest.raises(ValueError, match="n_shuffles"):
        al.shuffled_composition_baseline(params, config, n_shuffles=0)
    with pytest.raises(TypeError, match="seed"):
        al.shuffled_composition_baseline(params, config, seed=1.5)
    with pytest.raises(TypeError, match="ids has dtype float64"):
        al.logit_lens(params, config, [1.0, 2.0])
    with pytest.raises(ValueError, match="outside 0..10"):
        al.logit_lens(params, config, [1, 11])
    with pytest.raises(ValueError, match=r"expected \(T,\) or \(B, T\)"):
        al.logit_lens(params, config, [[[1, 2]]])
    with pytest.raises(ValueError, match="context is 8"):
        al.logit_lens(params, config, np.zeros(9, dtype=int))
    with pytest.raises(ValueError, match="empty"):
        al.logit_lens(params, config, np.zeros(0, dtype=int))


# ---------------------------------------------------------------- direct logit attribution

DLA_CONFIGS = dict(LENS_CONFIGS, **{
    "rms_no_biases": GPTConfig(9, 7, 8, 2, 2, d_ff=12, norm="rms", attention_biases=False),
    "attention_only_grouped": GPTConfig(9, 7, 8, 2, 4, n_kv_heads=1, attention_only=True,
                                        positions="rope"),
})


def _rms(x, gain, eps=1e-5):
    return x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps) * gain


def reference_components(params, config, seq):
    """One sequence, block by block: every part written into the residual stream (T, d),
    named as direct_logit_attribution names them, and the stream after the embedding and
    after each block (the last is what the parts add up to)."""
    p = {name: np.asarray(a, dtype=np.float64) for name, a in params.items()}
    T, e = len(seq), config.d_head
    g = config.n_heads // config.kv_heads

    def norm(x, name):
        if config.norm == "rms":
            return _rms(x, p[name + ".gamma"])
        return _ln(x, p[name + ".gamma"], p[name + ".beta"])

    x = p["wte"][seq].copy()
    if config.positions == "learned":
        x += p["wpe"][:T]
    parts = {"embed": x.copy()}
    streams = [x]
    for layer in range(config.n_layers):
        b = f"blocks.{layer}."
        a = norm(x, b + "ln1")
        q, k, v = (a @ p[b + f"attn.w_{m}"] + p.get(b + f"attn.b_{m}", 0.0) for m in "qkv")
        added = np.zeros_like(x)
        for i in range(config.n_heads):
            qi = q[:, i * e:(i + 1) * e]
            kv = slice((i // g) * e, (i // g + 1) * e)
            ki, vi = k[:, kv], v[:, kv]
            if config.positions == "rope":
                qi, ki = rotate_reference(qi), rotate_reference(ki)
            head = reference_attention(qi, ki, vi, causal=True)[0]
            written = head @ p[b + "attn.w_o"][i * e:(i + 1) * e]  # its rows of W_O
            parts[f"L{layer + 1} H{i + 1}"] = written
            added += written
        if b + "attn.b_o" in p:
            parts[f"L{layer + 1} attn bias"] = np.tile(p[b + "attn.b_o"], (T, 1))
            added += p[b + "attn.b_o"]
        x = x + added
        if not config.attention_only:
            a2 = norm(x, b + "ln2")
            ff = _gelu(a2 @ p[b + "ff.w1"] + p[b + "ff.b1"]) @ p[b + "ff.w2"] + p[b + "ff.b2"]
            parts[f"L{layer + 1} FF"] = ff
            x = x + ff
        streams.append(x)
    return parts, streams


def reference_attribution(params, config, seq):
    """Each part's share of the right next token's logit, position by position, through the
    final norm with its scale frozen at the whole stream's value."""
    p = {name: np.asarray(a, dtype=np.float64) for name, a in params.items()}
    parts, streams = reference_components(params, config, seq)
    stream = streams[-1]
    w_out = p["wte"].T if config.tie_embeddings else p["w_out"]
    gamma = p["ln_f.gamma"]
    out = {name: np.zeros(len(seq) - 1) for name in parts}
    if config.norm == "layer":
        out["final norm bias"] = np.zeros(len(seq) - 1)
    for t in range(len(seq) - 1):
        w = w_out[:, seq[t + 1]]  # the right next token's column of the read-out
        x = stream[t]
        if config.norm == "layer":
            sigma = math.sqrt(math.fsum((x - x.mean()) ** 2) / len(x) + 1e-5)
        else:
            sigma = math.sqrt(math.fsum(x**2) / len(x) + 1e-5)
        for name, c in parts.items():
            row = c[t] - c[t].mean() if config.norm == "layer" else c[t]
            out[name][t] = math.fsum(row[j] * gamma[j] * w[j] for j in range(len(w))) / sigma
        if config.norm == "layer":
            out["final norm bias"][t] = math.fsum(p["ln_f.beta"] * w)
    return out


@pytest.mark.parametrize("name", DLA_CONFIGS)
def test_attribution_equals_the_position_by_position_reference(name):
    config = DLA_CONFIGS[name]
    params = _random_params(config, seed=4)
    tokens = np.array([[1, 4, 0, 8, 2, 2, 7], [3, 3, 5, 1, 0, 4, 6]])
    got = al.direct_logit_attribution(params, config, tokens)
    for b in range(2):
        want = reference_attribution(params, config, tokens[b])
        assert list(got) == list(want)  # the same parts, in the same order
        for part in want:
            assert got[part].shape == (2, 6) and got[part].dtype == np.float64
            np.testing.assert_allclose(got[part][b], want[part], rtol=1e-9, atol=1e-11,
                                       err_msg=part)
        single = al.direct_logit_attribution(params, config, tokens[b])  # ids of shape (T,)
        for part in want:
            np.testing.assert_allclose(single[part], got[part][b], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", DLA_CONFIGS)
def test_the_parts_add_up_to_the_models_logit_of_the_right_token(name):
    # With the final norm's scale frozen at the stream's own value the decomposition is
    # exact: embedding + heads + biases + feed-forward layers (+ the norm's beta) = logit.
    config = DLA_CONFIGS[name]
    params = _random_params(config, seed=5)
    tokens = np.array([[0, 1, 2, 3, 4, 5, 6], [8, 7, 6, 5, 4, 3, 2]])
    parts = al.direct_logit_attribution(params, config, tokens)
    logits = al.gpt_logits(params, config, tokens)  # float64 parameters: float64 logits
    right = np.take_along_axis(logits[:, :-1], tokens[:, 1:, None], axis=-1)[..., 0]
    total = sum(parts.values())
    np.testing.assert_allclose(total, right, rtol=1e-11, atol=1e-11)
    others = total - parts["embed"]
    np.testing.assert_allclose(others + parts["embed"], right, rtol=1e-11, atol=1e-11)
    heads = [f"L{layer + 1} H{i + 1}" for layer in range(config.n_layers)
             for i in range(config.n_heads)]
    assert [n for n in parts if " H" in n] == heads
    assert ("final norm bias" in parts) == (config.norm == "layer")
    assert any("attn bias" in n for n in parts) == config.attention_biases
    assert any(n.endswith(" FF") for n in parts) == (not config.attention_only)


def test_attribution_of_float32_parameters_is_float64_and_near_the_float32_logits():
    config = DLA_CONFIGS["learned"]
    p32 = {k: a.astype(np.float32) for k, a in _random_params(config, seed=6).items()}
    tokens = [[1, 2, 3, 4, 5, 6, 7]]
    parts = al.direct_logit_attribution(p32, config, tokens)
    assert all(c.dtype == np.float64 for c in parts.values())
    logits = al.gpt_logits(p32, config, tokens)
    right = logits[0, np.arange(6), tokens[0][1:]]
    np.testing.assert_allclose(sum(parts.values())[0], right, rtol=1e-4, atol=1e-4)
    p64 = {k: a.astype(np.float64) for k, a in p32.items()}  # the same numbers, in float64
    want = al.direct_logit_attribution(p64, config, tokens)
    for part in want:
        np.testing.assert_allclose(parts[part], want[part], rtol=1e-12, atol=1e-12)


def test_a_part_that_writes_nothing_contributes_nothing():
    config = DLA_CONFIGS["learned"]
    params = _random_params(config, seed=7)
    params["blocks.1.attn.w_o"][4:8] = 0.0  # head 2 of layer 2 (d_head 4): rows 4-7 of W_O
    parts = al.direct_logit_attribution(params, config, [1, 2, 3, 4])
    assert np.array_equal(parts["L2 H2"], np.zeros(3))
    assert not np.allclose(parts["L2 H1"], 0)


def test_attribution_refuses_what_it_cannot_split():
    config = DLA_CONFIGS["learned"]
    params = al.init_gpt(config)
    with pytest.raises(ValueError, match="T >= 2"):
        al.direct_logit_attribution(params, config, [3])
    with pytest.raises(ValueError, match="context is 7"):
        al.direct_logit_attribution(params, config, np.zeros(8, dtype=int))
    with pytest.raises(ValueError, match="outside 0..8"):
        al.direct_logit_attribution(params, config, [1, 9])
    with pytest.raises(TypeError, match="ids has dtype float64"):
        al.direct_logit_attribution(params, config, [1.0, 2.0])
    post = GPTConfig(9, 7, 8, 2, 2, d_ff=12, norm_position="post")
    with pytest.raises(ValueError, match="norm_position='post'"):
        al.direct_logit_attribution(al.init_gpt(post), post, [1, 2, 3])
    decoder = GPTConfig(11, 8, 12, 1, 3, cross_attention=True)
    with pytest.raises(ValueError, match="cross_attention"):
        al.direct_logit_attribution(al.init_gpt(decoder), decoder, [1, 2])
    with pytest.raises(TypeError, match="expected a GPTConfig"):
        al.direct_logit_attribution(params, config.as_dict(), [1, 2])


# ---------------------------------------------------------------- a site over a long stream

@pytest.mark.parametrize("site", ["blocks.1.ff.hidden", "blocks.0.resid_post", "embed",
                                  "blocks.1.attn.heads", "logits"])
@pytest.mark.parametrize("n", [1, 5, 12, 13])
def test_stream_activations_reads_each_position_after_the_earlier_tokens_of_its_window(
        site, n):
    config = al.GPTConfig(9, 4, 8, 2, 2, d_ff=12)
    rng = np.random.default_rng(n)
    params = {k: rng.normal(0, 0.5, a.shape) for k, a in al.init_gpt(config).items()}
    stream = rng.integers(0, 9, n)
    got = al.stream_activations(params, config, stream, site, batch_size=2)
    for p in range(n):  # position p alone, after the tokens before it in its window of 4
        seen = {}
        al.gpt_logits(params, config, stream[None, p - p % 4:p + 1],
                      hooks=al.capture_hooks(seen, [site]))
        row = seen[site][0, :, -1] if seen[site].ndim == 4 else seen[site][0, -1]
        np.testing.assert_allclose(got[p], row, rtol=1e-10, atol=1e-12)
    assert got.shape[0] == n and got.dtype == np.float64


def test_stream_activations_keeps_float32_and_refuses_what_it_cannot_read():
    config = al.GPTConfig(9, 4, 8, 1, 2, d_ff=12)
    params = al.init_gpt(config)
    assert al.stream_activations(params, config, [1, 2, 3], "final").dtype == np.float32
    with pytest.raises(ValueError, match="site='blocks.3.resid_post' is not a site"):
        al.stream_activations(params, config, [1, 2], "blocks.3.resid_post")
    with pytest.raises(ValueError, match="one row per query and key"):
        al.stream_activations(params, config, [1, 2], "blocks.0.attn.weights")
    with pytest.raises(ValueError, match="stream has an empty axis"):
        al.stream_activations(params, config, np.array([], dtype=int), "final")
    with pytest.raises(ValueError, match="stream"):
        al.stream_activations(params, config, [1, 9], "final")
