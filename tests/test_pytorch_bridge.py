"""The book's functions against what PyTorch and Hugging Face transformers returned.

``attention_lib/data/pytorch_reference.npz`` holds outputs of torch and transformers
themselves (``tools/pytorch_reference.py`` ran them on seeded float64 inputs): an
independent reference for the closing chapter's statements, compared here without either
library installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import attention_lib as al

ROUNDING = 1e-12  # float64 on both sides


@pytest.fixture(scope="module")
def ref():
    return al.pytorch_reference()


def test_the_reference_names_the_versions_that_made_it(ref):
    torch_version, transformers_version = (str(v) for v in ref["versions"])
    assert torch_version.startswith("2.") and transformers_version.count(".") == 2


def test_sdpa_without_and_with_masks(ref):
    q, k, v = ref["sdpa.q"], ref["sdpa.k"], ref["sdpa.v"]
    np.testing.assert_allclose(al.scaled_dot_product_attention(q, k, v)[0], ref["sdpa.plain"],
                               rtol=0, atol=ROUNDING)
    # A boolean attn_mask: True = may attend, the book's convention.
    ours = al.scaled_dot_product_attention(q, k, v, ref["sdpa.bool_mask"])[0]
    np.testing.assert_allclose(ours, ref["sdpa.bool_mask_out"], rtol=0, atol=ROUNDING)
    # A float attn_mask is added to the scaled scores (a loop over every query and key).
    expected = np.empty_like(ref["sdpa.float_mask_out"])
    for h in range(q.shape[1]):
        for i in range(q.shape[2]):
            s = [q[0, h, i] @ k[0, h, j] / np.sqrt(q.shape[-1]) + ref["sdpa.float_mask"][i, j]
                 for j in range(k.shape[2])]
            w = np.exp(np.array(s) - max(s))
            expected[0, h, i] = (w / w.sum()) @ v[0, h]
    np.testing.assert_allclose(expected, ref["sdpa.float_mask_out"], rtol=0, atol=ROUNDING)


def test_is_causal_counts_from_the_top_left_and_the_book_from_the_bottom_right(ref):
    q, k, v = ref["sdpa.q"], ref["sdpa.k"], ref["sdpa.v"]
    n_q, n_k = q.shape[-2], k.shape[-2]
    assert n_q < n_k
    top_left = np.array([[j <= i for j in range(n_k)] for i in range(n_q)])
    ours = al.scaled_dot_product_attention(q, k, v, top_left)[0]
    np.testing.assert_allclose(ours, ref["sdpa.is_causal"], rtol=0, atol=ROUNDING)
    book_causal = al.scaled_dot_product_attention(q, k, v, causal=True)[0]
    assert np.abs(book_causal - ref["sdpa.is_causal"]).max() > 0.1


def test_enable_gqa_repeats_each_key_value_head_for_its_group(ref):
    q, k, v = ref["sdpa.q"], ref["sdpa.k_gqa"], ref["sdpa.v_gqa"]
    group = q.shape[1] // k.shape[1]
    repeated = [al.scaled_dot_product_attention(q[:, i], k[:, i // group], v[:, i // group])[0]
                for i in range(q.shape[1])]
    np.testing.assert_allclose(np.stack(repeated, axis=1), ref["sdpa.gqa"], rtol=0, atol=ROUNDING)
    np.testing.assert_allclose(al.grouped_query_attention(q, k, v)[0], ref["sdpa.gqa"],
                               rtol=0, atol=ROUNDING)


def test_multihead_from_torch_gives_the_modules_output_and_mean_weights(ref):
    mha = al.multihead_from_torch(ref["mha.in_proj_weight"], ref["mha.out_proj_weight"], 2)
    d = mha.d_model
    assert np.array_equal(mha.W_V, ref["mha.in_proj_weight"][2 * d:].T)
    # nn.MultiheadAttention's boolean mask is True where a query may NOT attend.
    out, weights = mha(ref["mha.x"][0], mask=~ref["mha.attn_mask"])
    np.testing.assert_allclose(out, ref["mha.out"][0], rtol=0, atol=ROUNDING)
    np.testing.assert_allclose(weights.mean(axis=0), ref["mha.weights"][0], rtol=0,
                               atol=ROUNDING)


def test_multihead_from_torch_refuses_mismatched_shapes(ref):
    with pytest.raises(ValueError, match=r"in_proj_weight .* expected shape \(3 d, d\)"):
        al.multihead_from_torch(ref["mha.in_proj_weight"][:16], ref["mha.out_proj_weight"], 2)
    with pytest.raises(ValueError, match="out_proj_weight"):
        al.multihead_from_torch(ref["mha.in_proj_weight"], ref["mha.out_proj_weight"][:4], 2)


def _gpt2(ref):
    vocab, context, d, n_layers, n_heads = (int(n) for n in ref["gpt2.config"])
    config = al.GPTConfig(vocab, context, d, n_layers, n_heads)
    state = {name.removeprefix("gpt2.param."): a for name, a in ref.items()
             if name.startswith("gpt2.param.")}
    return config, state


def test_a_hugging_face_gpt2_is_the_books_gpt_and_its_cache_the_books_keys(ref):
    config, state = _gpt2(ref)
    params = al.gpt2_params_from_hf(state, config)
    seen = {}
    sites = [f"blocks.{layer}.attn.{kv}" for layer in range(config.n_layers) for kv in "kv"]
    logits = al.gpt_logits(params, config, ref["gpt2.ids"], hooks=al.capture_hooks(seen, sites))
    np.testing.assert_allclose(logits, ref["gpt2.logits"], rtol=0, atol=ROUNDING)
    np.testing.assert_allclose(ref["gpt2.step_logits"][0, -1], logits[0, -1], rtol=0,
                               atol=ROUNDING)
    for layer in range(config.n_layers):
        np.testing.assert_allclose(seen[f"blocks.{layer}.attn.k"], ref[f"gpt2.keys.{layer}"],
                                   rtol=0, atol=ROUNDING)
        np.testing.assert_allclose(seen[f"blocks.{layer}.attn.v"], ref[f"gpt2.values.{layer}"],
                                   rtol=0, atol=ROUNDING)


def test_gpt2_params_from_hf_names_what_is_wrong(ref):
    config, state = _gpt2(ref)
    missing = {k: v for k, v in state.items() if k != "transformer.h.1.mlp.c_fc.bias"}
    with pytest.raises(KeyError, match="transformer.h.1.mlp.c_fc.bias"):
        al.gpt2_params_from_hf(missing, config)
    rope = al.GPTConfig(config.vocab_size, config.context, config.d_model, config.n_layers,
                        config.n_heads, positions="rope")
    with pytest.raises(ValueError, match="GPT-2 is the configuration with the defaults"):
        al.gpt2_params_from_hf(state, rope)
    with pytest.raises(TypeError, match="expected a GPTConfig"):
        al.gpt2_params_from_hf(state, None)


def test_pytorchs_causal_lower_right_is_the_books_causal_mask(ref):
    q, k, v = ref["sdpa.q"], ref["sdpa.k"], ref["sdpa.v"]
    ours = al.scaled_dot_product_attention(q, k, v, causal=True)[0]
    np.testing.assert_allclose(ours, ref["sdpa.causal_lower_right"], rtol=0, atol=ROUNDING)
