"""Tests of the padding mask and of the mask heatmap.

The reference builds the padding mask with two Python loops and a comparison
per entry; it shares no code with ``attention_lib.masks``. The attention tests
check key-padding masks against the slow reference of ``test_attention.py``
rebuilt here from loops over the batch, the queries and the keys.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attention_lib as al
from attention_lib import padding_mask, scaled_dot_product_attention
from attention_lib.plotting import mask_heatmap


def reference_padding(lengths, n):
    """Nested lists: entry [b][j] is True when position j is a real token of sequence b."""
    rows = []
    for length in lengths:
        row = []
        for j in range(n):
            row.append(j < length)
        rows.append(row)
    return rows


def reference_masked_attention(q, k, v, lengths, causal):
    """Attention of each sequence over its real keys only, written with loops."""
    batch, n, d_k = q.shape
    d_v = v.shape[-1]
    out = np.zeros((batch, n, d_v))
    w = np.zeros((batch, n, n))
    for b in range(batch):
        for i in range(n):
            visible = [j for j in range(n) if j < lengths[b] and (not causal or j <= i)]
            if not visible:
                continue
            scores = {j: math.fsum(q[b, i, c] * k[b, j, c] for c in range(d_k)) / math.sqrt(d_k)
                      for j in visible}
            top = max(scores.values())
            exps = {j: math.exp(s - top) for j, s in scores.items()}
            total = math.fsum(exps.values())
            for j in visible:
                w[b, i, j] = exps[j] / total
            for c in range(d_v):
                out[b, i, c] = math.fsum(w[b, i, j] * v[b, j, c] for j in visible)
    return out, w


# --------------------------------------------------------------------------------------
# padding_mask
# --------------------------------------------------------------------------------------


def test_the_chapter_example():
    expected = [[True, True, True, True],
                [True, True, False, False],
                [True, True, True, False]]
    assert padding_mask([4, 2, 3], 4).tolist() == expected


@given(n=st.integers(1, 12), data=st.data())
def test_matches_loop_reference(n, data):
    lengths = data.draw(st.lists(st.integers(0, n), min_size=1, max_size=6))
    got = padding_mask(lengths, n)
    assert got.dtype == np.bool_
    assert got.shape == (len(lengths), n)
    assert got.tolist() == reference_padding(lengths, n)


def test_row_sums_are_the_lengths():
    lengths = np.array([0, 1, 5, 3, 5])
    assert padding_mask(lengths, 5).sum(axis=1).tolist() == lengths.tolist()


def test_accepts_numpy_integers():
    assert padding_mask(np.array([2], dtype=np.int8), np.int64(3)).tolist() == [[True, True, False]]


@pytest.mark.parametrize(
    ("lengths", "n", "error", "match"),
    [
        ([1, 2], 0, ValueError, "n=0"),
        ([1, 2], 2.0, TypeError, "n=2.0"),
        ([1, 2], True, TypeError, "n=True"),
        ([1, 5], 4, ValueError, r"lengths\[1\]=5 is outside 0..n=4"),
        ([-1, 2], 4, ValueError, r"lengths\[0\]=-1"),
        ([1.0, 2.0], 4, TypeError, "lengths has dtype float64"),
        ([True, False], 4, TypeError, "lengths has dtype bool"),
        ([[1, 2]], 4, ValueError, r"shape \(1, 2\)"),
        ([], 4, ValueError, "non-empty 1-D"),
        (3, 4, ValueError, r"shape \(\)"),
        (None, 4, TypeError, "lengths is None"),
    ],
)
def test_bad_input_names_the_argument(lengths, n, error, match):
    with pytest.raises(error, match=match):
        padding_mask(lengths, n)


# --------------------------------------------------------------------------------------
# A key-padding mask in attention
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@given(data=st.data())
def test_key_padding_mask_in_attention_matches_loops(causal, data):
    n = data.draw(st.integers(1, 5))
    lengths = data.draw(st.lists(st.integers(1, n), min_size=1, max_size=4))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    batch = len(lengths)
    q = rng.normal(size=(batch, n, 3))
    k = rng.normal(size=(batch, n, 3))
    v = rng.normal(size=(batch, n, 2))
    key_mask = padding_mask(lengths, n)[:, None, :]  # (batch, 1, n)
    out, w = scaled_dot_product_attention(q, k, v, key_mask, causal=causal)
    ref_out, ref_w = reference_masked_attention(q, k, v, lengths, causal)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-12)


def test_padding_content_does_not_reach_real_rows():
    rng = np.random.default_rng(5)
    lengths, n = [4, 2, 3], 4
    q, k, v = (rng.normal(size=(3, n, 4)) for _ in range(3))
    key_mask = padding_mask(lengths, n)[:, None, :]
    out, _ = scaled_dot_product_attention(q, k, v, key_mask, causal=True)
    k2, v2 = k.copy(), v.copy()
    for b, length in enumerate(lengths):
        k2[b, length:] = rng.normal(size=(n - length, 4)) * 100
        v2[b, length:] = rng.normal(size=(n - length, 4)) * 100
    out2, _ = scaled_dot_product_attention(q, k2, v2, key_mask, causal=True)
    for b, length in enumerate(lengths):
        np.testing.assert_array_equal(out[b, :length], out2[b, :length])


def test_length_zero_sequence_is_fully_masked():
    q = k = v = np.ones((2, 3, 2))
    key_mask = padding_mask([3, 0], 3)[:, None, :]
    with pytest.raises(ValueError, match="no key to attend to"):
        scaled_dot_product_attention(q, k, v, key_mask)
    out, w = scaled_dot_product_attention(q, k, v, key_mask, fully_masked="zero")
    assert not w[1].any()
    assert not out[1].any()


# --------------------------------------------------------------------------------------
# mask_heatmap
# --------------------------------------------------------------------------------------


def test_mask_heatmap_labels_every_cell():
    mask = np.array([[True, False, False], [True, True, False]])
    ax = mask_heatmap(mask, ["a", "b"], ["x", "y", "z"], form="additive")
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["0", "\u2212\u221e", "\u2212\u221e", "0", "0", "\u2212\u221e"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x", "y", "z"]
    plt.close(ax.figure)
    ax = mask_heatmap(mask, form="bool")
    assert [t.get_text() for t in ax.texts] == ["True", "False", "False", "True", "True", "False"]
    plt.close(ax.figure)


@pytest.mark.parametrize(
    ("mask", "kwargs", "error"),
    [
        (np.ones((2, 2)), {}, TypeError),
        (np.ones((2, 2, 2), dtype=bool), {}, ValueError),
        (np.ones((2, 2), dtype=bool), {"form": "float"}, ValueError),
        (np.ones((2, 2), dtype=bool), {"query_labels": ["a"]}, ValueError),
    ],
)
def test_mask_heatmap_bad_input(mask, kwargs, error):
    with pytest.raises(error):
        mask_heatmap(mask, **kwargs)
    plt.close("all")


@pytest.mark.parametrize("n_q,n_k,b_q,b_k",
                         [(4, 4, 2, 2), (11, 11, 4, 4), (5, 9, 2, 3), (7, 7, 3, 5), (1, 1, 1, 1)])
def test_causal_tile_kinds_against_a_loop_over_pairs(n_q, n_k, b_q, b_k):
    kinds = al.causal_tile_kinds(n_q, n_k, block_q=b_q, block_k=b_k)
    offset = n_k - n_q  # query i sits at position i + offset
    assert kinds.shape == (-(-n_q // b_q), -(-n_k // b_k))
    for a in range(kinds.shape[0]):
        for b in range(kinds.shape[1]):
            seen = [j <= i + offset for i in range(a * b_q, min((a + 1) * b_q, n_q))
                    for j in range(b * b_k, min((b + 1) * b_k, n_k))]
            expected = "full" if all(seen) else "diagonal" if any(seen) else "skipped"
            assert kinds[a, b] == expected, (a, b)


def test_causal_tile_kinds_names_bad_arguments():
    with pytest.raises(ValueError, match="block_q"):
        al.causal_tile_kinds(4, block_q=0)
    with pytest.raises((TypeError, ValueError), match="n_q"):
        al.causal_tile_kinds(2.5, block_q=2)
