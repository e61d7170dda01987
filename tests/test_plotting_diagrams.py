"""The picture-first diagrams of ``attention_lib.plotting.diagrams`` (Agg backend).

Each diagram is checked against numbers computed here, independently of the
drawing code: the printed weights of the query path against the library's
attention and a direct formula for the scores, and the drawn shapes against
numpy's shapes. The last section checks every diagram drawn on the book's
7-inch canvas, the tiles of ``attention_lib.plotting.tiles`` included.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes

import attention_lib as al
from attention_lib.plotting import causal_tiles, head_split_flow, kv_cache_step, query_path

EX = al.examples.cat_sat_on()
Q, K, V = al.project_qkv(EX.x, EX.w_q, EX.w_k, EX.w_v)


def by_gid(ax: Axes) -> dict[str, str]:
    """The text of every ``Text`` artist that has a gid."""
    found = {}
    for t in ax.texts:
        if t.get_gid():
            assert t.get_gid() not in found, f"two texts have gid {t.get_gid()!r}"
            found[t.get_gid()] = t.get_text()
    return found


def patches(ax: Axes, prefix: str = "") -> dict[str, object]:
    found = {}
    for p in ax.patches:
        gid = p.get_gid()
        if gid and gid.startswith(prefix):
            assert gid not in found, f"two patches have gid {gid!r}"
            found[gid] = p
    return found


def all_texts(ax: Axes) -> str:
    return "\n".join(t.get_text() for t in ax.texts)


def draws(ax: Axes) -> None:
    """The figure renders without error (catches bad mathtext)."""
    ax.figure.canvas.draw()


# --------------------------------------------------------------------------------------
# 1. One query's path
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["The", "cat", "sat", "on"])
def test_query_path_prints_the_library_weights_scores_and_output(query):
    i = EX.tokens.index(query)
    ax = query_path(Q, K, V, query, EX.tokens)
    draws(ax)
    shown = by_gid(ax)
    out, weights = al.scaled_dot_product_attention(Q, K, V)
    scores = np.einsum("d,jd->j", Q[i], K) / math.sqrt(Q.shape[1])  # q_i . k_j / sqrt(d_k)
    for j in range(len(EX.tokens)):
        assert shown[f"weight[{j}]"] == f"{weights[i, j]:.3f}"
        assert shown[f"score[{j}]"] == f"{scores[j]:.3f}"
    for c in range(V.shape[1]):
        assert shown[f"output[{c}]"] == f"{out[i, c]:.3f}"
        assert shown[f"q[{c},0]"] == f"{Q[i, c]:.2f}"  # q is drawn as a column
    assert shown["v[2][0,1]"] == f"{V[2, 1]:.2f}"
    # The softmax of the printed scores is the printed weights (to the printed digits).
    soft = np.exp(scores - scores.max())
    assert [shown[f"weight[{j}]"] for j in range(4)] == [f"{w:.3f}" for w in soft / soft.sum()]


def test_query_path_bars_are_proportional_to_the_weights():
    ax = query_path(Q, K, V, "sat", EX.tokens)
    _, weights = al.scaled_dot_product_attention(Q, K, V)
    widths = np.array([patches(ax)[f"bar[{j}]"].get_width() for j in range(4)])
    ratio = widths / weights[2]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)


def test_query_path_by_index_equals_by_token_and_returns_the_given_ax():
    fig, ax = plt.subplots(figsize=(7, 3))
    assert query_path(Q, K, V, 1, EX.tokens, ax=ax, title="") is ax
    by_token = query_path(Q, K, V, "cat", EX.tokens)
    assert by_gid(ax) == by_gid(by_token)


def test_query_path_digits_and_default_labels():
    ax = query_path(Q, K, V, 0, digits=4, vector_digits=1)
    _, weights = al.scaled_dot_product_attention(Q, K, V)
    assert by_gid(ax)["weight[3]"] == f"{weights[0, 3]:.4f}"
    assert by_gid(ax)["q[0,0]"] == f"{Q[0, 0]:.1f}"
    assert "query $q$\nof '0'" in all_texts(ax)


def test_query_path_cross_attention_by_index():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((2, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    ax = query_path(q, k, v, 1, ["a", "b", "c", "d", "e"])
    _, weights = al.scaled_dot_product_attention(q, k, v)
    assert [by_gid(ax)[f"weight[{j}]"] for j in range(5)] == [f"{w:.3f}" for w in weights[1]]


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "pattern"),
    [
        ((Q[0], K, V), {}, ValueError, r"^q has 1 dimension"),
        ((Q[None], K, V), {}, ValueError, r"^q has shape \(1, 4, 3\); expected a 2-D"),
        ((Q, K[:3], V), {}, ValueError, r"^k has shape \(3, 3\); expected \(4, 3\)"),
        ((Q, K, V, "dog", EX.tokens), {}, ValueError, r"query='dog'; expected one of the tokens"),
        ((Q, K, V, 7), {}, ValueError, r"query=7; expected one of .* from 0 to 3"),
        ((Q, K, V, -1), {}, ValueError, r"query=-1; expected"),
        ((Q[:2], K, V, "cat", EX.tokens), {}, ValueError, r"is a token, but q has 2 rows"),
        ((Q, K, V, 0, EX.tokens[:3]), {}, ValueError, r"^tokens has 3 labels; expected 4"),
        ((np.where(Q > 0.3, np.nan, Q), K, V), {}, ValueError, r"q"),
        ((np.zeros((2, 7)), np.zeros((3, 7)), np.zeros((3, 2))), {}, ValueError,
         r"d_k, d_v <= 6"),
        ((Q, K, V), {"digits": -1}, ValueError, r"^digits=-1"),
        ((Q, K, V), {"digits": 1.5}, TypeError, r"^digits=1.5"),
    ],
)
def test_query_path_bad_input_names_the_argument(args, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        query_path(*args, **kwargs)


# --------------------------------------------------------------------------------------
# 2. Splitting into heads and concatenating
# --------------------------------------------------------------------------------------


def entries(patch, e):
    """(rows, columns) of a drawn matrix, given the size of one entry."""
    return (round(patch.get_height() / e, 9), round(patch.get_width() / e, 9))


@pytest.mark.parametrize(("n", "d_model", "h"), [(4, 8, 2), (3, 12, 4), (5, 6, 1), (1, 4, 4)])
def test_head_split_flow_draws_numpy_shapes(n, d_model, h):
    ax = head_split_flow(n, d_model, h)
    draws(ax)
    drawn = patches(ax)
    e = drawn["X"].get_width() / d_model  # one entry
    x = np.zeros((n, d_model))
    heads = al.split_heads(x, h)  # (h, n, d_k)
    assert entries(drawn["X"], e) == x.shape
    assert entries(drawn["Q"], e) == x.shape
    assert entries(drawn["concat"], e) == al.merge_heads(heads).shape
    assert entries(drawn["output"], e) == x.shape
    for b in range(h):
        assert entries(drawn[f"Z_{b + 1}"], e) == heads[b].shape
        assert entries(drawn[f"Q:head{b + 1}"], e) == heads[b].shape
        assert entries(drawn[f"concat:head{b + 1}"], e) == heads[b].shape
    assert f"Z_{h + 1}" not in drawn
    text = all_texts(ax)
    d_k = heads.shape[-1]
    assert f"{n} × {d_model}" in text and f"{n} × {d_k}" in text
    assert f"{d_model} × {d_model}" in text  # W_O
    assert f"$d_k$ = {d_k}" in text


def test_head_split_flow_blocks_tile_the_columns_of_q():
    ax = head_split_flow(4, 8, 2)
    drawn = patches(ax)
    q = drawn["Q"]
    lefts = sorted(drawn[f"Q:head{b}"].get_x() for b in (1, 2))
    assert lefts[0] == pytest.approx(q.get_x())
    assert lefts[1] == pytest.approx(q.get_x() + q.get_width() / 2)


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        ((4, 8, 3), ValueError, r"^d_model=8 is not a multiple of num_heads=3"),
        ((4, 8, 0), ValueError, r"^num_heads=0"),
        ((4, 8, 8), ValueError, r"^num_heads=8; expected 1 <= num_heads <= 4"),
        ((0, 8, 2), ValueError, r"^n=0"),
        ((4, 32, 2), ValueError, r"^d_model=32; expected 1 <= d_model <= 16"),
        ((4.0, 8, 2), TypeError, r"^n=4.0"),
        ((4, 8, True), TypeError, r"^num_heads=True"),
    ],
)
def test_head_split_flow_bad_input(args, error, pattern):
    with pytest.raises(error, match=pattern):
        head_split_flow(*args)


# --------------------------------------------------------------------------------------
# 3. One step of generation with the cache
# --------------------------------------------------------------------------------------


def ratio(patch):
    return round(patch.get_width() / patch.get_height(), 9)


@pytest.mark.parametrize(("t", "d_k", "d_v"),
                         [(5, 4, 3), (1, 2, 2), (2, 8, 1), (12, 3, 5), (12, 16, 16), (4, 64, 8)])
def test_kv_cache_step_shapes_follow_the_cache(t, d_k, d_v):
    rng = np.random.default_rng(t)
    cache = al.KVCache()
    for _ in range(t - 1):
        cache.append(rng.standard_normal((1, d_k)), rng.standard_normal((1, d_v)))
    cached = len(cache)
    cache.append(rng.standard_normal((1, d_k)), rng.standard_normal((1, d_v)))
    out, weights = cache.attend(rng.standard_normal((1, d_k)))

    ax = kv_cache_step(t, d_k, d_v)
    draws(ax)
    drawn = patches(ax)
    row = drawn["K:new"].get_height()  # one row
    col = drawn["K:new"].get_width() / d_k  # one column of K, q and k_t
    assert drawn["V:new"].get_width() == pytest.approx(col * d_v)
    assert drawn["V:new"].get_height() == pytest.approx(row)
    for name, width in (("q", d_k), ("k_t", d_k), ("v_t", d_v), ("z", out.shape[-1])):
        assert drawn[name].get_width() == pytest.approx(col * width), name
        assert drawn[name].get_height() == pytest.approx(row), name
    if cached:
        assert drawn["K:cached"].get_height() == pytest.approx(row * cached)
        assert drawn["V:cached"].get_height() == pytest.approx(row * cached)
        assert drawn["K:cached"].get_width() == drawn["K:new"].get_width()
    else:
        assert "K:cached" not in drawn and "V:cached" not in drawn
    # scores and weights: one row of square cells, one per key 1..t
    assert ratio(drawn["weights"]) == weights.shape[-1] == cache.keys.shape[0] == t
    assert ratio(drawn["scores"]) == t
    text = all_texts(ax)
    assert f"$t \\times d_k$ = {t} × {d_k}" in text
    assert f"$t \\times d_v$ = {t} × {d_v}" in text
    assert f"1 × $t$ = 1 × {t}: keys 1..{t}" in text
    assert f"{t + 1}: not yet" in text


def test_kv_cache_step_d_v_defaults_to_d_k():
    drawn = patches(kv_cache_step(3, 4))
    assert drawn["V:new"].get_width() == drawn["K:new"].get_width()


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        ((0, 4), ValueError, r"^t=0"),
        ((13, 4), ValueError, r"^t=13; expected 1 <= t <= 12"),
        ((3, 65), ValueError, r"^d_k=65; expected 1 <= d_k <= 64"),
        ((3, 4, 0), ValueError, r"^d_v=0"),
        ((2.5, 4), TypeError, r"^t=2.5"),
    ],
)
def test_kv_cache_step_bad_input(args, error, pattern):
    with pytest.raises(error, match=pattern):
        kv_cache_step(*args)


# --------------------------------------------------------------------------------------
# All four
# --------------------------------------------------------------------------------------


DIAGRAMS = {
    "query_path": lambda ax: query_path(Q, K, V, "sat", EX.tokens, ax=ax),
    "head_split_flow": lambda ax: head_split_flow(4, 8, 2, ax=ax),
    "kv_cache_step": lambda ax: kv_cache_step(5, 4, 3, ax=ax),
    "causal_tiles": lambda ax: causal_tiles(np.zeros((11, 11)), 4, ax=ax),
}


@pytest.mark.parametrize("name", sorted(DIAGRAMS))
def test_diagrams_draw_on_a_given_ax(name):
    fig, ax = plt.subplots(figsize=(7, 4))
    assert DIAGRAMS[name](ax) is ax
    assert len(ax.texts) > 10 and len(ax.patches) > 3
    fig.canvas.draw()


@pytest.mark.parametrize("name", sorted(DIAGRAMS))
def test_diagrams_make_a_seven_inch_figure_with_nothing_cut_off(name):
    ax = DIAGRAMS[name](None)
    fig = ax.figure
    assert fig.get_size_inches()[0] == pytest.approx(7.0)
    assert min(t.get_fontsize() for t in ax.texts) >= 9
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    for t in ax.texts:  # every text lies inside the figure, so none is cut off
        bb = t.get_window_extent(renderer)
        assert bb.x0 >= 0 and bb.x1 <= width and bb.y0 >= 0 and bb.y1 <= height, t.get_text()
