"""Tests of tiled attention (online softmax over key blocks).

Two references: ``scaled_dot_product_attention`` (the library's readable
version, which materialises the whole score matrix, so the two share only input
validation) and, independently of the library, the loop reference of
``tests/reference.py``. The library's loop over tiles, ``tiled_attention_reference``,
is checked against the same two; the engine's causal key spans against
``causal_tile_kinds`` and ``causal_mask``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference import reference_attention as loop_reference

from attention_lib import (
    causal_mask,
    causal_tile_kinds,
    online_softmax_row,
    scaled_dot_product_attention,
    tiled_attention,
    tiled_attention_reference,
)


def reference_attention(q, k, v, causal=False):
    """The output of softmax(q k^T / sqrt(d_k)) v in float64, causal queries last.

    The shared loop reference (tests/reference.py) up to 50000 scores; above
    that, to keep the suite fast, the library's readable
    ``scaled_dot_product_attention`` in float64, which the tests of
    ``test_attention.py`` check against the loop reference.
    """
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if math.prod(batch) * q.shape[-2] * k.shape[-2] <= 50_000:
        return loop_reference(q, k, v, causal=causal)[0]
    return scaled_dot_product_attention(q, k, v, causal=causal)[0]


def random_qkv(seed, lead, n_q, n_k, d_k=16, d_v=8, dtype=np.float64, scale=1.0):
    rng = np.random.default_rng(seed)
    q = (rng.normal(size=(*lead, n_q, d_k)) * scale).astype(dtype)
    k = (rng.normal(size=(*lead, n_k, d_k)) * scale).astype(dtype)
    v = rng.normal(size=(*lead, n_k, d_v)).astype(dtype)
    return q, k, v


CASES = [  # (lead axes, n_q, n_k, block_size)
    ((), 37, 37, 8),
    ((), 37, 37, (5, 11)),
    ((2,), 50, 50, (16, 7)),
    ((2, 3), 29, 29, (4, 64)),  # one key block holds every key
    ((2, 3), 13, 41, (6, 9)),  # n_q != n_k
    ((1,), 1, 17, 4),  # a single query (the decoding step)
    ((), 9, 9, 100),  # one tile larger than the whole problem
]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("lead", "n_q", "n_k", "block_size"), CASES)
def test_tiled_equals_plain_attention_in_float64(lead, n_q, n_k, block_size, causal):
    q, k, v = random_qkv(n_q * 7 + n_k, lead, n_q, n_k)
    got = tiled_attention(q, k, v, causal=causal, block_size=block_size)
    expected, _ = scaled_dot_product_attention(q, k, v, causal=causal)
    assert got.dtype == np.float64 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10)
    np.testing.assert_allclose(got, reference_attention(q, k, v, causal), rtol=0, atol=1e-10)


@pytest.mark.parametrize("causal", [False, True])
def test_tiled_float32_stays_float32_and_is_accurate(causal):
    q, k, v = random_qkv(3, (2, 4), 70, 70, d_k=32, d_v=16, dtype=np.float32)
    got = tiled_attention(q, k, v, causal=causal, block_size=(16, 24))
    assert got.dtype == np.float32
    expected, _ = scaled_dot_product_attention(q, k, v, causal=causal)
    np.testing.assert_allclose(got, expected, rtol=0, atol=2e-5)
    np.testing.assert_allclose(got, reference_attention(q, k, v, causal), rtol=0, atol=2e-5)


def test_large_scores_do_not_overflow():
    # Scores around +-1000: exp would overflow without the running maximum.
    q, k, v = random_qkv(4, (), 20, 30, d_k=4, scale=25.0)
    got = tiled_attention(q, k, v, causal=True, block_size=(4, 6))
    np.testing.assert_allclose(got, reference_attention(q, k, v, True), rtol=0, atol=1e-10)


def test_broadcast_leading_axes():
    rng = np.random.default_rng(5)
    q = rng.normal(size=(2, 3, 11, 8))  # batch 2, heads 3
    k = rng.normal(size=(1, 3, 11, 8))  # shared across the batch
    v = rng.normal(size=(11, 5))  # shared by everything
    got = tiled_attention(q, k, v, causal=True, block_size=4)
    assert got.shape == (2, 3, 11, 5)
    np.testing.assert_allclose(got, reference_attention(q, k, v, True), rtol=0, atol=1e-10)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_the_result_does_not_depend_on_the_number_of_workers(workers):
    q, k, v = random_qkv(6, (3,), 40, 40, dtype=np.float32)
    got = tiled_attention(q, k, v, causal=True, block_size=(8, 16), workers=workers)
    serial = tiled_attention(q, k, v, causal=True, block_size=(8, 16), workers=1)
    np.testing.assert_array_equal(got, serial)  # every tile is computed the same way


def test_a_large_problem_uses_the_default_thread_pool(monkeypatch):
    import attention_lib._threads as threads

    pools = []

    class RecordingPool(threads.ThreadPoolExecutor):
        def __init__(self, workers):
            pools.append(workers)
            super().__init__(workers)

    monkeypatch.setattr(threads, "ThreadPoolExecutor", RecordingPool)
    # 4 x 800 x 800 / 2 causal scores: above the 2**20 where the pool starts.
    q, k, v = random_qkv(7, (4,), 800, 800, d_k=8, d_v=4, dtype=np.float32)
    got = tiled_attention(q, k, v, causal=True)
    np.testing.assert_allclose(got, reference_attention(q, k, v, True), rtol=0, atol=2e-5)
    if not threads.numpy_blas() or threads.available_cpus() < 2:
        pytest.skip("one CPU, or a BLAS that threadpoolctl cannot control: no thread pool")
    assert len(pools) == 1 and pools[0] >= 2
    small = tiled_attention(q[:, :100], k[:, :100], v[:, :100], causal=True)
    assert small.shape == (4, 100, 4) and len(pools) <= 1  # small problems stay serial


def test_integers_are_computed_in_float64():
    q = np.arange(12).reshape(3, 4) % 3
    got = tiled_attention(q, q, q, block_size=2)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, reference_attention(q, q, q), rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------
# online_softmax_row
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("sizes", [[5], [1, 1, 1], [2, 7, 3], [4, 1]])
def test_online_softmax_row_equals_softmax_times_values(sizes):
    rng = np.random.default_rng(sum(sizes))
    scores = rng.normal(size=sum(sizes)) * 4
    values = rng.normal(size=(sum(sizes), 3))
    cuts = np.cumsum(sizes)[:-1]
    trace = online_softmax_row(np.split(scores, cuts), np.split(values, cuts))
    w = np.exp(scores - scores.max())
    np.testing.assert_allclose(trace.output, (w / w.sum()) @ values, rtol=0, atol=1e-12)
    # The running max is the max of the prefix; the final sum is the full normaliser.
    prefix_max = [scores[:end].max() for end in np.cumsum(sizes)]
    np.testing.assert_array_equal(trace.running_max, prefix_max)
    np.testing.assert_allclose(trace.running_sum[-1], w.sum(), rtol=1e-12)


def test_online_softmax_row_with_huge_scores():
    trace = online_softmax_row([np.array([1000.0]), np.array([2000.0, 0.0])],
                               [np.array([[1.0]]), np.array([[2.0], [3.0]])])
    np.testing.assert_allclose(trace.output, [2.0])
    np.testing.assert_allclose(trace.running_sum, [1.0, 1.0])


def test_online_softmax_row_bad_input():
    with pytest.raises(ValueError, match="score_blocks is empty"):
        online_softmax_row([], [])
    with pytest.raises(ValueError, match="one block of values per block"):
        online_softmax_row([[1.0]], [])
    with pytest.raises(ValueError, match=r"value_blocks\[1\] has shape \(1, 2\)"):
        online_softmax_row([[1.0], [2.0, 3.0]], [[[1.0]], [[1.0, 2.0]]])
    with pytest.raises(ValueError, match=r"value_blocks\[1\] has d_v=2"):
        online_softmax_row([[1.0], [2.0]], [[[1.0]], [[1.0, 2.0]]])
    with pytest.raises(ValueError, match=r"score_blocks\[0\] has shape \(1, 1\)"):
        online_softmax_row([[[1.0]]], [[[1.0]]])
    with pytest.raises(ValueError, match=r"score_blocks\[0\] contains 1 NaN"):
        online_softmax_row([[np.nan]], [[[1.0]]])


# --------------------------------------------------------------------------------------
# bad input: the same contract as scaled_dot_product_attention
# --------------------------------------------------------------------------------------


def test_bad_inputs_are_refused_like_plain_attention():
    q = np.ones((3, 4))
    with pytest.raises(ValueError, match="q has d_k=4"):
        tiled_attention(q, np.ones((3, 5)), q)
    with pytest.raises(ValueError, match="k has n_k=3 positions"):
        tiled_attention(q, q, np.ones((2, 4)))
    with pytest.raises(ValueError, match="leading .* axes do not broadcast"):
        tiled_attention(np.ones((2, 3, 4)), np.ones((3, 3, 4)), np.ones((3, 4)))
    with pytest.raises(TypeError, match="q has dtype bool"):
        tiled_attention(q > 0, q, q)
    bad = np.ones((3, 4))
    bad[2, 1] = np.inf
    with pytest.raises(ValueError, match=r"v contains 1 NaN .* at index \(2, 1\)"):
        tiled_attention(q, q, bad)
    with pytest.raises(TypeError, match="causal='yes'"):
        tiled_attention(q, q, q, causal="yes")


def test_causal_with_more_queries_than_keys():
    with pytest.raises(ValueError, match=r"n_q=5 queries and n_k=3 keys"):
        tiled_attention(np.ones((5, 4)), np.ones((3, 4)), np.ones((3, 4)), causal=True)
    # Without the causal rule it is ordinary cross-attention.
    assert tiled_attention(np.ones((5, 4)), np.ones((3, 4)), np.ones((3, 2))).shape == (5, 2)


@pytest.mark.parametrize(
    ("block_size", "error", "message"),
    [
        (0, ValueError, r"block_size\[0\]=0; expected a positive integer"),
        (-1, ValueError, r"block_size\[0\]=-1; expected a positive integer"),
        ((4,), ValueError, r"block_size=\(4,\); expected a positive integer or a pair"),
        ((4, 0), ValueError, r"block_size\[1\]=0; expected a positive integer"),
        (2.5, TypeError, r"block_size\[0\]=2.5; expected a positive integer"),
        (True, TypeError, r"block_size\[0\]=True; expected a positive integer"),
        ((4, 4, 4), ValueError, r"block_size=\(4, 4, 4\); expected"),
    ],
)
def test_bad_block_size(block_size, error, message):
    with pytest.raises(error, match=message):
        tiled_attention(np.ones((3, 4)), np.ones((3, 4)), np.ones((3, 4)), block_size=block_size)


@pytest.mark.parametrize(
    ("workers", "error"), [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError)]
)
def test_bad_workers(workers, error):
    with pytest.raises(error, match=rf"^workers={workers!r}; expected a positive integer"):
        tiled_attention(np.ones((3, 4)), np.ones((3, 4)), np.ones((3, 4)), workers=workers)


def test_scores_that_overflow_are_reported():
    q = np.array([[1e200, 1e200]])
    k = np.array([[1e200, 1e200], [1.0, 1.0]])
    with pytest.raises(ValueError, match="overflow"):
        tiled_attention(q, k, np.ones((2, 1)))


# --------------------------------------------------------------------------------------
# causal attention on sequences longer than one tile
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n_q", "n_k"), [(130, 130), (70, 200), (200, 201), (300, 300)])
def test_causal_attention_on_sequences_longer_than_one_tile(n_q, n_k):
    q, k, v = random_qkv(n_q + n_k, (2,), n_q, n_k, d_k=8, d_v=3)
    expected = reference_attention(q, k, v, causal=True)
    out, w = scaled_dot_product_attention(q, k, v, causal=True)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-12)
    future = np.arange(n_k)[None, :] > np.arange(n_q)[:, None] + n_k - n_q
    assert np.all(w[..., future] == 0)
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=0, atol=1e-12)
    # The same as passing the causal mask explicitly (the general masked path).
    out_m, w_m = scaled_dot_product_attention(q, k, v, mask=~future)
    np.testing.assert_allclose(out, out_m, rtol=0, atol=1e-12)
    np.testing.assert_allclose(w, w_m, rtol=0, atol=1e-12)
    np.testing.assert_allclose(tiled_attention(q, k, v, causal=True), expected, atol=1e-12)


def test_plain_causal_attention_with_batch_axes_only_on_v():
    rng = np.random.default_rng(8)
    q, k = rng.normal(size=(2, 260, 4))
    v = rng.normal(size=(3, 260, 2))  # the output gets a batch axis from v alone
    out, w = scaled_dot_product_attention(q, k, v, causal=True)
    assert out.shape == (3, 260, 2) and w.shape == (3, 260, 260)
    np.testing.assert_allclose(out, reference_attention(q, k, v, True), rtol=0, atol=1e-12)


def test_plain_causal_attention_in_float32_stays_float32():
    q, k, v = random_qkv(9, (2,), 200, 200, dtype=np.float32)
    out, w = scaled_dot_product_attention(q, k, v, causal=True)
    assert out.dtype == np.float32 and w.dtype == np.float32
    np.testing.assert_allclose(out, reference_attention(q, k, v, True), rtol=0, atol=2e-5)


# --------------------------------------------------------------------------------------
# numpy's BLAS thread count while the thread pool runs
# --------------------------------------------------------------------------------------


def _blas_or_skip():
    import attention_lib._threads as threads

    libraries = threads.numpy_blas()
    if not libraries:
        pytest.skip("numpy's BLAS is not one that threadpoolctl can control")
    return threads, libraries[0]


def test_one_blas_thread_restores_the_thread_count_after_nesting():
    threads, blas = _blas_or_skip()
    before = blas.get_num_threads()
    try:
        blas.set_num_threads(2)
        with threads.one_blas_thread():
            assert blas.get_num_threads() == 1
            with threads.one_blas_thread():
                assert blas.get_num_threads() == 1
            assert blas.get_num_threads() == 1  # the outer block is still running
        assert blas.get_num_threads() == 2
        with pytest.raises(RuntimeError), threads.one_blas_thread():
            raise RuntimeError("an error inside the block")
        assert blas.get_num_threads() == 2  # restored on the way out of an exception too
    finally:
        blas.set_num_threads(before)


def test_a_thread_count_set_meanwhile_is_kept():
    threads, blas = _blas_or_skip()
    before = blas.get_num_threads()
    try:
        blas.set_num_threads(2)
        with threads.one_blas_thread():
            blas.set_num_threads(3)  # the user's own change while the pool runs
        assert blas.get_num_threads() == 3
    finally:
        blas.set_num_threads(before)


def test_one_worker_leaves_blas_alone(monkeypatch):
    import attention_lib.tiled as tiled

    _, blas = _blas_or_skip()
    seen = []
    original = tiled._attend_query_block

    def recording(*args):
        seen.append(blas.get_num_threads())
        return original(*args)

    monkeypatch.setattr(tiled, "_attend_query_block", recording)
    before = blas.get_num_threads()
    q, k, v = random_qkv(11, (2,), 40, 40)
    tiled_attention(q, k, v, block_size=8, workers=1)
    assert seen and set(seen) == {before}
    serial_tiles = len(seen)
    tiled_attention(q, k, v, block_size=8, workers=2)
    assert set(seen[serial_tiles:]) == {1}  # the pool ran with one BLAS thread
    assert blas.get_num_threads() == before


# --------------------------------------------------------------------------------------
# unusual but legitimate input
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_k", [100, 70000])
def test_float16_is_accumulated_in_float32(n_k):
    # Equal scores: the output is the mean of v. A float16 accumulator of 100 values of
    # 1000 overflows (inf), and 70000 ones overflow the row sum (NaN).
    q = np.zeros((1, 4), np.float16)
    k = np.zeros((n_k, 4), np.float16)
    v = np.full((n_k, 2), 1000.0, np.float16)
    out = tiled_attention(q, k, v, block_size=(1, 512))
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, [[1000.0, 1000.0]])


def test_float16_agrees_with_the_float64_reference():
    q, k, v = random_qkv(1616, (2,), 60, 60, dtype=np.float16)
    got = tiled_attention(q, k, v, causal=True, block_size=(16, 24))
    assert got.dtype == np.float16
    expected = reference_attention(q, k, v, causal=True)
    np.testing.assert_allclose(got, expected, rtol=0, atol=5e-3)


def test_the_callers_error_state_does_not_matter():
    q, k, v = random_qkv(12, (), 30, 30, d_k=4, scale=30.0)  # scores far apart: exp underflows
    with np.errstate(all="raise"):
        got = tiled_attention(q, k, v, causal=True, block_size=(8, 8), workers=1)
    np.testing.assert_allclose(got, reference_attention(q, k, v, True), rtol=0, atol=1e-10)


def test_masked_arrays_are_refused():
    q = np.ma.masked_array(np.ones((2, 3)), mask=False)
    with pytest.raises(TypeError, match=r"^q is a numpy masked array"):
        tiled_attention(q, np.ones((2, 3)), np.ones((2, 3)))


def test_overflow_message_names_batch_query_and_key():
    q = np.ones((2, 3, 2))
    q[1, 2] = 1e200
    k = np.full((4, 2), 1e200)
    with pytest.raises(ValueError, match=r"overflow float64: the score at \(\.\.\., query, key\) "
                                         r"index \(1, 2, 0\) is not finite"):
        tiled_attention(q, k, np.ones((4, 1)), block_size=2, workers=1)


def test_causal_tiles_build_no_score_matrix():
    import tracemalloc

    n = 2048
    q, k, v = random_qkv(13, (), n, n, d_k=8, d_v=8, dtype=np.float32)
    tracemalloc.start()
    out = tiled_attention(q, k, v, causal=True, workers=1)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak - out.nbytes < n * n // 4  # far below even a boolean n x n mask


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_online_softmax_row_keeps_the_dtype(dtype):
    trace = online_softmax_row([np.array([1.0, 2.0], dtype)], [np.ones((2, 3), dtype)])
    assert trace.output.dtype == trace.running_max.dtype == trace.running_sum.dtype == dtype


# --------------------------------------------------------------------------------------
# the two paths of a query tile: no maximum needed (the usual case), or m raised
# --------------------------------------------------------------------------------------


def _count_raises(monkeypatch):
    import attention_lib.tiled as tiled

    calls = []
    original = tiled._raise_reference

    def recording(heads, s, *args):
        calls.extend([args[1]] * s.shape[0])  # the span's first key, once per (batch, head)
        return original(heads, s, *args)

    monkeypatch.setattr(tiled, "_raise_reference", recording)
    return calls


def _span_count(n_q, n_k, block_q, block_k, causal):
    """Products of query tiles with key spans: key blocks, or under the causal rule the
    blocks before each tile's diagonal plus its triangle in two halves (one if 1 row)."""
    if not causal:
        return math.ceil(n_q / block_q) * math.ceil(n_k / block_k)
    return sum(math.ceil((i0 + n_k - n_q) / block_k) + (2 if min(block_q, n_q - i0) > 1 else 1)
               for i0 in range(0, n_q, block_q))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [False, True])
