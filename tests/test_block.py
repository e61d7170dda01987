"""Layer norm, the feed-forward network and the Transformer block against step-by-step
references written here, and the parameter counts against published model sizes."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

import attention_lib as al


def layer_norm_reference(row, gamma=None, beta=None, eps=1e-5):
    """One row with Python's statistics module (population variance, as PyTorch)."""
    mu = statistics.fmean(row)
    var = statistics.pvariance(row)
    gamma = [1.0] * len(row) if gamma is None else gamma
    beta = [0.0] * len(row) if beta is None else beta
    return [g * (x - mu) / math.sqrt(var + eps) + b for x, g, b in zip(row, gamma, beta,
                                                                      strict=True)]


def attention_reference(x, context, w_q, w_k, w_v, w_o, num_heads, causal=False):
    """Multi-head attention for one sequence with explicit loops over heads and positions."""
    n, d = x.shape
    m = context.shape[0]
    dh = d // num_heads
    out = np.zeros((n, d))
    for h in range(num_heads):
        cols = slice(h * dh, (h + 1) * dh)
        q, k, v = x @ w_q[:, cols], context @ w_k[:, cols], context @ w_v[:, cols]
        head = np.zeros((n, dh))
        for i in range(n):
            visible = [j for j in range(m) if not causal or j <= i + m - n]
            scores = [float(q[i] @ k[j]) / math.sqrt(dh) for j in visible]
            top = max(scores)
            e = [math.exp(s - top) for s in scores]
            for j, ej in zip(visible, e, strict=True):
                head[i] += ej / sum(e) * v[j]
        out += head @ w_o[cols, :]
    return out


def ffn_reference(x, w1, b1, w2, b2):
    return np.maximum(x @ w1 + b1, 0.0) @ w2 + b2


def block_reference(block, x, memory=None):
    """The block, sublayer by sublayer, with the references above."""
    def ln(a, i):
        gamma, beta = block.norms[i]
        return np.array([layer_norm_reference(list(r), list(gamma), list(beta)) for r in a])

    def attn(mha, a, ctx, causal):
        return attention_reference(a, ctx, mha.W_Q, mha.W_K, mha.W_V, mha.W_O,
                                   mha.num_heads, causal)

    subs = [lambda a: attn(block.self_attn, a, a, block.causal)]
    if block.cross_attn is not None:
        subs.append(lambda a: attn(block.cross_attn, a, memory, False))
    subs.append(lambda a: ffn_reference(a, block.w1, block.b1, block.w2, block.b2))
    for i, f in enumerate(subs):
        x = x + f(ln(x, i)) if block.norm == "pre" else ln(x + f(x), i)
    return x


