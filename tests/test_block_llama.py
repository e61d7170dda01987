"""Tests of the parts of a Llama block: RMSNorm, SwiGLU and the parameter count.

References: RMSNorm and SwiGLU written per row with ``math.fsum`` and the textbook
sigmoid ``1 / (1 + exp(-u))``; the published parameter counts of Llama 2 7B and
Llama 3 8B as sums of the model's matrices written out here.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention_lib import llama_parameter_count, rms_norm, swiglu


def loop_rms_norm(x, gain, eps):
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    for idx in np.ndindex(*x.shape[:-1]):
        row = [float(a) for a in x[idx]]
        rms = math.sqrt(math.fsum(a * a for a in row) / len(row) + eps)
        out[idx] = [a / rms * g for a, g in zip(row, gain, strict=True)]
    return out


def sigmoid(u: float) -> float:
    return 1.0 / (1.0 + math.exp(-u)) if u > -700 else 0.0


def loop_swiglu(x, w_gate, w_up, w_down):
    x, w_gate, w_up, w_down = (np.asarray(a, dtype=np.float64) for a in (x, w_gate, w_up, w_down))
    out = np.zeros((*x.shape[:-1], w_down.shape[1]))
    for idx in np.ndindex(*x.shape[:-1]):
        row = x[idx]
        hidden = []
        for f in range(w_gate.shape[1]):
            gate = math.fsum(row * w_gate[:, f])
            up = math.fsum(row * w_up[:, f])
            hidden.append(gate * sigmoid(gate) * up)
        for c in range(w_down.shape[1]):
            out[(*idx, c)] = math.fsum(h * w for h, w in zip(hidden, w_down[:, c], strict=True))
    return out


# --------------------------------------------------------------------------------------
# rms_norm
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.0, 1e-5, 0.5])
def test_rms_norm_matches_the_formula(eps):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 6)) * 3
    gain = rng.normal(size=6)
    np.testing.assert_allclose(rms_norm(x, gain, eps=eps), loop_rms_norm(x, gain, eps),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(rms_norm(x, eps=eps), loop_rms_norm(x, np.ones(6), eps),
                               rtol=0, atol=1e-12)


@given(scale_exp=st.integers(-150, 150), float32=st.booleans(), seed=st.integers(0, 2**16))
def test_rms_norm_of_rows_of_any_magnitude(scale_exp, float32, seed):
    # The result does not depend on the row's scale (eps=0): no overflow, no underflow.
    x = np.random.default_rng(seed).normal(size=(3, 5))
    x[:, 0] = 1.0  # no row is all zero
    expected = loop_rms_norm(x, np.ones(5), 0.0)
    dtype = np.float32 if float32 else np.float64
    scale = 10.0 ** (scale_exp / 5 if float32 else scale_exp)  # float32 spans 1e+-30 here
    got = rms_norm((x * scale).astype(dtype), eps=0.0)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, expected, rtol=2e-6 if float32 else 1e-12, atol=0)


def test_rms_norm_dtypes_and_zero_rows():
    x = np.array([[1.0, 2.0, 2.0], [0.0, 0.0, 0.0]])
    half = rms_norm(x.astype(np.float16))
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, loop_rms_norm(x, np.ones(3), 1e-5), rtol=0, atol=1e-3)
    assert rms_norm(np.array([[1, 2, 2]])).dtype == np.float64  # integers
    np.testing.assert_array_equal(rms_norm(x)[1], 0.0)  # a zero row stays zero with eps > 0
    with pytest.raises(ValueError, match=r"^x has 1 all-zero row\(s\), the first at index "
                                         r"\(1,\), and eps=0"):
        rms_norm(x, eps=0.0)


@pytest.mark.parametrize(("kwargs", "error", "pattern"), [
    ({"gain": np.ones(4)}, ValueError, r"^gain has shape \(4,\), dtype float64; expected \(3,\)"),
    ({"gain": [True, False, True]}, TypeError, r"^gain has dtype bool"),
    ({"eps": -1.0}, ValueError, r"^eps=-1.0; expected a number >= 0.0"),
    ({"eps": "small"}, TypeError, r"^eps='small'; expected a real number"),
])
def test_rms_norm_bad_input(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        rms_norm(np.ones((2, 3)), **kwargs)
    with pytest.raises(TypeError, match=r"^x is None"):
        rms_norm(None)


# --------------------------------------------------------------------------------------
# swiglu
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_swiglu_matches_the_formula(dtype):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 4, 6)).astype(dtype) * 3
    w_gate, w_up = rng.normal(size=(2, 6, 10)).astype(dtype)
    w_down = rng.normal(size=(10, 6)).astype(dtype)
    got = swiglu(x, w_gate, w_up, w_down)
    assert got.shape == (2, 4, 6) and got.dtype == dtype
    atol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, loop_swiglu(x, w_gate, w_up, w_down), rtol=0, atol=atol)


def test_swiglu_of_large_gates_neither_overflows_nor_warns():
    x = np.array([[800.0, -800.0]])  # exp(800) overflows float64
    with np.errstate(all="raise"):
        got = swiglu(x, np.eye(2), np.eye(2), np.eye(2))
    np.testing.assert_allclose(got, [[640000.0, 0.0]], rtol=1e-12, atol=1e-300)
    one = np.eye(1, dtype=np.float16)
    half = swiglu(np.array([[8.0]], dtype=np.float16), one, one, one)  # 8 sigma(8) 8 = 63.98
    assert half.dtype == np.float16 and abs(float(half[0, 0]) - 63.9785) < 0.05


def test_swiglu_bad_shapes_are_named():
    x = np.ones((3, 4))
    with pytest.raises(ValueError, match=r"^w_gate has shape \(5, 8\).*d_model=4"):
        swiglu(x, np.ones((5, 8)), np.ones((4, 8)), np.ones((8, 4)))
    with pytest.raises(ValueError, match=re.escape(
            "w_up has shape (4, 7), dtype float64; expected (d_model, d_ff) "
            "(d_model=4, d_ff=8) = (4, 8)")):
        swiglu(x, np.ones((4, 8)), np.ones((4, 7)), np.ones((8, 4)))
    with pytest.raises(ValueError, match=r"^w_down has shape \(4, 8\)"):
        swiglu(x, np.ones((4, 8)), np.ones((4, 8)), np.ones((4, 8)))
    with pytest.raises(ValueError, match=r"^w_gate has shape \(4,\)"):
        swiglu(x, np.ones(4), np.ones((4, 8)), np.ones((8, 4)))


# --------------------------------------------------------------------------------------
# llama_parameter_count
# --------------------------------------------------------------------------------------


def test_llama_2_7b():
    vocab, d, layers, d_ff = 32000, 4096, 32, 11008
    per_layer = (d * d  # W_Q
                 + d * d  # W_K: 32 key/value heads of 128
                 + d * d  # W_V
                 + d * d  # W_O
                 + d * d_ff + d * d_ff + d_ff * d  # gate, up, down
                 + d + d)  # two RMSNorm gains
    total = layers * per_layer + vocab * d + d + d * vocab  # embedding, final norm, output
    assert total == 6_738_415_616  # the published count
    assert llama_parameter_count(vocab, d, layers, 32, 32, d_ff) == total


def test_llama_3_8b():
    vocab, d, layers, d_ff = 128256, 4096, 32, 14336
    d_kv = 8 * 128  # 8 key/value heads of 128
    per_layer = (d * d + d * d_kv + d * d_kv + d * d  # W_Q, W_K, W_V, W_O
                 + 3 * d * d_ff + 2 * d)
    total = layers * per_layer + 2 * vocab * d + d
    assert total == 8_030_261_248  # the published count
    assert llama_parameter_count(vocab, d, layers, 32, 8, d_ff) == total


def test_tied_embeddings_and_multi_query_attention():
    untied = llama_parameter_count(100, 64, 2, 8, 8, 172)
    assert llama_parameter_count(100, 64, 2, 8, 8, 172, tie_embeddings=True) == untied - 100 * 64
    # One key/value head instead of 8: W_K and W_V lose 7 heads of 8 columns each per layer.
    assert llama_parameter_count(100, 64, 2, 8, 1, 172) == untied - 2 * 2 * 64 * 7 * 8


@pytest.mark.parametrize(("args", "kwargs", "error", "pattern"), [
    ((100, 64, 2, 8, 3, 172), {}, ValueError, r"^n_heads=8 is not a multiple of n_kv_heads=3"),
    ((100, 60, 2, 8, 8, 172), {}, ValueError, r"^d_model=60 is not divisible by n_heads=8"),
    ((0, 64, 2, 8, 8, 172), {}, ValueError, r"^vocab_size=0"),
    ((100, 64, 2, 8, 8, 17.5), {}, TypeError, r"^d_ff=17.5"),
    ((100, 64, 2, 8, 8, 172), {"tie_embeddings": 1}, TypeError, r"^tie_embeddings=1"),
])
def test_llama_count_bad_input(args, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        llama_parameter_count(*args, **kwargs)
