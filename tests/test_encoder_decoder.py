"""The encoder and the decoder of ``attention_lib.training.encoder_decoder``: the GPT's layers
without the causal mask, with a padding mask and with cross-attention, against plain
computations written here; every gradient against central differences."""

from __future__ import annotations

import numpy as np
import pytest
from training_reference import assert_gradients_match, central_differences, small_params

import attention_lib as al
from attention_lib.gpt.layers import (
    attention_backward_layer,
    attention_forward,
    cross_attention_backward_layer,
)
from attention_lib.training import encoder_decoder as ed

ENC = al.GPTConfig(vocab_size=6, context=5, d_model=4, n_layers=2, n_heads=2, d_ff=6)
DEC = al.GPTConfig(vocab_size=7, context=4, d_model=4, n_layers=2, n_heads=2, d_ff=6)


def _attn_params(rng, d=4, prefix="a."):
    return {prefix + f"{w}_{m}": rng.normal(0, 0.8, (d, d) if w == "w" else (d,))
            for m in "qkvo" for w in "wb"}


def _plain_attention(x, source, p, n_heads, allowed):
    """Per sequence, per head, with al.scaled_dot_product_attention; then W_O."""
    d = x.shape[-1]
    dh = d // n_heads
    out = np.zeros_like(x)
    weights = np.zeros((x.shape[0], n_heads, x.shape[1], source.shape[1]))
    for b in range(x.shape[0]):
        q = x[b] @ p["a.w_q"] + p["a.b_q"]
        k = source[b] @ p["a.w_k"] + p["a.b_k"]
        v = source[b] @ p["a.w_v"] + p["a.b_v"]
        heads = []
        for i in range(n_heads):
            cols = slice(i * dh, (i + 1) * dh)
            z, w = al.scaled_dot_product_attention(q[:, cols], k[:, cols], v[:, cols],
                                                   None if allowed is None else allowed[b])
            heads.append(z)
            weights[b, i] = w
        out[b] = np.concatenate(heads, axis=-1) @ p["a.w_o"] + p["a.b_o"]
    return out, weights


def test_self_attention_without_the_causal_mask_and_with_padding():
    rng = np.random.default_rng(0)
    p = _attn_params(rng)
    x = rng.normal(size=(3, 5, 4))
    lengths = np.array([5, 3, 1])
    mask = ed.padding_mask(lengths, 5)  # (B, 1, 1, T)
    assert mask.shape == (3, 1, 1, 5) and mask[1, 0, 0].tolist() == [1, 1, 1, 0, 0]
    out, w, _ = attention_forward(x, p, "a.", 2, False, causal=False, mask=mask)
    allowed = np.broadcast_to(mask[:, 0], (3, 5, 5))
    plain, plain_w = _plain_attention(x, x, p, 2, allowed)
    np.testing.assert_allclose(out, plain, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w, plain_w, rtol=1e-12, atol=1e-15)
    assert np.all(w[1, :, :, 3:] == 0) and np.all(w[0, :, 0, 1:] > 0)  # not causal
    # without a mask and with causal=True: the GPT's layer as before
    causal, wc, _ = attention_forward(x, p, "a.", 2, False)
    plain_c, _ = _plain_attention(x, x, p, 2, np.broadcast_to(np.tril(np.ones((5, 5), bool)),
                                                              (3, 5, 5)))
    np.testing.assert_allclose(causal, plain_c, rtol=1e-12, atol=1e-12)
    assert np.all(np.triu(wc, 1) == 0)


def test_cross_attention_reads_keys_and_values_from_the_memory():
    rng = np.random.default_rng(1)
    p = _attn_params(rng)
    x, memory = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 6, 4))
    mask = ed.padding_mask(np.array([6, 4]), 6)
    out, w, _ = attention_forward(x, p, "a.", 2, False, causal=False, mask=mask, memory=memory)
    plain, plain_w = _plain_attention(x, memory, p, 2, np.broadcast_to(mask[:, 0], (2, 3, 6)))
    np.testing.assert_allclose(out, plain, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w, plain_w, rtol=1e-12, atol=1e-15)
    assert w.shape == (2, 2, 3, 6)
    with pytest.raises(ValueError, match="rotary"):
        attention_forward(x, p, "a.", 2, True, causal=False, memory=memory)


