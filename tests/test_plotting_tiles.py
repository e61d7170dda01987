"""The tiles of a causal online softmax (``attention_lib.plotting.tiles``), Agg backend.

The tile counts are checked against their closed forms, each drawn tile against
a rule on the positions it covers, and the running max and sum against a direct
formula.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.axes import Axes

from attention_lib.plotting import causal_tiles


def by_gid(ax: Axes) -> dict[str, str]:
    """The text of every ``Text`` artist that has a gid."""
    found = {}
    for t in ax.texts:
        if t.get_gid():
            assert t.get_gid() not in found, f"two texts have gid {t.get_gid()!r}"
            found[t.get_gid()] = t.get_text()
    return found


def all_texts(ax: Axes) -> str:
    return "\n".join(t.get_text() for t in ax.texts)


def draws(ax: Axes) -> None:
    """The figure renders without error (catches bad mathtext)."""
    ax.figure.canvas.draw()


def tile_counts(ax):
    kinds = [p.get_gid().split(":")[1] for p in ax.patches
             if str(p.get_gid()).startswith("tile:")]
    return {k: kinds.count(k) for k in ("full", "diagonal", "skipped")}


@pytest.mark.parametrize(("n", "b"), [(8, 4), (12, 4), (12, 3), (11, 4), (24, 6), (5, 5), (4, 1)])
def test_causal_tiles_counts_have_the_closed_form(n, b):
    t = -(-n // b)  # blocks per side, the last one possibly narrower
    # Query block 0 visits 1 key block, so any n and b draw.
    ax = causal_tiles(np.zeros((n, n)), b, query_block=0)
    draws(ax)
    counts = tile_counts(ax)
    assert counts["full"] + counts["diagonal"] == t * (t + 1) // 2  # computed
    # A diagonal tile needs the mask unless it is a single (visible) score.
    diagonal = t if b > 1 else 0
    assert counts["diagonal"] == diagonal
    assert counts["skipped"] == t * (t - 1) // 2
    assert sum(counts.values()) == t * t
    assert (f"{counts['full']} full, {diagonal} diagonal, {t * (t - 1) // 2} skipped"
            in all_texts(ax))


@pytest.mark.parametrize(("n", "b_q", "b_k"), [(11, 2, 4), (12, 4, 3), (9, 3, 2), (7, 7, 2)])
def test_causal_tiles_rectangular_counts_follow_the_positions(n, b_q, b_k):
    expected = {"full": 0, "diagonal": 0, "skipped": 0}
    for i0 in range(0, n, b_q):
        i1 = min(n, i0 + b_q) - 1  # last query of the block
        for j0 in range(0, n, b_k):
            j1 = min(n, j0 + b_k) - 1  # last key of the block
            kind = "full" if j1 <= i0 else "skipped" if j0 > i1 else "diagonal"
            expected[kind] += 1
    assert tile_counts(causal_tiles(np.zeros((n, n)), (b_q, b_k), query_block=0)) == expected


@pytest.mark.parametrize(
    ("n", "b_q", "b_k", "block"),
    [(11, 4, 4, -1), (11, 4, 4, 1), (12, 3, 3, 3), (8, 8, 8, 0), (9, 3, 2, 1), (10, 4, 3, 2)],
)
def test_causal_tiles_running_max_and_sum_are_printed(n, b_q, b_k, block):
    rng = np.random.default_rng(n + b_q + b_k)
    scores = rng.standard_normal((n, n)) * 2.0
    ax = causal_tiles(scores, (b_q, b_k), query_block=block)
    draws(ax)
    shown = by_gid(ax)
    blk = block % (-(-n // b_q))
    rows = range(blk * b_q, min(n, (blk + 1) * b_q))
    visits = -(-(rows[-1] + 1) // b_k)  # key blocks holding a key the last row may see
    assert [shown[f"visit[{s}]"] for s in range(visits)] == [str(s + 1) for s in range(visits)]
    assert f"visit[{visits}]" not in shown
    for r, i in enumerate(rows):
        for s in range(visits):
            seen = scores[i, :min(i + 1, (s + 1) * b_k)]  # the keys visited so far, causal
            m = seen.max()
            assert shown[f"m[{r},{s}]"] == f"{m:.2f}"
            assert shown[f"l[{r},{s}]"] == f"{np.exp(seen - m).sum():.2f}"


def test_causal_tiles_bold_marks_a_rising_maximum():
    scores = np.zeros((4, 4))
    scores[3] = [0.0, 0.0, 5.0, 1.0]  # row 3 meets 5 in the second key block of 2
    ax = causal_tiles(scores, 2, query_block=1, digits=1)
    bold = {t.get_gid(): t.get_fontweight() for t in ax.texts if t.get_gid()}
    assert bold["m[1,1]"] == "bold" and bold["m[1,0]"] == "normal"
    assert bold["m[0,1]"] == "normal"  # row 2: max 0 in both blocks
    assert by_gid(ax)["m[1,1]"] == "5.0"
    assert by_gid(ax)["l[1,1]"] == f"{2 * math.exp(-5) + 1:.1f}"


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "pattern"),
    [
        ((np.zeros((3, 4)), 2), {}, ValueError, r"^scores has shape \(3, 4\); expected a square"),
        ((np.zeros(4), 2), {}, ValueError, r"scores"),
        ((np.full((4, 4), np.nan), 2), {}, ValueError, r"scores"),
        ((np.zeros((25, 25)), 5), {}, ValueError, r"n=25; expected n <= 24"),
        ((np.zeros((4, 4)), 0), {}, ValueError, r"^block_size=0"),
        ((np.zeros((4, 4)), (2, 2, 2)), {}, ValueError, r"^block_size=\(2, 2, 2\)"),
        ((np.zeros((4, 4)), 2.0), {}, TypeError, r"^block_size=2.0"),
        ((np.zeros((4, 4)), 2), {"query_block": 2}, ValueError, r"out of range for 2"),
        ((np.zeros((4, 4)), 2), {"query_block": 1.0}, TypeError, r"^query_block=1.0"),
        ((np.zeros((10, 10)), 2), {"query_block": 4}, ValueError, r"visits 5 key blocks"),
    ],
)
def test_causal_tiles_bad_input(args, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        causal_tiles(*args, **kwargs)



@pytest.mark.parametrize(("n", "b_q", "b_k"), [(11, 4, 4), (10, 4, 3), (9, 2, 5), (6, 2, 1)])
def test_causal_tiles_each_tile_is_drawn_where_its_positions_are(n, b_q, b_k):
    ax = causal_tiles(np.zeros((n, n)), (b_q, b_k), query_block=0, title="")
    tiles = [p for p in ax.patches if str(p.get_gid()).startswith("tile:")]
    grid = [p for p in ax.images]  # one pixel per score: the extent of the grid
    assert len(grid) == 1 and grid[0].get_array().shape[:2] == (n, n)
    left, right, bottom, top = grid[0].get_extent()
    c = (right - left) / n  # one score
    assert (top - bottom) / n == pytest.approx(c)
    covered = np.zeros((n, n), dtype=int)
    for p in tiles:
        j0 = round((p.get_x() - left) / c)
        i0 = round((top - p.get_y() - p.get_height()) / c)
        j1, i1 = j0 + round(p.get_width() / c), i0 + round(p.get_height() / c)
        covered[i0:i1, j0:j1] += 1
        assert i0 % b_q == 0 and j0 % b_k == 0  # tiles start on block boundaries
        assert i1 - i0 == min(b_q, n - i0) and j1 - j0 == min(b_k, n - j0)
        # query i may see key j <= i: all of the tile, some of it, or none
        seen = [j <= i for i in range(i0, i1) for j in range(j0, j1)]
        expected = "full" if all(seen) else "diagonal" if any(seen) else "skipped"
        assert p.get_gid() == f"tile:{expected}", (i0, j0)
    assert (covered == 1).all()  # the tiles cover every score once