def test_layer_norm_matches_the_population_variance_formula():
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, size=(4, 7))
    gamma, beta = rng.standard_normal(7), rng.standard_normal(7)
    expected = np.array([layer_norm_reference(list(r), list(gamma), list(beta)) for r in x])
    np.testing.assert_allclose(al.layer_norm(x, gamma, beta), expected, atol=1e-12)
    plain = al.layer_norm(x, eps=0.0)
    np.testing.assert_allclose(plain.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(plain.var(axis=-1), 1, atol=1e-12)  # ddof=0
    # A row of two entries normalises to exactly -1 and 1 with eps = 0 (not +-1/sqrt 2).
    np.testing.assert_allclose(al.layer_norm([[5.0, 9.0]], eps=0.0), [[-1.0, 1.0]])


def test_layer_norm_eps_and_constant_rows_and_dtype():
    out = al.layer_norm(np.full((2, 3), 4.0))
    assert np.all(out == 0)  # constant rows: (x - mu) = 0, no division by zero thanks to eps
    x32 = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    assert al.layer_norm(x32).dtype == np.float32
    assert al.layer_norm(x32, np.ones(5, np.float32), np.zeros(5, np.float32)).dtype == np.float32
    assert al.layer_norm(np.arange(6).reshape(2, 3)).dtype == np.float64
    # eps enters as sigma^2 + eps: with var 1 and eps 3 the row is halved.
    np.testing.assert_allclose(al.layer_norm([[-1.0, 1.0]], eps=3.0), [[-0.5, 0.5]])


@pytest.mark.parametrize(("kwargs", "exc", "name"), [
    ({"x": np.ones((2, 3)), "gamma": np.ones(4)}, ValueError, "gamma"),
    ({"x": np.ones((2, 3)), "beta": np.ones((1, 3))}, ValueError, "beta"),
    ({"x": np.ones((2, 3)), "eps": -1.0}, ValueError, "eps"),
    ({"x": np.ones((2, 3)), "eps": "small"}, TypeError, "eps"),
    ({"x": [[1.0, np.inf]]}, ValueError, "x"),
    ({"x": None}, TypeError, "x"),
])
def test_layer_norm_bad_input(kwargs, exc, name):
    with pytest.raises(exc, match=rf"^{name}"):
        al.layer_norm(**kwargs)


def test_feed_forward_matches_reference_and_gelu():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 4))
    w1, b1 = rng.standard_normal((4, 8)), rng.standard_normal(8)
    w2, b2 = rng.standard_normal((8, 4)), rng.standard_normal(4)
    np.testing.assert_allclose(al.feed_forward(x, w1, b1, w2, b2),
                               ffn_reference(x, w1, b1, w2, b2), atol=1e-12)
    # GELU of 1.0 with the tanh approximation, written out: 0.8411919906082768.
    one = al.feed_forward([[1.0]], [[1.0]], [0.0], [[1.0]], [0.0], activation="gelu")
    assert abs(one.item() - 0.8411919906082768) < 1e-12
    with pytest.raises(ValueError, match="w2"):
        al.feed_forward(x, w1, b1, w2.T, b2)
    with pytest.raises(ValueError, match="w1"):
        al.feed_forward(x, w1.T, b1, w2, b2)
    with pytest.raises(ValueError, match="activation"):
        al.feed_forward(x, w1, b1, w2, b2, activation="tanh")


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("causal", [False, True])
def test_block_matches_the_step_by_step_reference(norm, causal):
    block = al.TransformerBlock(8, 2, 12, norm=norm, causal=causal,
                                rng=np.random.default_rng(3))
    rng = np.random.default_rng(4)
    block.b1[:] = rng.standard_normal(12)  # non-trivial biases and norms
    block.norms[0] = (rng.standard_normal(8), rng.standard_normal(8))
    x = rng.standard_normal((5, 8))
    y, weights = block(x)
    np.testing.assert_allclose(y, block_reference(block, x), atol=1e-10)
    assert weights["self"].shape == (2, 5, 5)
    if causal:
        assert np.all(np.triu(weights["self"], k=1) == 0)


def test_decoder_block_with_cross_attention_matches_reference():
    block = al.TransformerBlock(8, 4, causal=True, cross_attention=True,
                                rng=np.random.default_rng(5))
    rng = np.random.default_rng(6)
    x, memory = rng.standard_normal((3, 8)), rng.standard_normal((6, 8))
    y, weights = block(x, memory)
    np.testing.assert_allclose(y, block_reference(block, x, memory), atol=1e-10)
    assert weights["cross"].shape == (4, 3, 6)
    # Causal: changing the last token leaves the outputs of the earlier ones untouched.
    x2 = x.copy()
    x2[-1] += 1.0
    y2, _ = block(x2, memory)
    np.testing.assert_array_equal(y2[:-1], y[:-1])
    assert not np.allclose(y2[-1], y[-1])


def test_block_batches_and_keeps_float32():
    block = al.TransformerBlock(8, 2, rng=np.random.default_rng(7))
    x = np.random.default_rng(8).standard_normal((3, 4, 8))
    y, _ = block(x)
    for b in range(3):
        np.testing.assert_allclose(y[b], block(x[b])[0], atol=1e-12)
    assert block(x.astype(np.float32))[0].dtype == np.float32