def test_small_scores_need_no_maximum(monkeypatch, causal, dtype):
    # Scores within a few units of each other: the Cauchy-Schwarz bound holds for
    # every query tile, so no tile looks at its maximum, and the diagonal tiles are
    # masked after the exp.
    calls = _count_raises(monkeypatch)
    q, k, v = random_qkv(21, (2,), 90, 90, d_k=16, dtype=dtype, scale=0.5)
    got = tiled_attention(q, k, v, causal=causal, block_size=(16, 24), workers=1)
    assert calls == []
    atol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(got, reference_attention(q, k, v, causal), rtol=0, atol=atol)
    expected, _ = scaled_dot_product_attention(q, k, v, causal=causal)
    np.testing.assert_allclose(got, expected, rtol=0, atol=atol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [False, True])
def test_every_tile_through_the_maximum(monkeypatch, causal, dtype):
    # With no slack at all, every tile takes the path of the classic recurrence
    # (m raised to the running maximum, the sums so far rescaled): same result.
    import attention_lib.tiled as tiled

    calls = _count_raises(monkeypatch)
    monkeypatch.setattr(tiled, "_RESCALE_THRESHOLD", -math.inf)
    q, k, v = random_qkv(22, (2,), 61, 61, d_k=8, dtype=dtype, scale=2.0)
    got = tiled_attention(q, k, v, causal=causal, block_size=(8, 12), workers=1)
    assert len(calls) == 2 * _span_count(61, 61, 8, 12, causal)  # 2 heads, every span
    atol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(got, reference_attention(q, k, v, causal), rtol=0, atol=atol)


