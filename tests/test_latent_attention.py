"""Tests of latent key/value attention (multi-head latent attention without its rotary key).

References: a loop over the heads written here, each building its keys and values
from the latents and attending with the loop reference of ``tests/reference.py``
(no library code); ``MultiHeadAttention`` whose ``W_K`` and ``W_V`` are the
products ``W_DKV W_UK`` and ``W_DKV W_UV`` (latent attention is multi-head
attention with low-rank key and value projections); and the two forms of the
function against each other.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import reference_attention

from attention_lib import MultiHeadAttention, latent_kv_attention, latent_kv_parameters


def loop_latent(x, params, h, causal):
    """Head by head: keys and values rebuilt from the latents, then plain attention."""
    c = x @ params["W_DKV"]
    d_head = params["W_Q"].shape[1] // h
    d_v = params["W_UV"].shape[1] // h
    out = 0.0
    weights = []
    for i in range(h):
        q = x @ params["W_Q"][:, i * d_head:(i + 1) * d_head]
        k = c @ params["W_UK"][:, i * d_head:(i + 1) * d_head]
        v = c @ params["W_UV"][:, i * d_v:(i + 1) * d_v]
        head, w = reference_attention(q, k, v, causal=causal)
        out = out + head @ params["W_O"][i * d_v:(i + 1) * d_v]
        weights.append(w)
    return out, np.stack(weights, axis=-3)


@pytest.mark.parametrize("absorbed", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("d_model", "h", "d_c", "d_head"),
                         [(8, 2, 3, None), (12, 3, 5, 7), (6, 1, 2, None), (16, 4, 16, 2)])
def test_both_forms_equal_a_loop_over_heads(d_model, h, d_c, d_head, causal, absorbed):
    params = latent_kv_parameters(d_model, h, d_c, d_head=d_head, rng=np.random.default_rng(0))
    x = np.random.default_rng(1).normal(size=(2, 6, d_model))
    out, w = latent_kv_attention(x, params, h, causal=causal, absorbed=absorbed)
    expected_out, expected_w = loop_latent(x, params, h, causal)
    assert out.shape == x.shape and w.shape == (2, h, 6, 6)
    np.testing.assert_allclose(out, expected_out, rtol=0, atol=1e-12)
    np.testing.assert_allclose(w, expected_w, rtol=0, atol=1e-12)


def test_latent_attention_is_attention_with_low_rank_key_and_value_projections():
    d_model, h, d_c = 12, 4, 3
    params = latent_kv_parameters(d_model, h, d_c, rng=np.random.default_rng(2))
    mha = MultiHeadAttention(d_model, h, rng=np.random.default_rng(3))
    mha.W_Q, mha.W_O = params["W_Q"], params["W_O"]
    mha.W_K = params["W_DKV"] @ params["W_UK"]  # rank d_c = 3 instead of 12
    mha.W_V = params["W_DKV"] @ params["W_UV"]
    assert np.linalg.matrix_rank(mha.W_K) == d_c
    x = np.random.default_rng(4).normal(size=(7, d_model))
    for absorbed in (False, True):
        out, w = latent_kv_attention(x, params, h, absorbed=absorbed)
        expected_out, expected_w = mha(x, causal=True)
        np.testing.assert_allclose(out, expected_out, rtol=0, atol=1e-12)
        np.testing.assert_allclose(w, expected_w, rtol=0, atol=1e-12)


@given(h=st.integers(1, 4), d_head=st.integers(1, 5), d_c=st.integers(1, 8),
       n=st.integers(1, 7), causal=st.booleans(), float32=st.booleans(),
       seed=st.integers(0, 2**16))
def test_absorbed_equals_explicit_property(h, d_head, d_c, n, causal, float32, seed):
    dtype = np.float32 if float32 else np.float64
    d_model = 6
    params = latent_kv_parameters(d_model, h, d_c, d_head=d_head,
                                  rng=np.random.default_rng(seed))
    x = np.random.default_rng(seed + 1).normal(size=(n, d_model)).astype(dtype)
    explicit, w_explicit = latent_kv_attention(x, params, h, causal=causal)
    absorbed, w_absorbed = latent_kv_attention(x, params, h, causal=causal, absorbed=True)
    assert explicit.dtype == absorbed.dtype == w_absorbed.dtype == dtype
    atol = 2e-5 if float32 else 1e-12
    np.testing.assert_allclose(absorbed, explicit, rtol=0, atol=atol)
    np.testing.assert_allclose(w_absorbed, w_explicit, rtol=0, atol=atol)
    expected, _ = loop_latent(x.astype(np.float64), params, h, causal)
    np.testing.assert_allclose(explicit, expected, rtol=0, atol=atol)


def test_float16_is_computed_in_float32():
    params = latent_kv_parameters(8, 2, 4, rng=np.random.default_rng(5))
    x = np.random.default_rng(6).normal(size=(5, 8)).astype(np.float16)
    expected, _ = loop_latent(x.astype(np.float64), params, 2, True)
    for absorbed in (False, True):
        out, w = latent_kv_attention(x, params, 2, absorbed=absorbed)
        assert out.dtype == w.dtype == np.float16
        np.testing.assert_allclose(out, expected, rtol=0, atol=1e-2)


def test_parameters_shapes_scale_and_seed():
    params = latent_kv_parameters(64, 4, 8, d_head=32, rng=np.random.default_rng(7))
    shapes = {name: w.shape for name, w in params.items()}
    assert shapes == {"W_Q": (64, 128), "W_DKV": (64, 8), "W_UK": (8, 128), "W_UV": (8, 128),
                      "W_O": (128, 64)}
    assert abs(params["W_Q"].std() - 1 / 8) < 0.01  # N(0, 1 / rows)
    assert abs(params["W_UK"].std() - 1 / np.sqrt(8)) < 0.03
    again = latent_kv_parameters(64, 4, 8, d_head=32, rng=np.random.default_rng(7))
    assert all(np.array_equal(params[n], again[n]) for n in params)


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------


def test_bad_parameters_are_named():
    params = latent_kv_parameters(8, 2, 3, rng=np.random.default_rng(0))
    x = np.ones((4, 8))
    with pytest.raises(ValueError, match=r"^params lacks \['W_UV'\]"):
        latent_kv_attention(x, {k: v for k, v in params.items() if k != "W_UV"}, 2)
    with pytest.raises(ValueError, match=r"^params\['W_UK'\] has shape \(4, 8\); expected "
                                         r"\(d_c, h\*d_head\) = \(3, 8\), since d_c = 3"):
        latent_kv_attention(x, {**params, "W_UK": np.ones((4, 8))}, 2)
    with pytest.raises(ValueError, match=r"^params\['W_Q'\] has 8 columns, not a multiple of "
                                         r"n_heads=3"):
        latent_kv_attention(x, params, 3)
    with pytest.raises(ValueError, match=r"^x has last axis 6 .*expected d_model=8"):
        latent_kv_attention(np.ones((4, 6)), params, 2)
    with pytest.raises(TypeError, match=r"^params is a list"):
        latent_kv_attention(x, list(params.values()), 2)
    with pytest.raises(TypeError, match=r"^absorbed='yes'"):
        latent_kv_attention(x, params, 2, absorbed="yes")
    with pytest.raises(ValueError, match=r"^n_heads=0"):
        latent_kv_attention(x, params, 0)


@pytest.mark.parametrize(("args", "kwargs", "error", "pattern"), [
    ((8, 3, 2), {}, ValueError, r"^d_model=8 is not divisible by n_heads=3"),
    ((8, 2, 0), {}, ValueError, r"^d_latent=0"),
    ((8, 2, 2), {"d_head": 0}, ValueError, r"^d_head=0"),
    ((8, 2, 2), {"rng": 0}, TypeError, r"^rng=0"),
])
def test_bad_parameter_sizes(args, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        latent_kv_parameters(*args, **kwargs)
