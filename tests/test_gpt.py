"""The whole GPT: forward against a reference written here, every gradient against central
differences, causality, generation with and without the cache, and the samplers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference import reference_attention, rotate_reference

import attention_lib as al
from attention_lib.gpt import GPTConfig, gpt_parameter_shapes

CONFIGS = {
    "learned": GPTConfig(vocab_size=7, context=6, d_model=8, n_layers=2, n_heads=2, d_ff=12),
    "rope": GPTConfig(7, 6, 8, 2, 2, d_ff=12, positions="rope"),
    "none": GPTConfig(7, 6, 8, 1, 2, d_ff=12, positions="none"),
    "attention_only": GPTConfig(7, 6, 8, 2, 2, attention_only=True),
    "untied": GPTConfig(7, 6, 8, 1, 4, d_ff=12, tie_embeddings=False),
}


# ---------------------------------------------------------------- an independent forward

def _ln(x, gamma, beta, eps=1e-5):
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        row = x[idx]
        mu = math.fsum(row) / row.size
        var = math.fsum((r - mu) ** 2 for r in row) / row.size
        out[idx] = (row - mu) / math.sqrt(var + eps) * gamma + beta
    return out


def _gelu(h):
    return 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))



def reference_logits(params, config, tokens):
    """One sequence at a time, one head at a time, through the loop reference of attention."""
    p = {name: np.asarray(a, dtype=np.float64) for name, a in params.items()}
    out = []
    for seq in np.asarray(tokens):
        T = len(seq)
        x = p["wte"][seq].copy()
        if config.positions == "learned":
            x += p["wpe"][:T]
        for layer in range(config.n_layers):
            b = f"blocks.{layer}."
            a = _ln(x, p[b + "ln1.gamma"], p[b + "ln1.beta"])
            q, k, v = (a @ p[b + f"attn.w_{m}"] + p[b + f"attn.b_{m}"] for m in "qkv")
            heads = []
            for i in range(config.n_heads):
                cols = slice(i * config.d_head, (i + 1) * config.d_head)
                qi, ki = q[:, cols], k[:, cols]
                if config.positions == "rope":
                    qi, ki = rotate_reference(qi), rotate_reference(ki)
                heads.append(reference_attention(qi, ki, v[:, cols], causal=True)[0])
            x = x + np.concatenate(heads, axis=1) @ p[b + "attn.w_o"] + p[b + "attn.b_o"]
            if not config.attention_only:
                a2 = _ln(x, p[b + "ln2.gamma"], p[b + "ln2.beta"])
                x = x + _gelu(a2 @ p[b + "ff.w1"] + p[b + "ff.b1"]) @ p[b + "ff.w2"] + p[
                    b + "ff.b2"]
        final = _ln(x, p["ln_f.gamma"], p["ln_f.beta"])
        out.append(final @ (p["wte"].T if config.tie_embeddings else p["w_out"]))
    return np.stack(out)


def _random_params(config, seed=0):
    """Parameters with every entry random (biases and gains too), so no gradient is
    trivially zero."""
    rng = np.random.default_rng(seed)
    return {name: rng.normal(0.0, 0.5, shape) + (1.0 if name.endswith("gamma") else 0.0)
            for name, shape in gpt_parameter_shapes(config).items()}


@pytest.mark.parametrize("name", CONFIGS)
def test_logits_equal_the_reference(name):
    config = CONFIGS[name]
    params = _random_params(config)
    tokens = np.array([[1, 4, 0, 6, 2, 2], [3, 3, 5, 1, 0, 4]])
    got = al.gpt_logits(params, config, tokens)
    assert got.shape == (2, 6, 7)
    np.testing.assert_allclose(got, reference_logits(params, config, tokens),
                               rtol=1e-10, atol=1e-10)


def test_float32_stays_float32_and_agrees_with_float64():
    config = CONFIGS["learned"]
    p64 = _random_params(config)
    p32 = {name: a.astype(np.float32) for name, a in p64.items()}
    tokens = np.array([[1, 2, 3, 4]])
    l32 = al.gpt_logits(p32, config, tokens)
    assert l32.dtype == np.float32
    np.testing.assert_allclose(l32, al.gpt_logits(p64, config, tokens), rtol=1e-4, atol=1e-4)
    _, g32 = al.gpt_loss_and_grads(p32, config, tokens, tokens)
    _, g64 = al.gpt_loss_and_grads(p64, config, tokens, tokens)
    for name in g64:
        assert g32[name].dtype == np.float32
        np.testing.assert_allclose(g32[name], g64[name], rtol=2e-3, atol=2e-5, err_msg=name)


def test_parameter_count_matches_the_closed_form():
    config = GPTConfig(vocab_size=65, context=32, d_model=16, n_layers=3, n_heads=4)
    params = al.init_gpt(config)
    assert sum(a.size for a in params.values()) == al.gpt_parameter_count(3, 16, 65, 32)


# ---------------------------------------------------------------- gradients

def _loss(params, config, tokens, targets):
    """Cross-entropy written here from the reference logits."""
    logits = reference_logits(params, config, tokens)
    total = 0.0
    for idx in np.ndindex(targets.shape):
        row = logits[idx]
        m = row.max()
        total += m + math.log(math.fsum(np.exp(row - m))) - row[targets[idx]]
    return total / targets.size


@pytest.mark.parametrize("name", CONFIGS)
def test_every_gradient_matches_central_differences(name):
    config = CONFIGS[name]
    params = _random_params(config, seed=1)
    tokens = np.array([[1, 4, 0, 6, 2], [3, 3, 5, 1, 0]])
    targets = np.array([[4, 0, 6, 2, 2], [3, 5, 1, 0, 6]])
    loss, grads = al.gpt_loss_and_grads(params, config, tokens, targets)
    assert loss == pytest.approx(_loss(params, config, tokens, targets), rel=1e-10)
    assert set(grads) == set(params)
    rng = np.random.default_rng(2)
    h = 1e-5
    for pname, a in params.items():
        assert grads[pname].shape == a.shape
        flat = a.reshape(-1)
        picks = rng.choice(flat.size, size=min(flat.size, 6), replace=False)
        for i in picks:
            saved = flat[i]
            flat[i] = saved + h
            up = _loss(params, config, tokens, targets)
            flat[i] = saved - h
            down = _loss(params, config, tokens, targets)
            flat[i] = saved
            numeric = (up - down) / (2 * h)
            assert grads[pname].reshape(-1)[i] == pytest.approx(numeric, rel=1e-5, abs=1e-8), (
                pname, int(i))


def test_unused_positions_and_tokens_get_zero_gradient():
    config = CONFIGS["learned"]
    params = _random_params(config)
    _, grads = al.gpt_loss_and_grads(params, config, [[1, 2, 3]], [[2, 3, 1]])
    assert not grads["wpe"][3:].any()  # positions 3.. were never read
    # Token 6 was neither read nor a target, but the tied output layer scores it.
    assert grads["wte"][6].any()


# ---------------------------------------------------------------- causality

@pytest.mark.parametrize("name", ["learned", "rope", "attention_only"])
def test_no_position_sees_the_future(name):
    config = CONFIGS[name]
    params = _random_params(config)
    tokens = np.array([[1, 4, 0, 6, 2, 2]])
    base = al.gpt_logits(params, config, tokens)
    for t in range(6):
        changed = tokens.copy()
        changed[0, t] = (changed[0, t] + 1) % 7
        got = al.gpt_logits(params, config, changed)
        np.testing.assert_array_equal(got[0, :t], base[0, :t])
        assert not np.allclose(got[0, t], base[0, t])


def test_attention_weights_are_causal_rows_that_sum_to_one():
    config = CONFIGS["rope"]
    w = al.gpt_attention_weights(_random_params(config), config, [[1, 2, 3, 4], [0, 0, 0, 0]])
    assert w.shape == (2, 2, 2, 4, 4)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)
    future = np.triu(np.ones((4, 4), dtype=bool), 1)  # key after the query
    assert not w[..., future].any()
    assert (w[..., ~future] > 0).all()


# ---------------------------------------------------------------- generation

@pytest.mark.parametrize("name", CONFIGS)
def test_cached_greedy_generation_equals_uncached(name):
    config = CONFIGS[name]
    params = _random_params(config, seed=3)
    # 12 new tokens: the sequence outgrows the context of 6, and the window slides.
    with_cache = al.generate(params, config, [1, 2], 12, temperature=0)
    without = al.generate(params, config, [1, 2], 12, temperature=0, use_cache=False)
    np.testing.assert_array_equal(with_cache, without)
    assert with_cache[:2].tolist() == [1, 2] and with_cache.shape == (14,)


def test_generation_runs_its_hooks_at_every_step_with_and_without_the_cache():
    config = CONFIGS["learned"]
    params = _random_params(config, seed=6)
    push = 20.0 * (params["wte"][5] - params["wte"].mean(axis=0))  # towards token 5
    hooks = {"blocks.1.resid_post": lambda x: x + push}  # acts on each position alone
    with_cache = al.generate(params, config, [2, 4], 8, temperature=0, hooks=hooks)
    without = al.generate(params, config, [2, 4], 8, temperature=0, use_cache=False,
                          hooks=hooks)
    np.testing.assert_array_equal(with_cache, without)
    for t in range(2, 10):  # each token is the argmax of the hooked full forward pass
        window = with_cache[None, max(0, t - config.context):t]
        logits = al.gpt_logits(params, config, window, hooks=hooks)[0, -1]
        assert with_cache[t] == int(np.argmax(logits))
    plain = al.generate(params, config, [2, 4], 8, temperature=0)
    assert (with_cache[2:] == 5).all() and not (plain[2:] == 5).all()  # the push steered it


def test_greedy_picks_the_largest_logit_of_the_full_model():
    config = CONFIGS["learned"]
    params = _random_params(config, seed=4)
    seq = al.generate(params, config, [5], 4, temperature=0)
    for t in range(1, 5):
        logits = reference_logits(params, config, seq[None, :t])[0, -1]
        assert seq[t] == int(np.argmax(logits))


def test_sampling_follows_the_distribution_it_samples_from():
    config = CONFIGS["none"]
    params = _random_params(config, seed=5)
    logits = al.gpt_logits(params, config, [[3, 1]])[0, -1]
    p = al.next_token_distribution(logits, temperature=1.5, top_k=5)
    draws = np.array([al.generate(params, config, [3, 1], 1, temperature=1.5, top_k=5,
                                  seed=s)[-1] for s in range(3000)])
    counts = np.bincount(draws, minlength=7)
    assert not counts[p == 0].any()  # never a token top-k removed
    expected = 3000 * p
    kept = p > 0
    chi2 = float((((counts - expected) ** 2)[kept] / expected[kept]).sum())
    assert chi2 < 20.5  # 99.9 % quantile of chi-square with 4 degrees of freedom: 18.5


def test_next_token_distribution_against_its_definition():
    z = np.array([1.0, 3.0, 2.0, 3.0, -1.0])
    # temperature 2, top-k 3: tokens 1, 3 (tied at 3.0) and 2 are kept.
    w = np.exp(np.array([0, 3.0, 2.0, 3.0, 0]) / 2) * np.array([0, 1, 1, 1, 0])
    np.testing.assert_allclose(al.next_token_distribution(z, temperature=2, top_k=3),
                               w / w.sum())
    # top-p 0.5 at temperature 1: sorted 0.3548, 0.3548, 0.1305 ...: two tokens reach 0.5.
    p = np.exp(z) / np.exp(z).sum()
    got = al.next_token_distribution(z, top_p=0.5)
    assert set(np.flatnonzero(got)) == {1, 3}
    np.testing.assert_allclose(got[[1, 3]], p[[1, 3]] / p[[1, 3]].sum())
    assert al.next_token_distribution(z, top_p=1.0) == pytest.approx(p)
    greedy = al.next_token_distribution(z, temperature=0)
    assert greedy.tolist() == [0, 1, 0, 0, 0]  # ties go to the lower id


# ---------------------------------------------------------------- bad input

def test_bad_input_names_what_is_wrong():
    config = CONFIGS["learned"]
    params = al.init_gpt(config, dtype=np.float64)
    with pytest.raises(ValueError, match=r"^tokens contains 1 entry outside 0\.\.6, the first -1"):
        al.gpt_logits(params, config, [[1, -1]])
    with pytest.raises(ValueError, match=r"outside 0\.\.6, the first 7"):
        al.gpt_logits(params, config, [[7]])
    with pytest.raises(ValueError, match="context is 6"):
        al.gpt_logits(params, config, [[1] * 7])
    with pytest.raises(TypeError, match="^tokens has dtype float64; expected integer"):
        al.gpt_logits(params, config, [[1.0, 2.0]])
    with pytest.raises(ValueError, match=r"^tokens has 1 dimension\(s\).*expected 2"):
        al.gpt_logits(params, config, [1, 2])
    broken = dict(params, wte=params["wte"][:, :4])
    with pytest.raises(ValueError, match="wte"):
        al.gpt_logits(broken, config, [[1]])
    nan = dict(params, **{"ln_f.beta": np.full(8, np.nan)})
    with pytest.raises(ValueError, match="ln_f.beta"):
        al.gpt_logits(nan, config, [[1]])
    with pytest.raises(ValueError, match="lacks"):
        al.gpt_logits({k: a for k, a in params.items() if k != "wpe"}, config, [[1]])
    with pytest.raises(ValueError, match="n_heads"):
        GPTConfig(7, 6, 8, 1, 3)
    with pytest.raises(ValueError, match="positions"):
        GPTConfig(7, 6, 8, 1, 2, positions="sinusoidal")
    with pytest.raises(TypeError, match="attention_only"):
        GPTConfig(7, 6, 8, 1, 2, attention_only="yes")
    with pytest.raises(ValueError, match="temperature"):
        al.generate(params, config, [1], 2, temperature=-1)
    with pytest.raises(ValueError, match="top_p"):
        al.generate(params, config, [1], 2, top_p=0)
    with pytest.raises(ValueError, match="targets"):
        al.gpt_loss_and_grads(params, config, [[1, 2]], [[1]])