@pytest.mark.parametrize("causal", [False, True])
def test_some_query_tiles_need_a_maximum_and_others_not(monkeypatch, causal):
    # A few queries far longer than the rest: only their tiles take the path that
    # raises m; the result is exact either way.
    calls = _count_raises(monkeypatch)
    q, k, v = random_qkv(23, (), 96, 96, d_k=8, scale=0.5)
    q[[5, 70]] *= 60.0  # scores of size ~100 for two rows
    got = tiled_attention(q, k, v, causal=causal, block_size=(16, 16), workers=1)
    assert 0 < len(calls) < _span_count(96, 96, 16, 16, causal)  # some tiles, not all
    np.testing.assert_allclose(got, reference_attention(q, k, v, causal), rtol=0, atol=1e-10)
    # The same holds in float32, where exp(100) alone would overflow.
    got32 = tiled_attention(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32),
                            causal=causal, block_size=(16, 16), workers=1)
    np.testing.assert_allclose(got32, reference_attention(q, k, v, causal), rtol=0, atol=1e-5)


@pytest.mark.parametrize("per_task", [1, 3, 4])
@pytest.mark.parametrize("causal", [False, True])
def test_heads_go_through_their_tiles_in_groups(monkeypatch, per_task, causal):
    # 7 entries (batch 7 of a broadcast k): groups of 3 or 4 leave a smaller last
    # group; every entry must still get its own output.
    import attention_lib.tiled as tiled

    monkeypatch.setattr(tiled, "_MAX_HEADS_PER_TASK", per_task)
    q, k, v = random_qkv(24, (7,), 33, 45, d_k=8, d_v=5)
    k = k[:1]  # shared by every entry
    got = tiled_attention(q, k, v, causal=causal, block_size=(8, 16), workers=1)
    assert got.shape == (7, 33, 5)
    np.testing.assert_allclose(got, reference_attention(q, k, v, causal), rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------
# tiled_attention_reference: the readable loop over tiles
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("lead", "n_q", "n_k", "block_size"), CASES)
def test_reference_equals_plain_attention_in_float64(lead, n_q, n_k, block_size, causal):
    q, k, v = random_qkv(n_q * 5 + n_k, lead, n_q, n_k)
    got = tiled_attention_reference(q, k, v, causal=causal, block_size=block_size)
    expected, _ = scaled_dot_product_attention(q, k, v, causal=causal)
    assert got.dtype == np.float64 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got, reference_attention(q, k, v, causal), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("dtype", "atol"), [(np.float32, 2e-5), (np.float16, 5e-3)])