def test_forced_weights_are_the_weights_the_heads_use():
    rng = np.random.default_rng(2)
    p = _attn_params(rng)
    x = rng.normal(size=(1, 4, 4))
    forced = np.zeros((1, 2, 4, 4))
    forced[..., 2] = 1.0  # every query of every head on position 2

    out, w, _ = attention_forward(x, p, "a.", 2, False, causal=False,
                                  weights_fn=lambda w: forced)
    assert np.array_equal(w, forced)
    v = x[0, 2] @ p["a.w_v"] + p["a.b_v"]  # every head then outputs its part of v_2
    np.testing.assert_allclose(out[0], np.tile(v @ p["a.w_o"] + p["a.b_o"], (4, 1)),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_layer_gradients_with_a_mask(causal):
    rng = np.random.default_rng(3)
    p = _attn_params(rng)
    x = rng.normal(size=(2, 4, 4))
    mask = ed.padding_mask(np.array([4, 3]), 4)
    r = rng.normal(size=(2, 4, 4))
    real = np.ones((2, 4, 1))
    real[1, 3] = 0.0  # a padded query: the loss does not read it

    def loss(params):
        out, _, _ = attention_forward(params["x"], params, "a.", 2, False, causal=causal,
                                      mask=mask)
        return float(np.sum(r * real * out))

    params = {"x": x, **p}
    out, _, saved = attention_forward(x, p, "a.", 2, False, causal=causal, mask=mask)
    dx, grads = attention_backward_layer(r * real, saved, p, "a.", 2, False)
    assert_gradients_match({"x": dx, **grads}, central_differences(loss, params), tol=1e-8)


def test_cross_attention_gradients_reach_the_memory_through_keys_and_values():
    rng = np.random.default_rng(4)
    p = _attn_params(rng)
    x, memory = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4))
    mask = ed.padding_mask(np.array([5, 2]), 5)
    r = rng.normal(size=(2, 3, 4))

    def loss(params):
        out, _, _ = attention_forward(params["x"], params, "a.", 2, False, causal=False,
                                      mask=mask, memory=params["memory"])
        return float(np.sum(r * out))

    _, _, saved = attention_forward(x, p, "a.", 2, False, causal=False, mask=mask,
                                    memory=memory)
    dx, d_memory, grads = cross_attention_backward_layer(r, saved, p, "a.", 2)
    fd = central_differences(loss, {"x": x, "memory": memory, **p})
    assert_gradients_match({"x": dx, "memory": d_memory, **grads}, fd, tol=1e-8)
    assert np.all(d_memory[1, 2:] == 0)  # padding gets no gradient
    assert np.abs(d_memory[0]).max() > 0


def _stack_params(seed=5):
    shapes = {**ed.stack_shapes(ENC, "enc.", cross=False), **ed.stack_shapes(DEC, "dec.",
                                                                           cross=True)}
    params = small_params(shapes, seed, scale=0.6)
    for name in params:
        if name.endswith("gamma"):
            params[name] += 1.0
    return params


def test_stack_shapes_are_the_gpts_plus_a_cross_attention_sublayer():
    enc = ed.stack_shapes(ENC, "enc.", cross=False)
    assert enc == {"enc." + k: v for k, v in al.gpt_parameter_shapes(ENC).items()}
    dec = ed.stack_shapes(DEC, "dec.", cross=True)
    extra = set(dec) - {"dec." + k for k in al.gpt_parameter_shapes(DEC)}
    assert extra == {f"dec.blocks.{layer}.{part}" for layer in range(2)
                     for part in ["ln_x.gamma", "ln_x.beta"]
                     + [f"cross.{w}_{m}" for m in "qkvo" for w in "wb"]}
    names = list(dec)  # the cross-attention sublayer sits after self-attention
    assert names.index("dec.blocks.0.ln_x.gamma") == names.index("dec.blocks.0.attn.b_o") + 1
    params = ed.init_stacks({**enc, **dec}, {"enc.": 2, "dec.": 2},
                            np.random.default_rng(0), 0.1)
    assert np.all(params["dec.blocks.1.ln_x.gamma"] == 1)
    assert np.all(params["enc.blocks.0.attn.b_q"] == 0)
    assert params["dec.blocks.0.cross.w_o"].std() < params["dec.blocks.0.cross.w_q"].std()