def test_block_bad_input():
    block = al.TransformerBlock(8, 2, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="x has"):
        block(np.ones((3, 7)))
    with pytest.raises(ValueError, match="memory"):
        block(np.ones((3, 8)), np.ones((2, 8)))
    with pytest.raises(ValueError, match="memory"):
        al.TransformerBlock(8, 2, cross_attention=True)(np.ones((3, 8)))
    with pytest.raises(ValueError, match="norm="):
        al.TransformerBlock(8, 2, norm="middle")
    with pytest.raises(ValueError, match="divisible"):
        al.TransformerBlock(8, 3)
    with pytest.raises(TypeError, match="causal="):
        al.TransformerBlock(8, 2, causal="yes")


def test_parameter_counts():
    for cross in (False, True):
        block = al.TransformerBlock(16, 4, 40, cross_attention=cross,
                                    rng=np.random.default_rng(0))
        by_hand = (4 * 16 * 16 * (2 if cross else 1) + 16 * 40 + 40 + 40 * 16 + 16
                   + 2 * 16 * (3 if cross else 2))
        assert block.num_parameters == by_hand
        assert al.block_parameter_count(16, 40, attention_biases=False,
                                        cross_attention=cross) == by_hand
    # GPT-2 small has 124,439,808 parameters (the count of the released checkpoint,
    # token embedding tied to the output layer).
    assert al.gpt_parameter_count(12, 768, 50257, 1024) == 124_439_808
    gpt3 = al.gpt_parameter_count(96, 12288, 50257, 2048)
    assert abs(gpt3 - 175e9) / 175e9 < 0.01
    assert abs(al.block_parameter_count(12288) / (12 * 12288**2) - 1) < 1e-3
    with pytest.raises(ValueError, match="n_layers"):
        al.gpt_parameter_count(0, 8, 10, 10)
    with pytest.raises(TypeError, match="tied_output"):
        al.gpt_parameter_count(1, 8, 10, 10, tied_output="no")


def test_gpt_count_with_an_untied_output_layer():
    # Array by array, for a small GPT: token and position tables, L blocks with
    # attention biases, a final layer norm and, untied, an output matrix (d, V).
    n_layers, d, vocab, context = 3, 16, 50, 12
    block = {"ln1": 2 * d, "W_QKVO": 4 * d * d, "b_QKVO": 4 * d, "ln2": 2 * d,
             "W_1": d * 4 * d, "b_1": 4 * d, "W_2": 4 * d * d, "b_2": d}
    tied = vocab * d + context * d + n_layers * sum(block.values()) + 2 * d
    assert al.gpt_parameter_count(n_layers, d, vocab, context) == tied
    assert al.gpt_parameter_count(n_layers, d, vocab, context,
                                  tied_output=False) == tied + d * vocab
    with pytest.raises(TypeError, match="d_model"):
        al.block_parameter_count(8.0)


# --------------------------------------------------------------------------------------
# Edges: float16, rows of any magnitude, constant rows, flags, memory
# --------------------------------------------------------------------------------------

def test_layer_norm_of_float16_is_computed_in_float32():
    row = np.array([[300.0, -300.0, 300.0, -300.0]], dtype=np.float16)  # squares > 65504
    out = al.layer_norm(row)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.astype(np.float64), [[1.0, -1.0, 1.0, -1.0]], atol=1e-3)
    x = np.random.default_rng(9).normal(0, 100, size=(6, 8)).astype(np.float16)
    want = np.array([layer_norm_reference(list(map(float, r))) for r in x])
    np.testing.assert_allclose(al.layer_norm(x).astype(np.float64), want, atol=2e-3)


@pytest.mark.parametrize("scale", [1e155, 1e-155, 2.0**600, 1e300, 1e-300])
def test_layer_norm_of_a_row_of_any_magnitude(scale):
    x = np.random.default_rng(10).standard_normal((3, 6))
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        scaled = al.layer_norm(x * scale, eps=0.0)
        plain = al.layer_norm(x, eps=0.0)
    want = np.array([layer_norm_reference(list(r), eps=0.0) for r in x])
    np.testing.assert_allclose(scaled, want, atol=1e-12)  # the scale cancels
    np.testing.assert_allclose(plain, want, atol=1e-12)
    if scale >= 1:  # eps is negligible next to these variances
        np.testing.assert_allclose(al.layer_norm(x * scale), want, atol=1e-12)
    else:  # ... and dominates these: (x - mu) / sqrt(eps), tiny but not zero
        tiny = al.layer_norm(x * scale)
        np.testing.assert_allclose(tiny / scale, (x - x.mean(-1, keepdims=True)) / 1e-5**0.5,
                                   rtol=1e-9)