def test_reference_keeps_the_dtype(dtype, atol):
    q, k, v = random_qkv(31, (2,), 40, 40, dtype=dtype)
    got = tiled_attention_reference(q, k, v, causal=True, block_size=(16, 12))
    assert got.dtype == dtype
    np.testing.assert_allclose(got, reference_attention(q, k, v, True), rtol=0, atol=atol)


def test_reference_broadcasts_and_survives_large_scores_under_any_error_state():
    rng = np.random.default_rng(32)
    q = rng.normal(size=(2, 1, 23, 4)) * 25.0  # scores around +-1000: exp needs the max
    k = rng.normal(size=(3, 23, 4)) * 25.0
    v = rng.normal(size=(23, 5))
    with np.errstate(all="raise"):
        got = tiled_attention_reference(q, k, v, causal=True, block_size=(4, 6))
    assert got.shape == (2, 3, 23, 5)
    np.testing.assert_allclose(got, reference_attention(q, k, v, True), rtol=0, atol=1e-10)


def test_reference_never_computes_a_skipped_tile(monkeypatch):
    import attention_lib.tiled as tiled

    tiles = []
    original = tiled.scaled_scores

    def recording(q, k):
        tiles.append((q.shape[-2], k.shape[-2]))
        return original(q, k)

    monkeypatch.setattr(tiled, "scaled_scores", recording)
    n, b_q, b_k = 23, 4, 6
    q, k, v = random_qkv(33, (), n, n)
    tiled_attention_reference(q, k, v, causal=True, block_size=(b_q, b_k))
    # A tile is needed when its last query may see its first key (j <= i).
    needed = [(min(b_q, n - i0), min(b_k, n - j0)) for i0 in range(0, n, b_q)
              for j0 in range(0, n, b_k) if j0 <= min(i0 + b_q, n) - 1]
    assert tiles == needed
    tiles.clear()
    tiled_attention_reference(q, k, v, block_size=(b_q, b_k))
    assert len(tiles) == math.ceil(n / b_q) * math.ceil(n / b_k)  # without the mask: all


