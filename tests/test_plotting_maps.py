"""The maps of the whole model (``attention_lib.plotting.maps``, Agg backend).

Each map is checked against the model it claims to draw: the boxes in the order the
data flows through the configuration (its norm position, positions, attention-only
blocks), the sizes written in them taken from the configuration, every residual
addition fed from around its sublayer, every text inside its box, and the links an SVG
of the map keeps. The landing page's SVG (``_ext/model_map.py``) is checked here too.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.colors import to_hex
from repo_scripts import load_script

import attention_lib as al
from attention_lib import GPTConfig
from attention_lib.plotting import (
    MODEL_MAP_PARTS,
    block_map,
    block_maps,
    encoder_decoder_map,
    model_map,
    model_map_text,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def boxes(ax: Axes) -> dict[str, object]:
    """Every patch with a gid (boxes, additions, frames), by gid."""
    found = {}
    for p in ax.patches:
        if p.get_gid():
            assert p.get_gid() not in found, f"two patches have gid {p.get_gid()!r}"
            found[p.get_gid()] = p
    return found


def top(patch) -> float:
    return patch.get_window_extent().y1


def texts(ax: Axes) -> dict[str, str]:
    return {t.get_gid(): t.get_text() for t in ax.texts if t.get_gid()}


def flow(ax: Axes) -> list[str]:
    """The gids of the boxes of the main column (no frame, no side box), top to bottom."""
    found = boxes(ax)
    column = [g for g in found if g not in ("positions", "blocks")]
    return sorted(column, key=lambda g: -top(found[g]))


def test_the_generic_map_follows_a_pre_norm_gpt_from_ids_to_the_next_token():
    ax = model_map()
    assert flow(ax) == ["tokens", "embedding", "embed.add", "block.norm1", "block.attention1",
                        "block.add1", "block.norm2", "block.feed_forward2", "block.add2",
                        "final_norm", "logits", "softmax", "next_token"]
    found = boxes(ax)
    # The positions' box stands beside the token embedding, both above their sum.
    emb, pos = found["embedding"].get_window_extent(), found["positions"].get_window_extent()
    assert abs(emb.y0 - pos.y0) < 1e-6 and emb.x1 < pos.x0
    # The dashed frame holds the block's boxes and nothing else.
    frame = found["blocks"].get_window_extent()
    inside = {g for g, p in found.items() if g != "blocks"
              and frame.contains(*p.get_window_extent().get_points().mean(axis=0))}
    assert inside == {"block.norm1", "block.attention1", "block.add1", "block.norm2",
                      "block.feed_forward2", "block.add2"}
    t = texts(ax)
    assert t["blocks:label"] == "× L blocks"
    assert t["logits:shape"] == "n × V" and t["block.feed_forward2:shape"] == \
        "n × d → n × 4d → n × d"


def test_a_configuration_writes_its_own_sizes_and_choices():
    config = GPTConfig(vocab_size=65, context=32, d_model=48, n_layers=3, n_heads=6, d_ff=100,
                       n_kv_heads=2, norm="rms")
    t = texts(model_map(config))
    assert t["blocks:label"] == "× 3 blocks"
    assert t["block.attention1:shape"] == "6 heads of 8, 2 K/V: n × 48"
    assert t["block.feed_forward2:shape"] == "n × 48 → n × 100 → n × 48"
    assert t["logits:shape"] == "n × 65" and t["tokens:shape"] == "n integers, each one of 65"
    assert t["block.norm1:label"] == "RMSNorm" and t["final_norm:label"] == "final RMSNorm"
    assert t["title"] == "The model: 3 blocks, d = 48, 6 heads, 65 token ids"


def test_post_norm_puts_the_norm_after_each_addition():
    config = GPTConfig(10, 8, 8, 1, 2, norm_position="post")
    assert flow(model_map(config))[3:9] == ["block.attention1", "block.add1", "block.norm1",
                                             "block.feed_forward2", "block.add2",
                                             "block.norm2"]
    assert flow(block_map("post")) == ["block.attention1", "block.add1", "block.norm1",
                                       "block.feed_forward2", "block.add2", "block.norm2"]
    assert flow(block_map("pre")) == ["block.norm1", "block.attention1", "block.add1",
                                      "block.norm2", "block.feed_forward2", "block.add2"]


def test_rotary_no_positions_and_attention_only_models():
    rope = model_map(GPTConfig(10, 8, 8, 2, 2, positions="rope"))
    assert "positions" not in boxes(rope)
    assert "rotary positions" in texts(rope)["embedding:shape"]
    assert "no positions" in texts(model_map(GPTConfig(10, 8, 8, 2, 2,
                                                       positions="none")))["embedding:shape"]
    only = flow(model_map(GPTConfig(10, 8, 8, 2, 2, attention_only=True)))
    assert not [g for g in only if "feed_forward" in g or g == "block.norm2"]
    assert "block.add1" in only


def _skips(ax: Axes) -> list[tuple[float, float]]:
    """The (y, x) where each blue connection around a sublayer ends, in data inches."""
    blue = "#0072b2"
    ends = []
    for child in ax.texts:  # annotate() arrows are Annotation texts
        arrow = getattr(child, "arrow_patch", None)
        if arrow is not None and to_hex(arrow.get_edgecolor()) == blue:
            ends.append((child.xy[1], child.xy[0]))
    return ends


@pytest.mark.parametrize("draw", [lambda: model_map(), lambda: block_map("pre"),
                                  lambda: block_map("post", cross_attention=True)])
def test_every_addition_is_fed_by_a_connection_around_its_sublayer(draw):
    ax = draw()
    adds = {g: p for g, p in boxes(ax).items() if ".add" in g and g != "embed.add"}
    ends = _skips(ax)
    assert len(ends) == len(adds) >= 2
    for gid, circle in adds.items():
        cy, cx, r = circle.center[1], circle.center[0], circle.radius
        hits = [(y, x) for y, x in ends if abs(y - cy) < 1e-9 and abs(x - (cx - r)) < 1e-9]
        assert hits, f"{gid}: no connection ends at its left side"


@pytest.mark.parametrize("draw", [lambda: model_map(), lambda: model_map(
    al.book_language_model().config), lambda: block_map("pre"), lambda: block_map("post"),
    lambda: encoder_decoder_map(),
    lambda: block_maps({"norm_position": "pre"}, {"norm_position": "post", "ffn": "relu"},
                       title="Two blocks").axes[1]])
def test_every_text_stays_inside_its_box_and_the_figure(draw):
    ax = draw()
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = boxes(ax)
    page = fig.bbox
    for t in ax.texts:
        if not t.get_text():
            continue
        extent = t.get_window_extent(renderer)
        assert page.x0 - 1 <= extent.x0 and extent.x1 <= page.x1 + 1, \
            f"{t.get_text()!r} leaves the figure"
        assert page.y0 - 1 <= extent.y0 and extent.y1 <= page.y1 + 1, \
            f"{t.get_text()!r} leaves the figure"
        gid = (t.get_gid() or "").rsplit(":", 1)[0]
        if gid in found and gid not in ("blocks", "encoder.blocks", "decoder.blocks"):
            box = found[gid].get_window_extent(renderer)
            assert box.x0 < extent.x0 and extent.x1 < box.x1, \
                f"{t.get_text()!r} is wider than its box"
            assert box.y0 < extent.y0 and extent.y1 < box.y1, \
                f"{t.get_text()!r} sticks out of its box"


def test_the_encoder_decoder_feeds_the_memory_to_the_cross_attention():
    ax = encoder_decoder_map()
    found = boxes(ax)
    memory, cross = found["memory"], found["decoder.attention2"]
    assert texts(ax)["decoder.attention2:label"] == "cross-attention"
    line = next(ln for ln in ax.lines if ln.get_gid() == "memory->cross")
    xs, ys = line.get_data()
    # It leaves the memory's right side at its middle and rises to the cross-attention.
    assert xs[0] == pytest.approx(memory.get_x() + memory.get_width())
    assert ys[0] == pytest.approx(memory.get_y() + memory.get_height() / 2)
    assert ys[-1] == pytest.approx(cross.get_y() + cross.get_height() / 2)
    assert flow_of(ax, "decoder.") == ["decoder.embedding", "decoder.norm1",
                                       "decoder.attention1", "decoder.add1", "decoder.norm2",
                                       "decoder.attention2", "decoder.add2", "decoder.norm3",
                                       "decoder.feed_forward3", "decoder.add3",
                                       "decoder.logits"]
    assert [g for g in flow_of(ax, "encoder.") if "attention" in g] == ["encoder.attention1"]
    assert texts(ax)["encoder.attention1:label"] == "self-attention (no mask)"


def flow_of(ax: Axes, prefix: str) -> list[str]:
    found = {g: p for g, p in boxes(ax).items() if g.startswith(prefix) and "blocks" not in g}
    return sorted(found, key=lambda g: -top(found[g]))


def test_the_alt_text_says_what_is_drawn():
    text = model_map_text(al.book_language_model().config)
    config = al.book_language_model().config
    for size in (config.vocab_size, config.d_model, config.d_ff, config.n_layers):
        assert str(size) in text
    assert text.index("layer norm, causal") < text.index("residual addition")
    post = model_map_text(GPTConfig(10, 8, 8, 1, 2, norm_position="post"))
    assert "the addition, then layer norm" in post


def _svg(ax: Axes) -> str:
    out = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none"}):
        ax.figure.savefig(out, format="svg")
    return out.getvalue()


def test_links_survive_in_an_svg_and_bad_links_are_refused():
    links = {part: f"page-{part}.html" for part in MODEL_MAP_PARTS}
    svg = _svg(model_map(links=links))
    hrefs = re.findall(r'<a xlink:href="([^"]+)"', svg)
    assert set(hrefs) == set(links.values())
    # A box's label and shape are links too, not only its outline.
    assert hrefs.count("page-attention.html") >= 3
    with pytest.raises(ValueError, match="unknown parts \\['attn'\\]"):
        model_map(links={"attn": "x.html"})
    with pytest.raises(ValueError, match="links\\['tokens'\\]"):
        model_map(links={"tokens": ""})
    with pytest.raises(TypeError, match="config must be a GPTConfig"):
        model_map({"d_model": 8})
    with pytest.raises(ValueError, match="norm_position"):
        block_map("middle")


def _extension():
    return load_script("model_map", "_ext")


def test_the_landing_pages_svg_is_sized_by_the_page_and_titled_in_words():
    svg = _extension().svg({"attention": "chapters/06.html", "softmax": "chapters/01.html"})
    root = ET.fromstring(svg)
    assert root.get("width") is None and root.get("height") is None
    assert root.get("viewBox") and root.get("class") == "model-map"
    ns = {"svg": "http://www.w3.org/2000/svg"}
    title = root.find("svg:title", ns)
    assert title is not None and title.text == model_map_text()
    assert root.get("aria-labelledby") == title.get("id")
    # Text stays text (selectable, read aloud), and the links are there.
    labels = [t for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert any("".join(t.itertext()).strip() == "causal multi-head attention" for t in labels)
    links = {a.get("{http://www.w3.org/1999/xlink}href")
             for a in root.iter("{http://www.w3.org/2000/svg}a")}
    assert links == {"chapters/06.html", "chapters/01.html"}
    assert np.isfinite([float(v) for v in root.get("viewBox").split()]).all()


def test_blocks_side_by_side_keep_their_own_size():
    fig = block_maps({"norm_position": "pre"}, {"norm_position": "post", "ffn": "relu"})
    left, right = fig.axes
    assert tuple(fig.get_size_inches()) == pytest.approx((7.0, block_map("pre").figure
                                                          .get_size_inches()[1]))
    # An inch of the drawing is an inch of the figure in both (nothing shrinks).
    for ax in (left, right):
        x0, x1 = ax.get_xlim()
        assert ax.get_window_extent().width / fig.dpi == pytest.approx(x1 - x0, rel=1e-3)
    assert flow(right)[:3] == ["block.attention1", "block.add1", "block.norm1"]
    assert texts(right)["block.feed_forward2:label"] == "feed-forward network (ReLU)"
    with pytest.raises(ValueError, match="at least one"):
        block_maps()
    with pytest.raises(TypeError, match="block 0 must be a dict"):
        block_maps("pre")
    with pytest.raises(ValueError, match="ffn must be"):
        block_map("pre", ffn="tanh")
