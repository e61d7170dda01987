"""Tests of the generation costs and the KV cache memory formula in ``attention_lib.costs``.

The reference is a tiny multi-head attention layer written with Python loops
over scalars that feeds a sequence one token at a time in the three ways the
library counts (a cache; recomputing every key and value; recomputing the
whole causal pass) and counts every multiplication it performs. Its outputs are
checked against ``MultiHeadAttention`` so that the counted loops are known to
compute the right thing. The memory formula is checked against what numpy
allocates.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attention_lib as al

# --------------------------------------------------------------------------------------
# Brute-force reference: loops over scalars, one count per multiplication
# --------------------------------------------------------------------------------------


class LoopLayer:
    """Multi-head causal attention on lists, counting multiplications."""

    def __init__(self, mha: al.MultiHeadAttention):
        self.h, self.d_head = mha.num_heads, mha.d_head
        self.w = {name: mha.parameters()[name].tolist() for name in ("W_Q", "W_K", "W_V", "W_O")}
        self.mults = 0

    def project(self, x_row, name):
        w = self.w[name]
        out = []
        for j in range(len(w[0])):
            acc = 0.0
            for c in range(len(x_row)):
                acc += x_row[c] * w[c][j]
                self.mults += 1
            out.append(acc)
        return out

    def attend_row(self, q_row, keys, values):
        """One query row over the given keys and values, head by head, then W_O."""
        concat = []
        for head in range(self.h):
            cols = range(head * self.d_head, (head + 1) * self.d_head)
            scores = []
            for k_row in keys:
                acc = 0.0
                for c in cols:
                    acc += q_row[c] * k_row[c]
                    self.mults += 1
                scores.append(acc / math.sqrt(self.d_head))
            top = max(scores)
            e = [math.exp(s - top) for s in scores]
            weights = [x / sum(e) for x in e]
            for c in cols:
                acc = 0.0
                for j, v_row in enumerate(values):
                    acc += weights[j] * v_row[c]
                    self.mults += 1
                concat.append(acc)
        return self.project(concat, "W_O")

    def dense_causal_rows(self, x_rows):
        """The whole causal pass over x_rows, scoring every (query, key) pair as a dense
        implementation does and masking afterwards; returns every output row."""
        q = [self.project(r, "W_Q") for r in x_rows]
        k = [self.project(r, "W_K") for r in x_rows]
        v = [self.project(r, "W_V") for r in x_rows]
        t = len(x_rows)
        outputs = []
        for i in range(t):
            concat = []
            for head in range(self.h):
                cols = range(head * self.d_head, (head + 1) * self.d_head)
                scores = []
                for j in range(t):  # all t keys are multiplied, the future ones too
                    acc = 0.0
                    for c in cols:
                        acc += q[i][c] * k[j][c]
                        self.mults += 1
                    scores.append(acc / math.sqrt(self.d_head) if j <= i else -math.inf)
                top = max(scores)
                e = [math.exp(s - top) for s in scores]
                weights = [x / sum(e) for x in e]
                for c in cols:
                    acc = 0.0
                    for j in range(t):  # masked weights are 0 but still multiplied
                        acc += weights[j] * v[j][c]
                        self.mults += 1
                    concat.append(acc)
            outputs.append(self.project(concat, "W_O"))
        return outputs


def loop_generate(mha, x, strategy):
    """Feed x one token at a time; return the outputs (n, d_model) and the count of each step."""
    layer = LoopLayer(mha)
    rows = x.tolist()
    cache_k, cache_v, outputs, counts = [], [], [], []
    for t in range(1, len(rows) + 1):
        before = layer.mults
        if strategy == "cache":
            new = rows[t - 1]
            cache_k.append(layer.project(new, "W_K"))
            cache_v.append(layer.project(new, "W_V"))
            out = layer.attend_row(layer.project(new, "W_Q"), cache_k, cache_v)
        elif strategy == "recompute_kv":
            keys = [layer.project(r, "W_K") for r in rows[:t]]
            values = [layer.project(r, "W_V") for r in rows[:t]]
            out = layer.attend_row(layer.project(rows[t - 1], "W_Q"), keys, values)
        else:
            out = layer.dense_causal_rows(rows[:t])[-1]
        counts.append(layer.mults - before)
        outputs.append(out)
    return np.array(outputs), counts


STRATEGIES = ("cache", "recompute_kv", "recompute_all")


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize(("d_model", "num_heads", "n"), [(4, 2, 5), (6, 3, 4), (2, 1, 6)])
def test_step_and_total_counts_match_brute_force(strategy, d_model, num_heads, n):
    rng = np.random.default_rng(d_model * 10 + n)
    mha = al.MultiHeadAttention(d_model, num_heads, rng=rng)
    x = rng.normal(size=(n, d_model))
    outputs, counts = loop_generate(mha, x, strategy)
    # The counted loops compute causal multi-head attention.
    expected, _ = mha(x, causal=True)
    np.testing.assert_allclose(outputs, expected, rtol=0, atol=1e-12)
    for t, counted in enumerate(counts, start=1):
        cost = al.decode_step_multiplications(t, d_model, d_model, strategy=strategy)
        assert cost.total == counted, (t, cost, counted)
    total = al.generation_multiplications(n, d_model, d_model, strategy=strategy)
    assert total.total == sum(counts)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 60),
    d_model=st.integers(1, 50),
    d_k=st.integers(1, 50),
    d_v=st.integers(1, 50),
    strategy=st.sampled_from(STRATEGIES),
)
def test_closed_form_totals_are_the_sums_of_the_steps(n, d_model, d_k, d_v, strategy):
    total = al.generation_multiplications(n, d_model, d_k, d_v, strategy=strategy)
    steps = [al.decode_step_multiplications(t, d_model, d_k, d_v, strategy=strategy)
             for t in range(1, n + 1)]
    for field in total._fields:
        assert getattr(total, field) == sum(getattr(s, field) for s in steps)


def test_step_parts_by_hand():
    # t = 3 tokens, d_model = 2, d_k = 4, d_v = 5
    c = al.decode_step_multiplications(3, 2, 4, 5, strategy="cache")
    assert c == (2 * (4 + 4 + 5), 3 * 4, 3 * 5, 5 * 2)
    kv = al.decode_step_multiplications(3, 2, 4, 5, strategy="recompute_kv")
    assert kv == (2 * 4 + 3 * 2 * (4 + 5), 3 * 4, 3 * 5, 5 * 2)
    full = al.decode_step_multiplications(3, 2, 4, 5, strategy="recompute_all")
    assert full == (3 * 2 * (4 + 4 + 5), 9 * 4, 9 * 5, 3 * 5 * 2)
    assert full.total == sum(full)


def test_the_first_step_costs_the_same_whatever_the_strategy():
    costs = {al.decode_step_multiplications(1, 8, 8, strategy=s) for s in STRATEGIES}
    assert len(costs) == 1


def test_growth_orders():
    # Doubling n: the cache's attention part x4, full recompute's attention part x8.
    for strategy, factor in (("cache", 4), ("recompute_all", 8)):
        small = al.generation_multiplications(1000, 8, 8, strategy=strategy).scores
        large = al.generation_multiplications(2000, 8, 8, strategy=strategy).scores
        assert factor * 0.99 < large / small < factor * 1.01


# --------------------------------------------------------------------------------------
# kv_cache_bytes
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize(("n", "layers", "heads", "d_head", "batch"),
                         [(7, 3, 2, 4, 1), (1, 1, 1, 1, 1), (5, 2, 3, 8, 2)])
def test_kv_cache_bytes_is_what_numpy_allocates(dtype, n, layers, heads, d_head, batch):
    k_and_v = np.empty((batch, layers, 2, heads, n, d_head), dtype=dtype)
    got = al.kv_cache_bytes(n, n_layers=layers, n_kv_heads=heads, d_head=d_head,
                            dtype=dtype, batch=batch)
    assert got == k_and_v.nbytes


def test_kv_cache_bytes_agrees_with_one_kvcache_per_layer():
    rng = np.random.default_rng(0)
    layers, heads, d_head, n = 3, 4, 8, 20
    caches = [al.KVCache(initial_capacity=n) for _ in range(layers)]
    for cache in caches:
        for _ in range(n):
            kv = rng.normal(size=(2, heads, 1, d_head)).astype(np.float16)
            cache.append(kv[0], kv[1])
    assert all(c.capacity == n for c in caches)
    assert sum(c.nbytes for c in caches) == al.kv_cache_bytes(
        n, n_layers=layers, n_kv_heads=heads, d_head=d_head, dtype=np.float16)


def test_kv_cache_bytes_known_sizes():
    gib = 2**30
    gpt3 = dict(n_layers=96, n_kv_heads=96, d_head=128)
    assert al.kv_cache_bytes(2048, **gpt3) == 9 * gib
    assert al.kv_cache_bytes(128 * 1024, **gpt3) == 576 * gib
    # Grouped-query attention with 8 key/value heads instead of 32: a quarter.
    full = al.kv_cache_bytes(4096, n_layers=32, n_kv_heads=32, d_head=128)
    gqa = al.kv_cache_bytes(4096, n_layers=32, n_kv_heads=8, d_head=128)
    assert full == 2 * gib and 4 * gqa == full


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error", "pattern"),
    [
        (lambda: al.decode_step_multiplications(0, 4, 4), ValueError, "t=0"),
        (lambda: al.decode_step_multiplications(2.0, 4, 4), TypeError, "t=2.0"),
        (lambda: al.decode_step_multiplications(2, 4, 4, 0), ValueError, "d_v=0"),
        (lambda: al.decode_step_multiplications(2, 4, 4, strategy="naive"), ValueError,
         "strategy='naive'"),
        (lambda: al.generation_multiplications(3, True, 4), TypeError, "d_model=True"),
        (lambda: al.generation_multiplications(-1, 4, 4), ValueError, "n=-1"),
        (lambda: al.kv_cache_bytes(10, n_layers=0, n_kv_heads=2, d_head=4), ValueError,
         "n_layers=0"),
        (lambda: al.kv_cache_bytes(10, n_layers=2, n_kv_heads=2, d_head=4, batch=0),
         ValueError, "batch=0"),
        (lambda: al.kv_cache_bytes(10, n_layers=2, n_kv_heads=2, d_head=4, dtype="fp99"),
         TypeError, "dtype='fp99'"),
    ],
)
def test_bad_inputs_name_the_argument(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


@pytest.mark.parametrize("dtype", [None, str, "U", "U8", bool, object, "datetime64[s]", "V4"])
def test_byte_counts_refuse_dtypes_that_are_not_numbers(dtype):
    # np.dtype(None) is float64 and np.dtype(str) has itemsize 0: both would count silently
    with pytest.raises(TypeError, match=r"^dtype=.*expected a numeric numpy dtype"):
        al.kv_cache_bytes(10, n_layers=2, n_kv_heads=2, d_head=4, dtype=dtype)
    with pytest.raises(TypeError, match=r"^dtype=.*expected a numeric numpy dtype"):
        al.score_matrix_bytes(4, 4, dtype)


@pytest.mark.parametrize(("dtype", "itemsize"), [("float16", 2), (np.int8, 1), (np.uint32, 4),
                                                 (np.complex64, 8), (np.dtype("<f8"), 8)])
def test_byte_counts_take_numeric_dtypes(dtype, itemsize):
    assert al.score_matrix_bytes(3, 5, dtype) == 15 * itemsize
    assert al.kv_cache_bytes(3, n_layers=1, n_kv_heads=1, d_head=5, dtype=dtype) == \
        2 * 15 * itemsize


@pytest.mark.parametrize("strategy", [None, ["cache"], "CACHE"])
def test_decode_strategy_is_one_of_three(strategy):
    with pytest.raises(ValueError, match=r"^strategy=.*expected one of 'cache', "
                                         r"'recompute_kv', 'recompute_all'"):
        al.generation_multiplications(3, 4, 4, strategy=strategy)


# --------------------------------------------------------------------------------------
# latent_kv_cache_bytes: multi-head latent attention caches one latent per token
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize(("n", "layers", "d_c", "d_rope", "batch"),
                         [(7, 3, 5, 0, 1), (1, 1, 1, 0, 1), (5, 2, 8, 3, 2)])
def test_latent_cache_bytes_is_what_numpy_allocates(dtype, n, layers, d_c, d_rope, batch):
    latents = np.empty((batch, layers, n, d_c), dtype=dtype)  # c = x W_DKV per token
    rope_keys = np.empty((batch, layers, n, d_rope), dtype=dtype)  # the decoupled key
    got = al.latent_kv_cache_bytes(n, n_layers=layers, d_latent=d_c, d_rope=d_rope,
                                   dtype=dtype, batch=batch)
    assert got == latents.nbytes + rope_keys.nbytes


def test_latent_cache_against_mha_gqa_and_mqa():
    # DeepSeek-V2: 60 layers, 128 heads of 128, latent 512 and a rotary key of 64 per token.
    per_token = al.latent_kv_cache_bytes(1, n_layers=60, d_latent=512, d_rope=64)
    assert per_token == 60 * (512 + 64) * 2
    mha = al.kv_cache_bytes(1, n_layers=60, n_kv_heads=128, d_head=128)
    assert mha == 60 * 2 * 128 * 128 * 2
    assert mha / per_token == pytest.approx(2 * 128 / 4.5)  # the paper's 4.5 d_head per layer
    gqa = al.kv_cache_bytes(1, n_layers=60, n_kv_heads=8, d_head=128)
    mqa = al.kv_cache_bytes(1, n_layers=60, n_kv_heads=1, d_head=128)
    assert mqa < per_token < gqa < mha  # MLA sits between 1 and 8 key/value heads


@pytest.mark.parametrize(("kwargs", "error", "pattern"), [
    ({"d_latent": 0}, ValueError, r"^d_latent=0"),
    ({"d_latent": 4, "d_rope": -1}, ValueError, r"^d_rope=-1; expected an integer >= 0"),
    ({"d_latent": 4, "n_layers": 1.5}, TypeError, r"^n_layers=1.5"),
    ({"d_latent": 4, "dtype": bool}, TypeError, r"^dtype=.*expected a numeric numpy dtype"),
])
def test_latent_cache_bad_input(kwargs, error, pattern):
    kwargs = {"n_layers": 2, **kwargs}
    with pytest.raises(error, match=pattern):
        al.latent_kv_cache_bytes(10, **kwargs)