def test_reference_defaults_and_bad_input_as_the_fast_engine():
    import inspect

    defaults = [inspect.signature(f).parameters["block_size"].default
                for f in (tiled_attention, tiled_attention_reference)]
    assert defaults[0] == defaults[1]
    q = np.ones((3, 4))
    with pytest.raises(ValueError, match=r"block_size\[1\]=0; expected a positive integer"):
        tiled_attention_reference(q, q, q, block_size=(2, 0))
    with pytest.raises(ValueError, match=r"n_q=5 queries and n_k=3 keys"):
        tiled_attention_reference(np.ones((5, 4)), q, q, causal=True)
    with pytest.raises(TypeError, match="causal='yes'"):
        tiled_attention_reference(q, q, q, causal="yes")
    with pytest.raises(ValueError, match="q has d_k=4"):
        tiled_attention_reference(q, np.ones((3, 5)), q)
    with pytest.raises(ValueError, match="overflow float64"):
        tiled_attention_reference(np.array([[1e200, 1e200]]),
                                  np.array([[1e200, 1e200], [1.0, 1.0]]), np.ones((2, 1)))


# --------------------------------------------------------------------------------------
# the fast engine's causal key spans against the tile classification
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n_q", "n_k", "b_q", "b_k"),
                         [(37, 37, 8, 8), (37, 37, 5, 11), (13, 41, 6, 9), (20, 20, 7, 3),
                          (1, 17, 4, 4), (9, 9, 100, 100), (30, 30, 1, 4)])