def test_layer_norm_scales_by_powers_of_two_exactly():
    x = np.random.default_rng(11).standard_normal((4, 5))
    for k in (-700, -30, 1, 40, 900):
        np.testing.assert_array_equal(al.layer_norm(np.ldexp(x, k), eps=0.0),
                                      al.layer_norm(x, eps=0.0))


def test_layer_norm_of_constant_rows():
    for value in (4.0, 1e200, -1e-300, 0.0):
        out = al.layer_norm(np.full((2, 3), value), beta=[1.0, 2.0, 3.0])
        np.testing.assert_array_equal(out, [[1.0, 2.0, 3.0]] * 2)  # exactly beta
    with pytest.raises(ValueError, match=r"^x has 1 constant row\(s\), the first at index "
                                         r"\(1,\), and eps=0"):
        al.layer_norm([[1.0, 2.0], [5.0, 5.0]], eps=0.0)
    with pytest.raises(TypeError, match="^eps=True"):
        al.layer_norm([[1.0, 2.0]], eps=True)


def test_float16_block_is_computed_in_float32_not_the_identity():
    block = al.TransformerBlock(8, 2, causal=True, rng=np.random.default_rng(12))
    x = (np.random.default_rng(13).standard_normal((5, 8)) * 300).astype(np.float16)
    y16, w16 = block(x)
    y64, w64 = block(x.astype(np.float64))
    assert y16.dtype == w16["self"].dtype == np.float16
    assert not np.allclose(y16, x)  # each sublayer adds something
    np.testing.assert_allclose(y16.astype(np.float64), y64, rtol=2e-3, atol=0.05)
    np.testing.assert_allclose(w16["self"].astype(np.float64), w64["self"], atol=2e-3)
    ffn = al.feed_forward(x, block.w1.astype(np.float16), block.b1, block.w2, block.b2)
    assert ffn.dtype == np.float64  # mixed: the widest dtype
    ffn16 = al.feed_forward(x, *(w.astype(np.float16) for w in
                                 (block.w1, block.b1, block.w2, block.b2)))
    assert ffn16.dtype == np.float16 and np.all(np.isfinite(ffn16))


def test_block_names_memory_not_context():
    block = al.TransformerBlock(8, 2, cross_attention=True, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"^memory has last axis 4 \(shape \(6, 4\).*expected "
                                         r"d_model=8"):
        block(np.ones((3, 8)), np.ones((6, 4)))
    with pytest.raises(ValueError, match=r"^memory has shape \(3, 6, 8\).*leading \(batch\) "
                                         r"axes do not broadcast with those of x \(2,\)"):
        block(np.ones((2, 3, 8)), np.ones((3, 6, 8)))
    with pytest.raises(TypeError, match="^memory has dtype bool"):
        block(np.ones((3, 8)), np.ones((6, 8), dtype=bool))


@pytest.mark.parametrize("flag", ["False", 0, 1, None, np.array([True])])
def test_parameter_count_flags_are_bools(flag):
    with pytest.raises(TypeError, match=r"^attention_biases="):
        al.block_parameter_count(8, attention_biases=flag)
    with pytest.raises(TypeError, match=r"^cross_attention="):
        al.block_parameter_count(8, cross_attention=flag)
    assert al.block_parameter_count(8, attention_biases=np.bool_(False)) == \
        al.block_parameter_count(8, attention_biases=False)


def test_block_choices_and_generator():
    with pytest.raises(ValueError, match=r"^norm=\['pre'\]; expected one of 'pre', 'post'"):
        al.TransformerBlock(8, 2, norm=["pre"])
    with pytest.raises(TypeError, match=r"^rng=7"):
        al.TransformerBlock(8, 2, rng=7)
    with pytest.raises(ValueError, match=r"^activation="):
        al.feed_forward([[1.0]], [[1.0]], [0.0], [[1.0]], [0.0], activation=None)