def test_the_decoder_equals_a_plain_pass_through_its_blocks():
    params = _stack_params()
    rng = np.random.default_rng(6)
    src, tgt = rng.integers(1, 6, size=(2, 5)), rng.integers(0, 7, size=(2, 4))
    mask = ed.padding_mask(np.array([5, 3]), 5)
    memory, _, _ = ed.encoder_forward(params, ENC, src, mask, prefix="enc.")
    logits, self_w, cross_w, _ = ed.decoder_forward(params, DEC, tgt, memory, mask)

    def ln(x, p):
        return al.layer_norm(x, params[p + ".gamma"], params[p + ".beta"])

    def ffn(x, p):
        h = x @ params[p + "ff.w1"] + params[p + "ff.b1"]
        h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))
        return h @ params[p + "ff.w2"] + params[p + "ff.b2"]

    def mha(x, source, p, allowed):
        sub = {"a." + k.split(".")[-1]: v for k, v in params.items() if k.startswith(p)}
        return _plain_attention(x, source, sub, 2, allowed)

    pad = np.broadcast_to(mask[:, 0], (2, 4, 5))
    causal = np.broadcast_to(np.tril(np.ones((4, 4), bool)), (2, 4, 4))
    x = params["dec.wte"][tgt] + params["dec.wpe"][:4]
    for layer in range(2):
        p = f"dec.blocks.{layer}."
        y, w = mha(ln(x, p + "ln1"), ln(x, p + "ln1"), p + "attn.", causal)
        np.testing.assert_allclose(self_w[layer], w, rtol=1e-12, atol=1e-15)
        x = x + y
        y, w = mha(ln(x, p + "ln_x"), memory, p + "cross.", pad)
        np.testing.assert_allclose(cross_w[layer], w, rtol=1e-12, atol=1e-15)
        x = x + y
        x = x + ffn(ln(x, p + "ln2"), p)
    plain = ln(x, "dec.ln_f") @ params["dec.wte"].T
    np.testing.assert_allclose(logits, plain, rtol=1e-10, atol=1e-12)
    assert np.all(cross_w[0][1, :, :, 3:] == 0)  # the source's padding gets no weight


def test_every_gradient_of_an_encoder_decoder_matches_central_differences():
    params = _stack_params(seed=7)
    rng = np.random.default_rng(8)
    src, tgt = rng.integers(1, 6, size=(2, 5)), rng.integers(0, 7, size=(2, 4))
    mask = ed.padding_mask(np.array([5, 4]), 5)
    r = rng.normal(size=(2, 4, 7))

    def loss(p):
        memory, _, _ = ed.encoder_forward(p, ENC, src, mask, prefix="enc.")
        return float(np.sum(r * ed.decoder_forward(p, DEC, tgt, memory, mask)[0]))

    memory, _, enc_saved = ed.encoder_forward(params, ENC, src, mask, prefix="enc.", keep=True)
    _, _, _, dec_saved = ed.decoder_forward(params, DEC, tgt, memory, mask, keep=True)
    grads = {name: np.zeros_like(a) for name, a in params.items()}
    d_memory = ed.decoder_backward(r, dec_saved, params, DEC, tgt, grads)
    ed.encoder_backward(d_memory, enc_saved, params, ENC, src, grads, prefix="enc.")
    fd = central_differences(loss, params)
    # A key bias adds q . b_k to every score of a row, which the softmax ignores: its
    # gradient is zero, and central differences give rounding noise.
    for name in [n for n in fd if n.endswith(("attn.b_k", "cross.b_k"))]:
        assert np.abs(grads.pop(name)).max() < 1e-12 and np.abs(fd.pop(name)).max() < 1e-7
    assert_gradients_match(grads, fd, tol=1e-7)
    # the encoder learns only through cross-attention's keys and values
    assert np.abs(grads["enc.blocks.0.attn.w_q"]).max() > 0
    assert np.all(grads["enc.wte"][0] == 0)  # id 0 never read by the encoder here