def test_engine_key_spans_follow_the_causal_tile_kinds(n_q, n_k, b_q, b_k):
    from attention_lib.tiled import _key_spans

    kinds = causal_tile_kinds(n_q, n_k, block_q=b_q, block_k=b_k)  # (T_q, T_k)
    visible = causal_mask(n_q, n_k)  # (n_q, n_k)
    for a, i0 in enumerate(range(0, n_q, b_q)):
        rows = min(b_q, n_q - i0)
        computed = np.zeros((rows, n_k), dtype=int)  # times each score of the tile row is made
        unmasked = np.zeros((rows, n_k), dtype=bool)
        for first, start, stop, on_diagonal in _key_spans(rows, n_q, n_k, i0, True, b_k):
            computed[first:, start:stop] += 1
            unmasked[first:, start:stop] |= not on_diagonal
        assert computed.max() == 1  # no score twice
        assert (computed[visible[i0:i0 + rows]] == 1).all()  # every visible score
        assert visible[i0:i0 + rows][unmasked].all()  # no mask where a key is in the future
        for b, j0 in enumerate(range(0, n_k, b_k)):
            block = computed[:, j0:j0 + b_k]
            if kinds[a, b] == "skipped":
                assert not block.any(), (a, b)
            elif kinds[a, b] == "full":
                assert block.all(), (a, b)
