"""Sliders that work on the static website, without a kernel.

An ipywidgets explorer needs Python behind it. For the softmax, a few lines of
JavaScript can redo the computation in the reader's browser, so the website can
keep a live slider: :func:`softmax_slider` returns a self-contained HTML element
(no external script, no CDN) that recomputes ``softmax(scale * scores)`` as the
slider moves and shows the weights to three decimals, their entropy and the
largest entry of the softmax Jacobian. Before its script runs (an untrusted
notebook strips scripts) the element shows the values at the starting scale,
computed here, and a note saying how to make the slider move.

The browser tests move the slider and compare the displayed weights with
:func:`attention_lib.softmax` of the same scaled scores.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Sequence
from importlib import resources

import numpy as np
from numpy.typing import ArrayLike

from ._validation import as_real_array
from .softmax import softmax

__all__ = ["StaticSlider", "softmax_slider"]

# On a control, tells JupyterLab not to take its arrow keys as notebook shortcuts.
SUPPRESS_SHORTCUTS = 'data-lm-suppress-shortcuts="true"'

# Shown until the script runs (the script removes it).
STATIC_NOTE = (
    "The values above are for scale = {value:.2f}. This slider moves when its script runs: "
    "on the website it does; in JupyterLab, run this cell (or File > Trust Notebook)."
)

def _asset(name: str) -> str:
    """The text of a browser-side asset shipped in ``attention_lib/assets``."""
    return resources.files("attention_lib").joinpath("assets", name).read_text(encoding="utf-8")


class StaticSlider:
    """An HTML element with its own script; displays as ``text/html``.

    Parameters
    ----------
    markup : str
        The complete, self-contained HTML.
    alt : str
        A plain-text description, shown where HTML is not rendered.
    """

    def __init__(self, markup: str, alt: str) -> None:
        self.markup = markup
        self.alt = alt

    def _repr_html_(self) -> str:
        return self.markup

    def __repr__(self) -> str:
        return f"<StaticSlider: {self.alt}>"


def softmax_slider(
    scores: ArrayLike,
    labels: Sequence[str],
    *,
    scale_min: float = 0.0,
    scale_max: float = 30.0,
    step: float = 0.5,
    value: float = 1.0,
    title: str = "softmax(scale × scores)",
) -> StaticSlider:
    """A browser-side slider over ``scale`` showing ``softmax(scale * scores)``.

    Parameters
    ----------
    scores : array_like, shape (n,)
        Finite scores (one row of logits).
    labels : sequence of str, length n
        A label for each score.
    scale_min, scale_max, step, value : float
        Range, step and starting position of the slider.
    title : str
        A caption above the slider.

    Returns
    -------
    StaticSlider
        Displays as a self-contained HTML element (inline style and script).

    Notes
    -----
    The script computes, in the reader's browser (double precision),

    .. math:: p = \\operatorname{softmax}(c\\,s), \\qquad H(p) = -\\sum_i p_i \\log p_i,
              \\qquad \\max_{ij} |(\\operatorname{diag}(p) - p p^{\\mathsf T})_{ij}|
              = \\max_i p_i (1 - p_i),

    with the maximum subtracted before ``exp`` as in :func:`attention_lib.softmax`.

    Examples
    --------
    >>> s = softmax_slider([0.5, 0.3], ["a", "b"])
    >>> "<script>" in s._repr_html_() and 'type="range"' in s._repr_html_()
    True
    """
    s = as_real_array(scores, "scores", min_ndim=1)
    if s.ndim != 1:
        raise ValueError(f"scores has shape {s.shape}; expected one row, shape (n,)")
    labels = [str(x) for x in labels]
    if len(labels) != s.shape[0]:
        raise ValueError(f"labels has {len(labels)} entries; expected {s.shape[0]}, one per score")
    if not scale_min <= value <= scale_max or step <= 0:
        raise ValueError(
            f"slider range [{scale_min}, {scale_max}] with step {step} and value {value}: "
            "expected scale_min <= value <= scale_max and step > 0"
        )
    data = json.dumps([float(x) for x in np.asarray(s, dtype=np.float64)])
    uid = "ss-" + hashlib.sha1(f"{data}{labels}{scale_min}{scale_max}{step}{value}".encode()
                               ).hexdigest()[:10]
    # The element shows the values at the starting scale before any script runs:
    # an untrusted notebook (JupyterLab strips scripts from it) and a page without
    # JavaScript still show numbers, with a note saying why the slider is still.
    p0 = softmax(value * np.asarray(s, dtype=np.float64))
    nonzero = p0[p0 > 0]
    entropy0 = float(-np.sum(nonzero * np.log(nonzero)))
    grad0 = float(np.max(p0 * (1.0 - p0)))
    rows = "\n".join(
        f'<tr><td>{html.escape(label)}</td>'
        f'<td class="ss-bar-cell"><div class="ss-bar" style="width: {100 * p:.1f}%"></div></td>'
        f'<td class="ss-weight" data-index="{i}">{p:.3f}</td></tr>'
        for i, (label, p) in enumerate(zip(labels, p0, strict=True))
    )
    markup = f"""<div class="ss-root softmax-slider" id="{uid}" data-scores='{data}'>
<style>{_asset("softmax_slider.css")}</style>
<p><strong>{html.escape(title)}</strong></p>
<label>scale <input {SUPPRESS_SHORTCUTS} type="range" min="{scale_min}" max="{scale_max}"
 step="{step}" value="{value}" aria-label="scale"></label> <span class="ss-scale">{value:.2f}</span>
<table>{rows}</table>
<p>entropy <span class="ss-entropy">{entropy0:.3f}</span> nats &nbsp;·&nbsp; largest gradient entry
max p(1 − p) = <span class="ss-grad">{grad0:.4f}</span></p>
<p class="ss-static-note"><em>{STATIC_NOTE.format(value=value)}</em></p>
<script>{_asset("softmax_slider.js").replace("__ROOT_ID__", json.dumps(uid))}</script>
</div>"""
    alt = (f"slider over the scale from {scale_min} to {scale_max} showing "
           f"softmax(scale × scores) for {', '.join(labels)}")
    return StaticSlider(markup, alt)
