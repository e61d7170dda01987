"""The one transformer (``attention_lib.model``): its attention layer, block and stack against
plain computations written here, per head and per sequence; every gradient against central
differences; cached decoding against the full forward pass; every configuration it offers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from training_reference import assert_gradients_match, central_differences, small_params

import attention_lib as al
from attention_lib.kv_cache import KVCache
from attention_lib.model.attention import attention_backward, attention_forward
from attention_lib.model.config import gpt_parameter_shapes
from attention_lib.model.stack import stack_backward, stack_forward

ENC = al.GPTConfig(vocab_size=6, context=5, d_model=4, n_layers=2, n_heads=2, d_ff=6,
                   causal=False)
DEC = al.GPTConfig(vocab_size=7, context=4, d_model=4, n_layers=2, n_heads=2, d_ff=6,
                   cross_attention=True)


def _pad(lengths, n):
    """Key mask (B, 1, 1, n): True for the first lengths[b] positions."""
    return (np.arange(n) < np.asarray(lengths)[:, None])[:, None, None, :]


def _attn_params(rng, d=4, d_kv=4, prefix="a.", biases=True):
    p = {}
    for m, width in (("q", d), ("k", d_kv), ("v", d_kv), ("o", d)):
        p[prefix + f"w_{m}"] = rng.normal(0, 0.8, (d, width))
        if biases:
            p[prefix + f"b_{m}"] = rng.normal(0, 0.8, width)
    return p


def _plain_attention(x, source, p, n_heads, allowed, n_kv_heads=None, prefix="a.",
                     rope=False):
    """Per sequence, per head, with al.scaled_dot_product_attention (after al.apply_rotary
    with ``rope``); then W_O."""
    n_kv_heads = n_kv_heads or n_heads
    e = p[prefix + "w_q"].shape[1] // n_heads
    out = np.zeros(x.shape[:-1] + (p[prefix + "w_o"].shape[1],))
    weights = np.zeros((x.shape[0], n_heads, x.shape[1], source.shape[1]))

    def proj(a, m):
        b = p.get(prefix + f"b_{m}")
        return a @ p[prefix + f"w_{m}"] + (0 if b is None else b)

    for b in range(x.shape[0]):
        q, k, v = proj(x[b], "q"), proj(source[b], "k"), proj(source[b], "v")
        heads = []
        for i in range(n_heads):
            kv = i // (n_heads // n_kv_heads)  # the key/value head of query head i
            qi, ki = q[:, i * e:(i + 1) * e], k[:, kv * e:(kv + 1) * e]
            if rope:
                qi, ki = al.apply_rotary(qi), al.apply_rotary(ki)
            z, w = al.scaled_dot_product_attention(qi, ki, v[:, kv * e:(kv + 1) * e],
                                                   None if allowed is None else allowed[b])
            heads.append(z)
            weights[b, i] = w
        out[b] = proj(np.concatenate(heads, axis=-1), "o")
    return out, weights


def test_self_attention_without_the_causal_mask_and_with_padding():
    rng = np.random.default_rng(0)
    p = _attn_params(rng)
    x = rng.normal(size=(3, 5, 4))
    mask = _pad([5, 3, 1], 5)
    out, w, _ = attention_forward(x, p, "a.", n_heads=2, mask=mask)
    plain, plain_w = _plain_attention(x, x, p, 2, np.broadcast_to(mask[:, 0], (3, 5, 5)))
    np.testing.assert_allclose(out, plain, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w, plain_w, rtol=1e-12, atol=1e-15)
    assert np.all(w[1, :, :, 3:] == 0) and np.all(w[0, :, 0, 1:] > 0)  # not causal
    causal, wc, _ = attention_forward(x, p, "a.", n_heads=2, causal=True)
    plain_c, _ = _plain_attention(x, x, p, 2, np.broadcast_to(np.tril(np.ones((5, 5), bool)),
                                                              (3, 5, 5)))
    np.testing.assert_allclose(causal, plain_c, rtol=1e-12, atol=1e-12)
    assert np.all(np.triu(wc, 1) == 0)


def test_cross_attention_reads_keys_and_values_from_the_memory():
    rng = np.random.default_rng(1)
    p = _attn_params(rng)
    x, memory = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 6, 4))
    mask = _pad([6, 4], 6)
    out, w, _ = attention_forward(x, p, "a.", n_heads=2, mask=mask, memory=memory)
    plain, plain_w = _plain_attention(x, memory, p, 2, np.broadcast_to(mask[:, 0], (2, 3, 6)))
    np.testing.assert_allclose(out, plain, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w, plain_w, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="rotary"):
        attention_forward(x, p, "a.", n_heads=2, rope=True, memory=memory)


@pytest.mark.parametrize("h_kv", [1, 2])
def test_grouped_key_value_heads_serve_their_query_heads(h_kv):
    rng = np.random.default_rng(2)
    p = _attn_params(rng, d=8, d_kv=2 * h_kv, biases=False)  # 4 query heads of width 2
    x = rng.normal(size=(2, 5, 8))
    out, w, _ = attention_forward(x, p, "a.", n_heads=4, n_kv_heads=h_kv, causal=True)
    plain, plain_w = _plain_attention(x, x, p, 4, np.broadcast_to(
        np.tril(np.ones((5, 5), bool)), (2, 5, 5)), n_kv_heads=h_kv)
    np.testing.assert_allclose(out, plain, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w, plain_w, rtol=1e-12, atol=1e-15)


def test_a_window_sees_only_the_last_positions():
    rng = np.random.default_rng(3)
    p = _attn_params(rng)
    x = rng.normal(size=(1, 6, 4))
    _, w, _ = attention_forward(x, p, "a.", n_heads=2, causal=True, window=2)
    t, s = np.indices((6, 6))
    assert np.all(w[0][:, (s > t) | (s <= t - 2)] == 0)
    assert np.all(w[0][:, (s <= t) & (s > t - 2)] > 0)


def test_rotary_scores_depend_on_the_distance_only():
    rng = np.random.default_rng(4)
    p = _attn_params(rng, biases=False)
    row = rng.normal(size=(1, 1, 4))
    x = np.repeat(row, 6, axis=1)  # the same token everywhere: only the positions differ
    _, w, saved = attention_forward(x, p, "a.", n_heads=2, causal=True, rope=True)
    q, k = saved[2], saved[3]  # (1, h, T, e) after the rotation
    scores = q[0] @ np.swapaxes(k[0], -1, -2)  # (h, T, T)
    for d in range(6):
        diag = np.diagonal(scores, offset=-d, axis1=-2, axis2=-1)  # s = t - d
        np.testing.assert_allclose(diag, np.broadcast_to(diag[:, :1], diag.shape), rtol=1e-12,
                                   atol=1e-12)


def _assert_layer_gradients_match(rng, *, causal=False, mask=None, memory=None, n_kv_heads=None,
                     window=None, rope=False, kind="softmax", biases=True, d_kv=4):
    """Asserts that the layer's backward pass equals central differences of a loss that
    reads every output but one query's; returns the memory's gradient (cross-attention)."""
    p = _attn_params(rng, d_kv=d_kv, biases=biases)
    x = rng.normal(size=(2, 4, 4))
    r = rng.normal(size=(2, 4, 4))
    real = np.ones((2, 4, 1))
    real[1, 3] = 0.0  # a query the loss does not read
    kwargs = dict(n_heads=2, n_kv_heads=n_kv_heads, causal=causal, mask=mask, window=window,
                  rope=rope, kind=kind)

    def loss(params):
        out, _, _ = attention_forward(params["x"], params, "a.",
                                      memory=params.get("memory"), **kwargs)
        return float(np.sum(r * real * out))

    params = {"x": x, **p} if memory is None else {"x": x, "memory": memory, **p}
    _, _, saved = attention_forward(x, p, "a.", memory=memory, **kwargs)
    dx, d_memory, grads = attention_backward(r * real, saved, p, "a.")
    got = {"x": dx, **grads} if memory is None else {"x": dx, "memory": d_memory, **grads}
    fd = central_differences(loss, params)
    if biases and kind == "softmax" and not rope:  # q . b_k adds to a whole row of scores
        # (the softmax ignores it: a zero gradient, and rounding noise in central differences)
        assert np.abs(got.pop("a.b_k")).max() < 1e-12 and np.abs(fd.pop("a.b_k")).max() < 1e-7
    assert_gradients_match(got, fd, tol=1e-8)
    return d_memory


@pytest.mark.parametrize("causal", [False, True])
def test_attention_layer_gradients_with_a_mask(causal):
    _assert_layer_gradients_match(np.random.default_rng(5), causal=causal, mask=_pad([4, 3], 4))


@pytest.mark.parametrize("case", ["gqa", "window", "rope", "linear", "no_biases"])
def test_attention_layer_gradients_of_every_variant(case):
    rng = np.random.default_rng(6)
    kwargs = {"gqa": dict(n_kv_heads=1, d_kv=2, causal=True), "window": dict(causal=True,
              window=2), "rope": dict(causal=True, rope=True), "linear": dict(kind="linear"),
              "no_biases": dict(biases=False, causal=True)}[case]
    _assert_layer_gradients_match(rng, **kwargs)


def test_cross_attention_gradients_reach_the_memory_through_keys_and_values():
    rng = np.random.default_rng(7)
    memory = rng.normal(size=(2, 5, 4))
    d_memory = _assert_layer_gradients_match(rng, mask=_pad([5, 2], 5), memory=memory)
    assert np.all(d_memory[1, 2:] == 0)  # padding gets no gradient
    assert np.abs(d_memory[0]).max() > 0


def _stack_params(configs, seed, scale=0.6):
    shapes = {}
    for config, prefix in configs:
        shapes.update(gpt_parameter_shapes(config, prefix))
    params = small_params(shapes, seed, scale=scale)
    for name in params:
        if name.endswith("gamma"):
            params[name] += 1.0
    return params


def test_a_decoders_parameters_are_the_gpts_plus_a_cross_attention_sublayer():
    gpt = al.GPTConfig(vocab_size=7, context=4, d_model=4, n_layers=2, n_heads=2, d_ff=6)
    dec = gpt_parameter_shapes(DEC, "dec.")
    extra = set(dec) - {"dec." + k for k in al.gpt_parameter_shapes(gpt)}
    assert extra == {f"dec.blocks.{layer}.{part}" for layer in range(2)
                     for part in ["ln_x.gamma", "ln_x.beta"]
                     + [f"cross.{w}_{m}" for m in "qkvo" for w in "wb"]}
    names = list(dec)  # the cross-attention sublayer sits after self-attention
    assert names.index("dec.blocks.0.ln_x.gamma") == names.index("dec.blocks.0.attn.b_o") + 1
    from attention_lib.model.params import init_stacks

    params = init_stacks([(ENC, "enc."), (DEC, "dec.")], np.random.default_rng(0), std=0.1)
    assert np.all(params["dec.blocks.1.ln_x.gamma"] == 1)
    assert np.all(params["enc.blocks.0.attn.b_q"] == 0)
    assert params["dec.blocks.0.cross.w_o"].std() < params["dec.blocks.0.cross.w_q"].std()


def _ln(x, g, b=None, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    out = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps) * g
    return out if b is None else out + b


def _rms(x, g, eps=1e-5):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def _gelu(h):
    return 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))


def _plain_stack(params, config, tokens, prefix="", memory=None, mask=None, memory_mask=None):
    """The stack written out: embedding, blocks (pre- or post-norm), final norm, read-out."""
    T = tokens.shape[1]

    def norm(x, name):
        n = prefix + name
        if config.norm == "rms":
            return _rms(x, params[n + ".gamma"])
        return _ln(x, params[n + ".gamma"], params[n + ".beta"])

    def ffn(x, p):
        if config.ffn == "swiglu":
            gate, up = x @ params[p + "ff.w_gate"], x @ params[p + "ff.w_up"]
            return (gate / (1 + np.exp(-gate)) * up) @ params[p + "ff.w_down"]
        h = x @ params[p + "ff.w1"] + params[p + "ff.b1"]
        h = _gelu(h) if config.ffn == "gelu" else np.maximum(h, 0)
        return h @ params[p + "ff.w2"] + params[p + "ff.b2"]

    def mha(x, source, p, allowed):
        sub = {"a." + k.split(".")[-1]: v for k, v in params.items() if k.startswith(p)}
        return _plain_attention(x, source, sub, config.n_heads, allowed, config.n_kv_heads,
                                rope=config.positions == "rope" and source is x)[0]

    self_allowed = np.ones((tokens.shape[0], T, T), bool)
    if config.causal:
        self_allowed &= np.tril(np.ones((T, T), bool))
    if config.window:
        self_allowed &= ~np.tril(np.ones((T, T), bool), -config.window)
    if mask is not None:
        self_allowed &= mask[:, 0]
    x = params[prefix + "wte"][tokens]
    if config.positions == "learned":
        x = x + params[prefix + "wpe"][:T]
    subs = [("ln1", lambda a, p: mha(a, a, p + "attn.", self_allowed))]
    if config.cross_attention:
        cross_allowed = np.broadcast_to(memory_mask[:, 0], (tokens.shape[0], T,
                                                            memory.shape[1]))
        subs.append(("ln_x", lambda a, p: mha(a, memory, p + "cross.", cross_allowed)))
    if not config.attention_only:
        subs.append(("ln2", ffn))
    for layer in range(config.n_layers):
        p = f"{prefix}blocks.{layer}."
        for name, run in subs:
            if config.norm_position == "pre":
                x = x + run(norm(x, f"blocks.{layer}.{name}"), p)
            else:
                x = norm(x + run(x, p), f"blocks.{layer}.{name}")
    final = norm(x, "ln_f")
    w_out = params[prefix + "wte"].T if config.tie_embeddings else params[prefix + "w_out"]
    return final @ w_out, final


VARIANTS = {
    "gpt": {},
    "post_norm": dict(norm_position="post"),
    "rms_swiglu": dict(norm="rms", ffn="swiglu", attention_biases=False),
    "relu_untied": dict(ffn="relu", tie_embeddings=False),
    "gqa_rope": dict(n_heads=4, n_kv_heads=2, positions="rope"),
    "window_none": dict(window=2, positions="none"),
    "encoder": dict(causal=False),
    "attention_only": dict(attention_only=True),
}


def _variant(name):
    kwargs = dict(vocab_size=7, context=5, d_model=8, n_layers=2, n_heads=2, d_ff=6)
    return al.GPTConfig(**{**kwargs, **VARIANTS[name]})


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_configuration_equals_its_plain_computation(name):
    config = _variant(name)
    params = _stack_params([(config, "")], seed=8)
    tokens = np.random.default_rng(9).integers(0, 7, size=(2, 5))
    logits = stack_forward(params, config, tokens).out
    np.testing.assert_allclose(logits, _plain_stack(params, config, tokens)[0], rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_configuration_has_every_gradient(name):
    config = _variant(name)
    params = _stack_params([(config, "")], seed=10)
    rng = np.random.default_rng(11)
    tokens = rng.integers(0, 7, size=(2, 5))
    r = rng.normal(size=(2, 5, 7))

    def loss(p):
        return float(np.sum(r * stack_forward(p, config, tokens).out))

    run = stack_forward(params, config, tokens, keep=True)
    grads = {k: np.zeros_like(a) for k, a in params.items()}
    stack_backward(r, run.saved, params, config, tokens, grads)
    fd = central_differences(loss, params)
    for key in [k for k in fd if k.endswith("attn.b_k") and config.positions != "rope"]:
        assert np.abs(grads.pop(key)).max() < 1e-10 and np.abs(fd.pop(key)).max() < 1e-6
    unused = [k for k in fd if np.abs(fd[k]).max() == 0]  # e.g. rows of ids never read
    assert all(np.abs(grads[k]).max() == 0 for k in unused)
    assert_gradients_match({k: g for k, g in grads.items() if k not in unused},
                           {k: g for k, g in fd.items() if k not in unused}, tol=1e-7)


@pytest.mark.parametrize("name", ["gpt", "gqa_rope", "window_none", "attention_only",
                                  "rms_swiglu"])
def test_cached_decoding_equals_the_full_forward_pass(name):
    config = _variant(name)
    params = _stack_params([(config, "")], seed=12, scale=0.4)
    tokens = np.random.default_rng(13).integers(0, 7, size=5)
    full = stack_forward(params, config, tokens[None]).out[0]  # (T, V)
    caches = [KVCache() for _ in range(config.n_layers)]
    first = stack_forward(params, config, tokens[:2], caches=caches).out  # a prompt of 2
    np.testing.assert_allclose(first, full[1], rtol=1e-10, atol=1e-12)
    for t in range(2, 5):  # then one position at a time
        step = stack_forward(params, config, tokens[t:t + 1], caches=caches, start=t).out
        np.testing.assert_allclose(step, full[t], rtol=1e-10, atol=1e-12)


def test_the_decoder_equals_a_plain_pass_through_its_blocks():
    params = _stack_params([(ENC, "enc."), (DEC, "dec.")], seed=5)
    rng = np.random.default_rng(6)
    src, tgt = rng.integers(1, 6, size=(2, 5)), rng.integers(0, 7, size=(2, 4))
    mask = _pad([5, 3], 5)
    memory = stack_forward(params, ENC, src, prefix="enc.", key_mask=mask, readout=False)
    plain_memory = _plain_stack(params, ENC, src, "enc.", mask=mask)[1]
    np.testing.assert_allclose(memory.out, plain_memory, rtol=1e-10, atol=1e-12)
    run = stack_forward(params, DEC, tgt, prefix="dec.", memory=memory.out, memory_mask=mask)
    plain = _plain_stack(params, DEC, tgt, "dec.", memory=plain_memory, memory_mask=mask)[0]
    np.testing.assert_allclose(run.out, plain, rtol=1e-10, atol=1e-12)
    assert np.all(run.cross_weights[0][1, :, :, 3:] == 0)  # the source's padding gets none


def test_every_gradient_of_an_encoder_decoder_matches_central_differences():
    params = _stack_params([(ENC, "enc."), (DEC, "dec.")], seed=7)
    rng = np.random.default_rng(8)
    src, tgt = rng.integers(1, 6, size=(2, 5)), rng.integers(0, 7, size=(2, 4))
    mask = _pad([5, 4], 5)
    r = rng.normal(size=(2, 4, 7))

    def loss(p):
        memory = stack_forward(p, ENC, src, prefix="enc.", key_mask=mask, readout=False).out
        return float(np.sum(r * stack_forward(p, DEC, tgt, prefix="dec.", memory=memory,
                                              memory_mask=mask).out))

    enc = stack_forward(params, ENC, src, prefix="enc.", key_mask=mask, readout=False,
                        keep=True)
    dec = stack_forward(params, DEC, tgt, prefix="dec.", memory=enc.out, memory_mask=mask,
                        keep=True)
    grads = {name: np.zeros_like(a) for name, a in params.items()}
    d_memory = stack_backward(r, dec.saved, params, DEC, tgt, grads, prefix="dec.")
    stack_backward(d_memory, enc.saved, params, ENC, src, grads, prefix="enc.", readout=False)
    fd = central_differences(loss, params)
    for name in [n for n in fd if n.endswith(("attn.b_k", "cross.b_k"))]:
        assert np.abs(grads.pop(name)).max() < 1e-12 and np.abs(fd.pop(name)).max() < 1e-7
    assert_gradients_match(grads, fd, tol=1e-7)
    assert np.abs(grads["enc.blocks.0.attn.w_q"]).max() > 0  # through the memory only
    assert np.all(grads["enc.wte"][0] == 0)  # id 0 never read by the encoder here
