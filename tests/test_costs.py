"""Tests of ``attention_lib.costs`` against brute-force counting.

The reference below runs a tiny transformer layer on real numbers with
matrix products written as Python loops, and counts one FLOP for every
multiplication and one for every addition into an accumulator. For causal
attention it loops only over the keys a query may see, so the halving is
counted, not assumed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import attention_lib as al

# --------------------------------------------------------------------------------------
# Brute-force counting reference
# --------------------------------------------------------------------------------------


class Counter:
    """Matrix products on lists of lists that count their multiplications and additions."""

    def __init__(self):
        self.flops = 0

    def matmul(self, a, b):
        rows, inner, cols = len(a), len(b), len(b[0])
        assert all(len(r) == inner for r in a)
        out = []
        for i in range(rows):
            row = []
            for j in range(cols):
                acc = 0.0
                for c in range(inner):
                    acc += a[i][c] * b[c][j]
                    self.flops += 2  # one multiply, one add
                row.append(acc)
            out.append(row)
        return out

    def attention(self, q, k, v, causal):
        """Single-head attention; scores and mixing counted pair by pair."""
        n_q, n_k = len(q), len(k)
        out = []
        for i in range(n_q):
            visible = range(i + n_k - n_q + 1) if causal else range(n_k)
            scores = []
            for j in visible:
                acc = 0.0
                for c in range(len(q[i])):
                    acc += q[i][c] * k[j][c]
                    self.flops += 2
                scores.append(acc / math.sqrt(len(q[i])))
            top = max(scores)
            e = [math.exp(s - top) for s in scores]  # softmax: not counted
            weights = [x / sum(e) for x in e]
            row = [0.0] * len(v[0])
            for w_ij, j in zip(weights, visible, strict=True):
                for c in range(len(v[0])):
                    row[c] += w_ij * v[j][c]
                    self.flops += 2
            out.append(row)
        return out


def brute_force_layer(d_model, n, n_heads, d_ff, causal, seed=0):
    """Count the FLOPs of a real forward pass of a tiny multi-head layer."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d_model)).tolist()

    def mat(r, c):
        return rng.standard_normal((r, c)).tolist()

    counter = Counter()
    proj = Counter()
    q = proj.matmul(x, mat(d_model, d_model))
    k = proj.matmul(x, mat(d_model, d_model))
    v = proj.matmul(x, mat(d_model, d_model))
    d_head = d_model // n_heads
    heads = []
    for h in range(n_heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        heads.append(counter.attention([r[cols] for r in q], [r[cols] for r in k],
                                       [r[cols] for r in v], causal))
    concat = [sum((head[i] for head in heads), []) for i in range(n)]
    mixed = proj.matmul(concat, mat(d_model, d_model))
    mlp = Counter()
    hidden = [[max(0.0, a) for a in r] for r in mlp.matmul(mixed, mat(d_model, d_ff))]
    mlp.matmul(hidden, mat(d_ff, d_model))
    return proj.flops, mlp.flops, counter.flops


# --------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------


def test_counter_itself_on_a_2x2_product():
    c = Counter()
    assert c.matmul([[1.0, 2.0], [3.0, 4.0]], [[5.0], [6.0]]) == [[17.0], [39.0]]
    assert c.flops == 2 * 2 * 2  # 2 outputs, 2 terms each, multiply + add


@given(n_k=st.integers(1, 6), extra=st.integers(0, 5), d_k=st.integers(1, 4),
       d_v=st.integers(1, 4), causal=st.booleans())
def test_attention_flops_match_brute_force(n_k, extra, d_k, d_v, causal):
    n_q = max(1, n_k - extra) if causal else 1 + extra
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((n_q, d_k)).tolist(), rng.standard_normal((n_k, d_k)).tolist()
    v = rng.standard_normal((n_k, d_v)).tolist()
    counter = Counter()
    counter.attention(q, k, v, causal)
    got = al.attention_flops(n_q, n_k, d_k, d_v, causal=causal)
    assert got.total == counter.flops
    assert got.scores * d_v == got.mix * d_k  # the same pairs in both products


def test_brute_force_attention_agrees_with_the_library_output():
    # The counting reference computes real attention, not only a count.
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((4, 3)) for _ in range(3))
    out = Counter().attention(q.tolist(), k.tolist(), v.tolist(), causal=True)
    expected, _ = al.scaled_dot_product_attention(q, k, v, causal=True)
    np.testing.assert_allclose(out, expected, rtol=1e-12)


@pytest.mark.parametrize("n_q, n_k", [(1, 1), (3, 3), (2, 5), (1, 7), (5, 5)])
def test_causal_pairs_counts_the_true_entries_of_the_mask(n_q, n_k):
    assert al.causal_pairs(n_q, n_k) == int(al.causal_mask(n_q, n_k).sum())


@pytest.mark.parametrize("d_model, n, n_heads, d_ff", [(4, 3, 1, 16), (4, 3, 2, 16),
                                                        (6, 5, 3, 8), (2, 1, 1, 8)])
@pytest.mark.parametrize("causal", [False, True])
def test_layer_flops_match_brute_force(d_model, n, n_heads, d_ff, causal):
    projections, mlp, attention = brute_force_layer(d_model, n, n_heads, d_ff, causal)
    got = al.layer_flops(d_model, n, d_ff=d_ff, causal=causal)
    assert (got.projections, got.mlp, got.attention) == (projections, mlp, attention)
    assert got.total == projections + mlp + attention


def test_layer_flops_default_d_ff_gives_24_d_squared_plus_4_n_d_per_token():
    d, n = 8, 5
    f = al.layer_flops(d, n)
    assert (f.projections + f.mlp) == 24 * d * d * n
    assert f.attention == 4 * n * d * n


def test_rnn_flops_match_brute_force():
    rng = np.random.default_rng(2)
    n, d_in, d_h = 3, 2, 4
    w, u = rng.standard_normal((d_h, d_h)).tolist(), rng.standard_normal((d_h, d_in)).tolist()
    counter, state = Counter(), [[0.0]] * d_h
    for x in rng.standard_normal((n, d_in, 1)).tolist():
        a, b = counter.matmul(w, state), counter.matmul(u, x)
        state = [[math.tanh(a[r][0] + b[r][0])] for r in range(d_h)]
    assert al.rnn_flops(n, d_in, d_h) == counter.flops


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_score_matrix_bytes_is_what_numpy_allocates(dtype):
    assert al.score_matrix_bytes(7, 5, dtype) == np.empty((7, 5), dtype=dtype).nbytes


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="n_q"):
        al.causal_pairs(5, 3)
    with pytest.raises(TypeError, match="d_k"):
        al.attention_flops(2, 2, 1.5)
    with pytest.raises(ValueError, match="d_model"):
        al.layer_flops(0, 4)
    with pytest.raises(TypeError, match="causal"):
        al.attention_flops(2, 2, 2, causal="yes")

