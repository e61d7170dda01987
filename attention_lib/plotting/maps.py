"""The whole model as one picture: a decoder-only transformer, its block, an encoder-decoder.

``model_map`` draws a GPT from token ids to the next token, every box labelled with
the shape of what it outputs; ``block_map`` one block, pre-norm or post-norm;
``encoder_decoder_map`` the two stacks of the 2017 paper and where cross-attention
reads the encoder. Each box can carry a link (``links``), which an SVG of the
figure keeps: the landing page of the book is such an SVG, each box linked to the
chapter that builds it. ``model_map_text`` says in words what ``model_map`` draws
(the figure's alt text).

The boxes are drawn from the configuration (``GPTConfig``): its norm and its
position, its positions, its sizes, attention-only blocks, tied embeddings. With no
configuration the sizes are symbols: ``n`` tokens, width ``d``, ``V`` token ids,
``L`` blocks of ``h`` heads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyBboxPatch

from ..model.config import GPTConfig
from .diagrams import _arrow, _canvas
from .style import _MIN_PT, _OKABE, _TINT

__all__ = ["MODEL_MAP_PARTS", "block_map", "block_maps", "encoder_decoder_map", "model_map",
           "model_map_text"]

# The parts a box of model_map can be (the keys of ``links``), in the order they are drawn.
MODEL_MAP_PARTS = ("tokens", "embedding", "positions", "norm", "attention", "residual",
                   "feed_forward", "final_norm", "logits", "softmax", "next_token")

_WIDTH = 4.6  # inches: legible on a 390 px phone screen, where the map is shown whole
_BOX_H = 0.52
_GAP = 0.24
_FILL = {"tokens": _TINT["grey"], "embedding": _TINT["orange"], "positions": _TINT["orange"],
         "norm": _TINT["green"], "attention": _TINT["blue"], "feed_forward": _TINT["purple"],
         "final_norm": _TINT["green"], "logits": _TINT["vermillion"],
         "softmax": _TINT["vermillion"], "next_token": _TINT["grey"]}


@dataclass(frozen=True)
class _Sizes:
    """The sizes a map writes: numbers from a configuration, or symbols."""

    n: str = "n"
    d: str = "d"
    V: str = "V"
    L: str = "L"
    h: str = "h"
    d_ff: str = "4d"
    d_head: str = "d/h"
    kv: str = ""

    @classmethod
    def of(cls, config: GPTConfig | None) -> _Sizes:
        if config is None:
            return cls()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig or None, got {type(config).__name__}")
        kv = ""
        if config.kv_heads != config.n_heads:
            kv = f", {config.kv_heads} K/V"
        return cls(d=str(config.d_model), V=str(config.vocab_size), L=str(config.n_layers),
                   h=str(config.n_heads), d_ff=str(config.d_ff),
                   d_head=str(config.d_head), kv=kv)


def _links(links: Mapping[str, str] | None) -> dict[str, str]:
    if links is None:
        return {}
    if not isinstance(links, Mapping):
        raise TypeError(f"links must map parts to URLs, got {type(links).__name__}")
    unknown = sorted(set(links) - set(MODEL_MAP_PARTS))
    if unknown:
        raise ValueError(f"links has unknown parts {unknown}; the parts are "
                         f"{list(MODEL_MAP_PARTS)}")
    for part, url in links.items():
        if not isinstance(url, str) or not url:
            raise ValueError(f"links[{part!r}] must be a non-empty URL string, got {url!r}")
    return dict(links)


class _Column:
    """Boxes stacked top to bottom on one axis, with arrows and residual connections."""

    def __init__(self, ax: Axes, cx: float, width: float, top: float,
                 links: dict[str, str]) -> None:
        self.ax, self.cx, self.w, self.y, self.links = ax, cx, width, top, links

    def box(self, part: str, label: str, shape: str, *, gid: str, x: float | None = None,
            width: float | None = None, arrow: bool = True) -> tuple[float, float]:
        """A box under the current point; returns its (top, bottom) y."""
        ax = self.ax
        cx = self.cx if x is None else x
        w = self.w if width is None else width
        if arrow:
            _arrow(ax, (cx, self.y), (cx, self.y - _GAP))
            self.y -= _GAP
        top, bottom = self.y, self.y - _BOX_H
        patch = FancyBboxPatch((cx - w / 2, bottom), w, _BOX_H,
                               boxstyle="round,pad=0,rounding_size=0.06",
                               facecolor=_FILL.get(part, "white"), edgecolor="0.3",
                               linewidth=0.9, gid=gid)
        ax.add_patch(patch)
        texts = [ax.text(cx, top - 0.17, label, ha="center", va="center", fontsize=10,
                         gid=f"{gid}:label"),
                 ax.text(cx, bottom + 0.14, shape, ha="center", va="center",
                         fontsize=_MIN_PT, color="0.2", gid=f"{gid}:shape")]
        url = self.links.get(part)
        if url:
            patch.set_url(url)
            for t in texts:
                t.set_url(url)
        self.y = bottom
        return top, bottom

    def add(self, gid: str, arrow: bool = True) -> float:
        """The residual addition on the column (a circled plus); returns its centre y."""
        if arrow:
            _arrow(self.ax, (self.cx, self.y), (self.cx, self.y - _GAP + 0.02))
        r = 0.13
        yc = self.y - _GAP - r + 0.02
        circle = Circle((self.cx, yc), r, facecolor="white", edgecolor="0.2", linewidth=1.0,
                        gid=gid)
        self.ax.add_patch(circle)
        self.ax.plot([self.cx - 0.08, self.cx + 0.08], [yc, yc], color="0.2", linewidth=1.1)
        self.ax.plot([self.cx, self.cx], [yc - 0.08, yc + 0.08], color="0.2", linewidth=1.1)
        url = self.links.get("residual")
        if url:
            circle.set_url(url)
        self.y = yc - r
        return yc

    def skip(self, y_from: float, y_to: float) -> None:
        """A residual connection: from the column at ``y_from`` around the left of the
        boxes into the addition centred at ``y_to``."""
        x = self.cx - self.w / 2 - 0.22
        self.ax.plot([self.cx, x, x], [y_from, y_from, y_to], color=_OKABE["blue"],
                     linewidth=1.3)
        _arrow(self.ax, (x, y_to), (self.cx - 0.13, y_to), color=_OKABE["blue"], width=1.3)
        self.ax.plot([self.cx], [y_from], "o", color=_OKABE["blue"], markersize=3.5)


def _block(col: _Column, s: _Sizes, *, norm_position: str = "pre", norm: str = "layer",
           attention: str = "causal multi-head attention", attention_only: bool = False,
           cross: bool = False, ffn: str = "gelu", prefix: str = "block") -> None:
    """One block on ``col``: two (or three) sublayers, each with its residual connection."""
    if norm_position not in ("pre", "post"):
        raise ValueError(f"norm_position must be 'pre' or 'post', got {norm_position!r}")
    norm_name = "layer norm" if norm == "layer" else "RMSNorm"
    stream = f"{s.n} × {s.d}"
    heads = f"{s.h} heads of {s.d_head}{s.kv}: {stream}"
    sublayers = [("attention", attention, heads)]
    if cross:
        sublayers.append(("attention", "cross-attention",
                          f"{s.h} heads, K and V from M: {stream}"))
    if not attention_only:
        inner = {"gelu": "GELU", "relu": "ReLU", "swiglu": "SwiGLU"}[ffn]
        sublayers.append(("feed_forward", f"feed-forward network ({inner})",
                          f"{stream} → {s.n} × {s.d_ff} → {stream}"))
    for i, (part, label, shape) in enumerate(sublayers, 1):
        branch = col.y - _GAP / 2
        _arrow(col.ax, (col.cx, col.y), (col.cx, branch))
        col.y = branch
        if norm_position == "pre":
            col.box("norm", norm_name, stream, gid=f"{prefix}.norm{i}")
        col.box(part, label, shape, gid=f"{prefix}.{part}{i}")
        yc = col.add(f"{prefix}.add{i}")
        col.skip(branch, yc)
        if norm_position == "post":
            col.box("norm", norm_name, stream, gid=f"{prefix}.norm{i}")


def _frame(ax: Axes, col: _Column, top: float, bottom: float, text: str, gid: str) -> None:
    left = col.cx - col.w / 2 - 0.42
    right = col.cx + col.w / 2 + 0.12
    ax.add_patch(FancyBboxPatch((left, bottom), right - left, top - bottom,
                                boxstyle="round,pad=0,rounding_size=0.1", facecolor="none",
                                edgecolor="0.45", linewidth=1.0, linestyle="--", gid=gid))
    ax.text(right + 0.06, (top + bottom) / 2, text, ha="left", va="center", fontsize=10,
            rotation=90, gid=f"{gid}:label")


def _crop(ax: Axes, bottom: float, height: float, width: float) -> None:
    """Cut the drawing at ``bottom`` (inches); the figure shrinks when the axes fill it."""
    bottom = max(bottom - 0.12, 0.0)
    ax.set_ylim(bottom, height)
    fig = ax.figure
    if len(fig.axes) == 1 and tuple(ax.get_position(original=True).bounds) == (0.0, 0.0, 1.0, 1.0):
        fig.set_size_inches(width, height - bottom)


def _height_of(n_boxes: int, n_adds: int, n_gaps: int, extra: float) -> float:
    return n_boxes * (_BOX_H + _GAP) + n_adds * (_GAP + 0.26) + n_gaps * _GAP / 2 + extra


def model_map(config: GPTConfig | None = None, *, links: Mapping[str, str] | None = None,
              ax: Axes | None = None, title: str | None = None) -> Axes:
    r"""Draw a decoder-only transformer (a GPT) whole, from token ids to the next token.

    Top to bottom: token ids; the token embedding (plus a learned position
    embedding); ``L`` blocks, each a norm, causal multi-head attention and a residual
    addition, then a norm, the feed-forward network and an addition; the final norm;
    the logits; the softmax; the next token. Each box says what it outputs, with its
    shape.

    Parameters
    ----------
    config : GPTConfig, optional
        The model to draw, with its own sizes and choices (norm and its position,
        positions, attention-only blocks, grouped K/V heads). Without it the sizes are
        symbols: ``n`` tokens of width ``d``, ``V`` token ids, ``L`` blocks of ``h`` heads.
    links : mapping of str to str, optional
        A URL for each part (keys from ``MODEL_MAP_PARTS``: ``"tokens"``,
        ``"embedding"``, ``"attention"``, ...). An SVG of the figure makes each of
        those boxes a link.
    ax : matplotlib Axes, optional
        Where to draw; a new figure 4.6 inches wide is made when omitted.
    title : str, optional
        Defaults to a sentence naming the model; ``""`` draws none.

    Returns
    -------
    matplotlib.axes.Axes
        The boxes are patches with gids ``"tokens"``, ``"embedding"``,
        ``"positions"`` and their sum ``"embed.add"`` (learned positions only),
        ``"block.norm1"``,
        ``"block.attention1"``, ``"block.add1"``, ``"block.norm2"``,
        ``"block.feed_forward2"``, ``"block.add2"``, ``"blocks"`` (the frame of the
        repeated block), ``"final_norm"``, ``"logits"``, ``"softmax"``,
        ``"next_token"``; each box's texts have gids ``"<gid>:label"`` and
        ``"<gid>:shape"``.

    Notes
    -----
    For ids :math:`t_1, \dots, t_n`, a pre-norm GPT computes

    .. math::

        x_0 = W_E[t] + W_P[1{:}n], \qquad
        x \leftarrow x + \operatorname{MHA}(N_1(x)), \quad
        x \leftarrow x + \operatorname{FFN}(N_2(x)) \ (L \text{ times}), \qquad
        p = \operatorname{softmax}(N_f(x)\, W_E^{\mathsf T}) .

    Examples
    --------
    >>> ax = model_map()
    >>> [p.get_gid() for p in ax.patches][:5]
    ['tokens', 'embedding', 'positions', 'embed.add', 'block.norm1']
    >>> ax = model_map(GPTConfig(65, 128, 64, 2, 4), links={"attention": "ch6.html"})
    >>> [t.get_text() for t in ax.texts if t.get_gid() == "block.attention1:shape"]
    ['4 heads of 16: n × 64']
    >>> plt.close("all")
    """
    s = _Sizes.of(config)
    urls = _links(links)
    cfg = config if config is not None else GPTConfig(2, 2, 2, 1, 1)
    learned = cfg.positions == "learned"
    n_sub = 1 + (not cfg.attention_only)
    boxes = 6 + n_sub * 2
    head = 0.55 if title != "" else 0.15
    height = head + _height_of(boxes, n_sub + learned, n_sub, 0.75)
    ax = _canvas(ax, _WIDTH, height)
    col = _Column(ax, _WIDTH / 2 - 0.05, 3.3, height - head, urls)
    col.box("tokens", "token ids", f"{s.n} integers, each one of {s.V}", gid="tokens",
            arrow=False)
    norm_name = "layer norm" if cfg.norm == "layer" else "RMSNorm"
    if learned:
        # Two boxes side by side, each fed from above, their outputs summed.
        half = (col.w - 0.16) / 2
        y0 = col.y
        xs = (col.cx - half / 2 - 0.08, col.cx + half / 2 + 0.08)
        for part, label, x in (("embedding", "token embedding", xs[0]),
                               ("positions", "position embedding", xs[1])):
            col.y = y0 - _GAP
            _arrow(ax, (x, y0), (x, col.y))
            col.box(part, label, f"{s.n} × {s.d}", gid=part, x=x, width=half, arrow=False)
        yc = col.add("embed.add", arrow=False)
        for x in xs:
            _arrow(ax, (x, yc + 0.13 + _GAP - 0.02), (col.cx + (x - col.cx) * 0.12, yc + 0.14))
    else:
        which = "rotary positions in every layer" if cfg.positions == "rope" else "no positions"
        col.box("embedding", "token embedding", f"{s.n} × {s.d} ({which})", gid="embedding")
    top = col.y - 0.06
    attention = "causal multi-head attention"
    if cfg.window is not None:
        attention = f"causal attention, window {cfg.window}"
    _block(col, s, norm_position=cfg.norm_position, norm=cfg.norm, attention=attention,
           attention_only=cfg.attention_only, ffn=cfg.ffn)
    bottom = col.y - 0.08
    _frame(ax, col, top, bottom, f"× {s.L} blocks", "blocks")
    col.y = bottom
    col.box("final_norm", f"final {norm_name}", f"{s.n} × {s.d}", gid="final_norm")
    readout = "times the embedding, transposed" if cfg.tie_embeddings else "read-out matrix"
    col.box("logits", f"logits ({readout})", f"{s.n} × {s.V}", gid="logits")
    col.box("softmax", "softmax over the last axis", f"{s.n} × {s.V}, each row sums to 1",
            gid="softmax")
    col.box("next_token", "next token", "drawn from the last row", gid="next_token")
    _crop(ax, col.y, height, _WIDTH)
    if title is None:
        title = ("A GPT, from token ids to the next token" if config is None else
                 f"The model: {s.L} blocks, d = {s.d}, {s.h} heads, {s.V} token ids")
    if title:
        ax.text(0.1, height - 0.1, title, ha="left", va="top", fontsize=11, gid="title")
    return ax


def model_map_text(config: GPTConfig | None = None) -> str:
    """Say in words what ``model_map(config)`` draws (its alt text).

    Examples
    --------
    >>> model_map_text().split(":")[0]
    'A decoder-only transformer drawn top to bottom'
    """
    s = _Sizes.of(config)
    cfg = config if config is not None else GPTConfig(2, 2, 2, 1, 1)
    norm_name = "layer norm" if cfg.norm == "layer" else "RMSNorm"
    embed = ("the token embedding and the position embedding, each "
             f"{s.n} × {s.d}, added" if cfg.positions == "learned" else
             f"the token embedding, {s.n} × {s.d}")
    if cfg.norm_position == "pre":
        sub = (f"{norm_name}, causal multi-head attention with {s.h} heads, then the "
               "residual addition")
        if not cfg.attention_only:
            sub += (f"; {norm_name}, the feed-forward network ({s.d} to {s.d_ff} to {s.d}), "
                    "then the residual addition")
    else:
        sub = f"causal multi-head attention with {s.h} heads, the addition, then {norm_name}"
        if not cfg.attention_only:
            sub += f"; the feed-forward network, the addition, then {norm_name}"
    return (f"A decoder-only transformer drawn top to bottom: {s.n} token ids, each one of "
            f"{s.V}; {embed}; a block repeated {s.L} times: {sub}, each addition fed by "
            f"a connection around its sublayer; the final {norm_name}; the logits, "
            f"{s.n} × {s.V}; the softmax, each row summing to 1; the next token, drawn "
            "from the last row.")


def block_map(norm_position: str = "pre", *, cross_attention: bool = False,
              ffn: str = "gelu", ax: Axes | None = None, title: str | None = None) -> Axes:
    """Draw one transformer block, its norms before (pre) or after (post) each addition.

    Parameters
    ----------
    norm_position : {"pre", "post"}, default "pre"
        Pre-norm (GPT-2 and since): each sublayer reads a normalised copy of the
        stream, which itself is only added to. Post-norm (the 2017 paper): the stream is
        normalised after each addition.
    cross_attention : bool, default False
        A decoder block of an encoder-decoder model: cross-attention between the two
        sublayers.
    ffn : {"gelu", "relu", "swiglu"}, default "gelu"
        The feed-forward network's nonlinearity, as its box names it (the 2017 paper:
        ReLU; GPT-2: GELU).
    ax : matplotlib Axes, optional
        Where to draw; a new figure 3.5 inches wide is made when omitted (``block_maps``
        draws several side by side at that size).
    title : str, optional
        Defaults to "pre-norm block" or "post-norm block"; ``""`` draws none.

    Returns
    -------
    matplotlib.axes.Axes
        Boxes with gids ``"block.norm<i>"``, ``"block.attention<i>"``,
        ``"block.feed_forward<i>"`` and additions ``"block.add<i>"``, ``i`` counting
        the sublayers from 1.

    Examples
    --------
    >>> ax = block_map("post")
    >>> [p.get_gid() for p in ax.patches if p.get_gid()][:3]
    ['block.attention1', 'block.add1', 'block.norm1']
    >>> plt.close("all")
    """
    n_sub = 2 + bool(cross_attention)
    head = 0.5 if title != "" else 0.15
    height = head + _height_of(2 * n_sub, n_sub, n_sub, 0.55)
    ax = _canvas(ax, 3.5, height)
    col = _Column(ax, 1.95, 2.7, height - head - 0.1, {})
    ax.text(col.cx + 0.1, col.y + 0.02, "stream in, n × d", ha="left", va="bottom",
            fontsize=_MIN_PT, color="0.2")
    if ffn not in ("gelu", "relu", "swiglu"):
        raise ValueError(f"ffn must be 'gelu', 'relu' or 'swiglu', got {ffn!r}")
    _block(col, _Sizes(), norm_position=norm_position, cross=cross_attention, ffn=ffn,
           attention="masked multi-head attention" if cross_attention else
           "multi-head attention")
    _arrow(ax, (col.cx, col.y), (col.cx, col.y - 0.25))
    ax.text(col.cx + 0.1, col.y - 0.27, "stream out, n × d", ha="left", va="top",
            fontsize=_MIN_PT, color="0.2")
    _crop(ax, col.y - 0.5, height, 3.5)
    if title is None:
        title = f"{norm_position}-norm block"
    if title:
        ax.text(0.1, height - 0.1, title, ha="left", va="top", fontsize=11)
    return ax


def block_maps(*blocks: dict, title: str | None = None) -> Figure:
    """Draw blocks side by side, each ``block_map(**kwargs)`` at its own size (3.5 inches).

    Parameters
    ----------
    *blocks : dict
        The keyword arguments of each ``block_map`` (``norm_position``, ``ffn``,
        ``cross_attention``, ``title``), left to right.
    title : str, optional
        A title over all of them.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per block, each 3.5 inches wide (axes of a grid of subplots would be
        narrower than the drawing, which would shrink it under its text).

    Examples
    --------
    >>> fig = block_maps({"norm_position": "pre"}, {"norm_position": "post", "ffn": "relu"})
    >>> len(fig.axes), float(fig.get_size_inches()[0])
    (2, 7.0)
    >>> plt.close(fig)
    """
    if not blocks:
        raise ValueError("block_maps needs at least one block's keyword arguments")
    for i, kwargs in enumerate(blocks):
        if not isinstance(kwargs, dict) or "ax" in kwargs:
            raise TypeError(f"block {i} must be a dict of block_map's keyword arguments "
                            f"(without ax), got {kwargs!r}")
    drawn = [block_map(**kwargs) for kwargs in blocks]
    heights = [a.figure.get_size_inches()[1] for a in drawn]
    for a in drawn:
        plt.close(a.figure)
    top = 0.35 if title else 0.0
    height = max(heights) + top
    fig = plt.figure(figsize=(3.5 * len(blocks), height))
    for i, (kwargs, h) in enumerate(zip(blocks, heights, strict=True)):
        ax = fig.add_axes((i / len(blocks), (height - top - h) / height, 1 / len(blocks),
                           h / height))
        block_map(**kwargs, ax=ax)
    if title:
        fig.text(0.02, 1 - 0.1 / height, title, ha="left", va="top", fontsize=11)
    return fig


def encoder_decoder_map(*, ax: Axes | None = None, title: str | None = None) -> Axes:
    """Draw the encoder-decoder of the 2017 paper: where cross-attention reads the encoder.

    The blocks are drawn pre-norm. Left, the encoder: source embedding and positions,
    then blocks of unmasked self-attention and feed-forward network, ending in a final
    norm whose output is the memory (``n_src × d``).
    Right, the decoder: target embedding and positions, then blocks of masked
    self-attention, cross-attention and feed-forward network, then the logits. An
    arrow takes the memory into every decoder block's cross-attention as its keys
    and values; the queries come from the decoder.

    Parameters
    ----------
    ax : matplotlib Axes, optional
        Where to draw; a new figure 7 inches wide is made when omitted.
    title : str, optional
        A default sentence; ``""`` draws none.

    Returns
    -------
    matplotlib.axes.Axes
        Gids ``"encoder.*"`` and ``"decoder.*"`` (as ``block_map``'s), ``"memory"`` and
        the arrow ``"memory->cross"`` (a line), and ``"decoder.logits"``.

    Examples
    --------
    >>> ax = encoder_decoder_map()
    >>> "memory" in [p.get_gid() for p in ax.patches]
    True
    >>> plt.close("all")
    """
    head = 0.5 if title != "" else 0.15
    height = head + _height_of(9, 4, 3, 1.2)
    ax = _canvas(ax, 7.0, height)
    top = height - head
    enc = _Column(ax, 1.72, 2.4, top, {})
    dec = _Column(ax, 5.3, 2.4, top, {})
    enc.box("embedding", "source embedding + positions", "n_src × d", gid="encoder.embedding",
            arrow=False)
    dec.box("embedding", "target embedding + positions", "n_tgt × d",
            gid="decoder.embedding", arrow=False)
    e_top, d_top = enc.y - 0.06, dec.y - 0.06
    _block(enc, _Sizes(n="n_src"), attention="self-attention (no mask)", prefix="encoder")
    _frame(ax, enc, e_top, enc.y - 0.08, "× L", "encoder.blocks")
    enc.y -= 0.08
    enc.box("final_norm", "final layer norm: memory M", "n_src × d", gid="memory")
    # Stop the decoder's column at its cross-attention box to draw the memory's arrow there.
    _block(dec, _Sizes(n="n_tgt"), attention="masked self-attention", cross=True,
           prefix="decoder")
    _frame(ax, dec, d_top, dec.y - 0.08, "× L", "decoder.blocks")
    dec.y -= 0.08
    dec.box("logits", "final norm, logits", "n_tgt × V", gid="decoder.logits")
    cross = next(p for p in ax.patches if p.get_gid() == "decoder.attention2")
    cy = cross.get_y() + _BOX_H / 2
    mem_x = enc.cx + enc.w / 2
    mem_y = enc.y + _BOX_H / 2
    x_mid = dec.cx - dec.w / 2 - 0.62  # between the encoder's frame and the decoder's skips
    line, = ax.plot([mem_x, x_mid, x_mid], [mem_y, mem_y, cy], color=_OKABE["vermillion"],
                    linewidth=1.6, gid="memory->cross")
    _arrow(ax, (x_mid, cy), (dec.cx - dec.w / 2, cy), color=_OKABE["vermillion"], width=1.6)
    ax.text(x_mid + 0.05, (mem_y + cy) / 2, "K, V from M", ha="left",
            va="center", rotation=90, fontsize=_MIN_PT, color="0.15")
    _crop(ax, min(enc.y, dec.y), height, 7.0)
    if title is None:
        title = "Encoder-decoder (pre-norm): cross-attention reads the encoder's output"
    if title:
        ax.text(0.1, height - 0.1, title, ha="left", va="top", fontsize=11)
    return ax
