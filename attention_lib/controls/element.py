"""The element every browser-side control is: :class:`ControlElement`, and its shared parts.

A control is one self-contained HTML element (inline style and script, nothing loaded from
elsewhere). Its root carries the library's numbers as JSON (``data-*`` attributes) and the
markup of its repeated pieces, a table row with a bar, a heatmap cell, an error message, as
templates (``data-templates``): strings with ``{name}`` slots. Python fills them for the
values shown before the script runs (:func:`fill`), and the script fills the very same
strings (``fill`` in ``assets/common.js``) whenever a control moves, so each piece of markup
is written once. The JavaScript and CSS are files in ``attention_lib/controls/assets``, read
with :mod:`importlib.resources`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._validation import position_labels

__all__ = ["ControlElement"]

#: On a control, tells JupyterLab not to take its arrow keys as notebook shortcuts.
SUPPRESS_SHORTCUTS = 'data-lm-suppress-shortcuts="true"'

#: Shown until the script runs (the script removes it).
STATIC_NOTE = (
    "The values above are for {state}. These controls work when their script runs: on the "
    "website they do; in JupyterLab, run this cell (or File > Trust Notebook)."
)

# Heatmap cells: Blues from #f7fbff (weight 0) to #08306b (weight 1), mixed by CSS
# (color-mix in sRGB, as a linear interpolation of the two colours).
_HEAT_LO, _HEAT_HI = (247, 251, 255), (8, 48, 107)


def _luminance(rgb: Sequence[float]) -> float:
    lin = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4
           for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _dark_from() -> float:
    """The smallest weight whose cell contrasts more with white text than with black."""
    lo, hi = 0.0, 1.0
    for _ in range(60):  # bisection: the luminance falls as the weight grows
        w = (lo + hi) / 2
        lum = _luminance([a + (b - a) * w for a, b in zip(_HEAT_LO, _HEAT_HI, strict=True)])
        lo, hi = (w, hi) if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else (lo, w)
    return hi


#: Heatmap cells with at least this weight get white text (class ``lc-dark``).
HEAT_DARK_FROM = _dark_from()

#: The markup of every repeated piece, once. ``{name}`` slots hold text that is already
#: escaped for HTML (the callers escape labels); see :func:`fill`.
TEMPLATES: dict[str, str] = {
    # a row of a weights table: label, an optional score cell, a bar and the weight
    "bar_row": ('<tr class="{cls}"><th scope="row">{label}</th>{score}<td class="lc-bar-cell">'
                '<div class="lc-track"><div class="lc-bar" style="width: {width}%"></div>'
                '</div></td><td class="lc-num lc-weight" data-exact="{exact}">{weight}</td>'
                '</tr>'),
    "score_cell": '<td class="lc-num lc-score">{score}</td>',
    # a heatmap cell, shaded by its weight w (CSS mixes the colour from --w)
    "heat_cell": ('<td class="lc-heat-cell{dark}" style="--w: {w}" data-exact="{exact}">'
                  '{weight}</td>'),
    "heat_row": '<tr><th scope="row">{label}</th>{cells}</tr>',
    # one term a_ij v_j of a weighted sum, and the sum so far
    "term_item": ('<li><span>+ {a} × v<sub>{label}</sub> {v} = <span class="lc-vec lc-term">'
                  '{term}</span></span><span>sum so far <span class="lc-vec lc-partial">'
                  '{total}</span></span></li>'),
    # the causal stepper: where it is, one chip per position, one cache line per position
    "step_now": ('step t = {t} of {n}: the new token is <strong>{token}</strong> '
                 '(position {t})'),
    "token_chip": '<li class="{cls}">{j} {token}{tail}</li>',
    "cache_item": ('<li><span>{j} {token}:</span> <span>k = <span class="lc-vec">{k}</span>'
                   '</span> <span>v = <span class="lc-vec">{v}</span></span></li>'),
    # the retrieval playground's answer and its table
    "answer_stored": ('The model answers <strong>{answer}</strong> (probability {p}); the '
                      'value stored with {key} is {stored}: {verdict}.'),
    "answer_absent": ('The model answers <strong>{answer}</strong> (probability {p}); no pair '
                      'holds the key {key}, so no answer is right.'),
    "retrieval_result": ('<p class="lc-answer">{answer}</p>\n<p>Attention of the query '
                         '<strong>? {key}</strong> over the stored pairs:</p>\n<table '
                         'class="lc-weights"><thead><tr><th scope="col">pair</th><th '
                         'scope="col">weight</th><th scope="col" class="lc-num">a</th></tr>'
                         '</thead><tbody>{rows}</tbody></table>'),
    # the saturation explorer's formula for the row shown
    "formula_tutorial": "c × s<sub>j</sub>, s = {scores}",
    "formula_divided": "c × q·k<sub>j</sub> / √d<sub>k</sub>, d<sub>k</sub> = {d_k}",
    "formula_undivided": "c × q·k<sub>j</sub> (not divided), d<sub>k</sub> = {d_k}",
    # the text generator: a character of the text, a character of a head's strip shaded
    # by its weight, one head's row
    "gen_char": '<span class="lc-ch{cls}" data-pos="{pos}">{char}</span>',
    "gen_newline": "↵<br>",
    "gen_cell": ('<span class="lc-hw{dark}" style="--w: {w}" data-exact="{exact}">{char}'
                 '</span>'),
    "head_row": ('<tr><th scope="row">L{layer} H{head}</th><td class="lc-strip">{cells}</td>'
                 '<td class="lc-num lc-wrap"><span class="lc-top">{char}</span> {back} back, '
                 '<span class="lc-weight" data-exact="{exact}">{weight}</span></td></tr>'),
    # the induction playground: a token shaded by a head's weight (the copy target
    # outlined), one head's row, and what copying predicts at the position looked from
    "ind_cell": ('<span class="lc-hw{cls}" style="--w: {w}" data-exact="{exact}">{char}'
                 '</span>'),
    "ind_head_row": ('<tr class="{cls}"><th scope="row">L{layer} H{head}{note}</th><td '
                     'class="lc-strip">{cells}</td><td class="lc-num lc-wrap"><span '
                     'class="lc-top">{char}</span> {back} back, <span class="lc-weight" '
                     'data-exact="{exact}">{weight}</span></td></tr>'),
    "ind_copy": ('Position {t} holds <strong>{token}</strong>, which stood before at position '
                 '{j}; the token after it there, <strong>{next}</strong> at position {k} '
                 '(outlined), is what copying predicts. The model gives it probability '
                 '<span class="lc-p-copy">{p_copy}</span>; its top choice is '
                 '<strong>{top}</strong> (<span class="lc-p-top">{p_top}</span>).'),
    "ind_fresh": ('Position {t} holds <strong>{token}</strong>, which has not appeared '
                  'before: there is nothing to copy. The model\'s top choice is '
                  '<strong>{top}</strong> (<span class="lc-p-top">{p_top}</span>).'),
    # the coreference explorer: the sentence, the answer, a row per word and a column per head
    "coref_result": ('<p class="lc-sentence">{sentence}</p>\n<p class="lc-answer">{answer}</p>'
                     '\n<p class="lc-where">This is {status}.</p>\n<p>Weights from “it” in '
                     'each head (L layer, H head):</p>\n{table}'),
    "coref_answer": ('The model says “it” is the <strong class="lc-said">{answer}</strong> '
                     '(probability {p}); by the corpus’s rule it is the {expected}: '
                     '{verdict}.'),
    "coref_table": ('<table class="lc-heat lc-compact"><thead><tr><th scope="col">word</th>'
                    '{heads}</tr></thead><tbody>{rows}</tbody></table>'),
    "col_head": '<th scope="col">{word}</th>',
    # the translation explorer: the source, the two translations, and one head's weights,
    # a row per target word, a column per source word, the aligned cells outlined
    "tr_result": ('<p>source: <span class="lc-source">{source}</span></p>\n<p>the model: '
                  '<strong class="lc-translation">{translation}</strong></p>\n<p>the '
                  'grammar’s rule: <span class="lc-rule">{rule}</span> ({verdict})</p>\n'
                  '<p class="lc-where">{pairs}</p>\n<p>Cross-attention of {head}: a row per '
                  'word written, its weights over the source (outlined: the source word it '
                  'translates):</p>\n{table}'),
    "tr_table": ('<table class="lc-heat lc-compact lc-vcols"><thead><tr><th scope="col">'
                 'word</th>{heads}</tr></thead><tbody>{rows}</tbody></table>'),
    "align_cell": ('<td class="lc-heat-cell{dark}{gold}" style="--w: {w}" '
                   'data-exact="{exact}">{weight}</td>'),
    # the patching map: the pair, its runs (clean, corrupt, patched) and a map of what
    # each site restores, a button per cell
    "patch_result": ('<p class="lc-pair-shown">clean: <span class="lc-clean">{clean}</span>'
                     '<br>corrupt: <span class="lc-corrupt">{corrupt}</span></p>\n<p>In the '
                     'clean sentence “it” is the <strong class="lc-referent">{referent}'
                     '</strong>. Each run’s probabilities of the two nouns at “it”, and Δ, the '
                     'clean referent’s logit minus the other noun’s:</p>\n<table '
                     'class="lc-runs lc-compact" aria-live="polite"><thead><tr><th '
                     'scope="col">run</th><th scope="col" class="lc-num">{noun0}</th><th '
                     'scope="col" class="lc-num">'
                     '{noun1}</th><th scope="col" class="lc-num">Δ</th></tr></thead><tbody>'
                     '{runs}</tbody></table>\n<p>The fraction of Δ that comes back when one '
                     'site of the clean run is put into the corrupt run (press a cell to see '
                     'that run):</p>\n<div class="lc-maps">{heads}{resid}</div>'),
    "patch_run": ('<tr class="lc-run"><th scope="row">{run}</th><td class="lc-num lc-p '
                  'lc-weight" data-exact="{e0}">{p0}</td><td class="lc-num lc-p lc-weight" '
                  'data-exact="{e1}">{p1}</td><td class="lc-num lc-diff">{diff}</td></tr>'),
    "patch_heads": ('<table class="lc-compact lc-patch-map lc-heads-map"><caption>'
                    'one head’s output</caption><thead><tr><th scope="col">layer</th>{cols}'
                    '</tr></thead><tbody>{rows}</tbody></table>'),
    "patch_resid": ('<table class="lc-compact lc-patch-map lc-resid-map"><caption>the '
                    'residual stream at one word</caption><thead><tr><th scope="col">word'
                    '</th>{cols}</tr></thead><tbody>{rows}</tbody></table>'),
    "patch_cell": ('<td class="lc-patch-cell{dark}{on}" style="--w: {w}"><button type="button" '
                   'class="lc-site" data-site="{site}" data-index="{index}" data-exact="{exact}"'
                   ' aria-pressed="{pressed}" aria-label="{what}: restores {value}"{disabled}>'
                   '{value}</button></td>'),
    # the logit-lens explorer: a grid with a row per reading of the stream and a column per
    # position (headed by its character); each cell holds the reading's top next character and
    # its probability, shaded by the probability w it gives the character that does come next
    # (said in words too, for screen readers); the last column has no next character
    "lens_table": ('<table class="lc-lens-grid"><thead><tr><th scope="col">reading</th>{cols}</tr>'
                   '</thead><tbody>{rows}</tbody></table>'),
    "lens_col": '<th scope="col" class="lc-lens-char" data-pos="{pos}">{char}</th>',
    "lens_row": '<tr><th scope="row">{reading}</th>{cells}</tr>',
    "lens_cell": ('<td class="lc-lens-cell{dark}" style="--w: {w}" data-next="{exact_next}">'
                  '<span class="lc-top">{char}</span> <span class="lc-weight" '
                  'data-exact="{exact}">{p}</span><span class="lc-sr">; {next}: {p_next}'
                  '</span></td>'),
    "lens_last": ('<td class="lc-lens-cell lc-lens-last"><span class="lc-top">{char}</span> '
                  '<span class="lc-weight" data-exact="{exact}">{p}</span></td>'),
    "lens_loss": ('<span class="lc-lens-loss">{reading} <span class="lc-num lc-loss" '
                  'data-exact="{exact}">{loss}</span></span>'),
    # error messages (shown as text)
    "scale_error": "c must be a number from {lo} to {hi}; still showing c = {c}.",
    "sequence_error": "Not a sequence the model reads: {problem}.",
    "gen_error": "Not a prompt the model reads: {problem}.",
    "patch_error": "Not a sentence the encoder can patch: {problem}.",
}

_SLOT = re.compile(r"\{(\w+)\}")


def fill(template: str, **values: Any) -> str:
    """``template`` with every ``{name}`` slot replaced by ``values[name]``, in one pass.

    The script's ``fill`` does the same; inserted text is never scanned again.

    Examples
    --------
    >>> fill("{a} and {b}", a="{b}", b=2)
    '{b} and 2'
    """
    return _SLOT.sub(lambda m: str(values[m.group(1)]), template)


def piece(name: str, **values: Any) -> str:
    """The template ``name`` of :data:`TEMPLATES`, filled (the script's ``fill``).

    Examples
    --------
    >>> piece("col_head", word="it")
    '<th scope="col">it</th>'
    """
    return fill(TEMPLATES[name], **values)


def dark(w: float) -> str:
    """The class a cell shaded by weight ``w`` adds: ``" lc-dark"`` (white text) from
    :data:`HEAT_DARK_FROM` on, else nothing."""
    return " lc-dark" if w >= HEAT_DARK_FROM else ""


def fmt(x: float, digits: int) -> str:
    """``x`` to ``digits`` decimals, as the script's ``fmt`` (no sign on a rounded zero)."""
    s = f"{float(x):.{digits}f}"
    return s[1:] if re.fullmatch(r"-0\.?0*", s) else s


def vec(xs: ArrayLike, digits: int) -> str:
    """A vector as ``[a, b, ...]``, as the script's ``vec``."""
    return "[" + ", ".join(fmt(x, digits) for x in np.ravel(xs)) + "]"


def bar_row(label: str, p: float, digits: int, score: str | None = None,
            cls: str = "") -> str:
    """One row of a weights table (``label`` already escaped), from the template.

    Only rounded numbers go into the markup shown before the script runs, so that it does
    not depend on the last bits of a computation (the script adds the exact values).
    """
    return piece("bar_row", cls=cls, label=label, width=fmt(100 * p, 1), exact="",
                 weight=fmt(p, digits),
                 score="" if score is None else piece("score_cell", score=score))


def weights_table(rows: str, weight: str = "a") -> str:
    """The table of one query's weights: key, score, bar and ``weight`` columns, ``rows``
    (from :func:`bar_row`) as its body."""
    return ('<table class="lc-weights"><thead><tr><th scope="col">key</th><th scope="col" '
            'class="lc-num">\nscore</th><th scope="col">weight</th><th scope="col" '
            f'class="lc-num">{weight}</th></tr></thead>\n<tbody>{rows}</tbody></table>')


def heat_cell(w: float, digits: int = 3) -> str:
    """One heatmap cell of weight ``w`` (shown to ``digits`` decimals), from the template."""
    return piece("heat_cell", dark=dark(w), w=fmt(w, 4), exact="", weight=fmt(w, digits))


def to_attr(obj: Any) -> str:
    """``obj`` as JSON, escaped for a double-quoted HTML attribute."""
    return html.escape(json.dumps(obj, separators=(",", ":")), quote=True)


def floats(a: ArrayLike) -> Any:
    """Nested lists of Python floats (``repr`` precision: JSON round-trips them exactly)."""
    return np.asarray(a, dtype=np.float64).tolist()


def uid(kind: str, *parts: Any) -> str:
    """A stable id: the same arguments give the same id, different ones a different id."""
    digest = hashlib.sha1(json.dumps([kind, *parts], default=str).encode()).hexdigest()[:10]
    return f"lc-{kind}-{digest}"


def asset(name: str) -> str:
    """The text of a file in ``attention_lib/controls/assets`` (shipped in the wheel)."""
    return (resources.files("attention_lib.controls").joinpath("assets", name)
            .read_text(encoding="utf-8"))


def check_title(title: Any) -> str:
    """``title``, if it is a str (:func:`assemble` shows it)."""
    if not isinstance(title, str):
        raise TypeError(f"title={title!r}; expected a str")
    return title


def scale_fields(uid: str, label: str, value: float, scale_max: float, step: float) -> str:
    """A slider and a number field for one factor, each with its visible label."""
    common = f'min="0" max="{scale_max!r}" step="{step!r}" value="{value!r}" disabled'
    return (f'<div class="lc-field"><label for="{uid}-scale">{label}</label>'
            f'<input type="range" class="lc-scale" id="{uid}-scale" {common}></div>'
            f'<div class="lc-field"><label for="{uid}-c">c =</label>'
            f'<input type="number" class="lc-scale-number" id="{uid}-c" {common} '
            f'autocomplete="off" aria-describedby="{uid}-err"></div>'
            f'<p class="lc-error" id="{uid}-err" role="status" aria-live="polite"></p>')


def labels(tokens: Any, n: int, name: str = "tokens") -> list[str]:
    """One label per position: ``tokens`` as strings, or ``"1", "2", ...``."""
    return position_labels(tokens, n, name, first=1)


class ControlElement:
    """A browser-side control: one HTML element with its own style and script.

    Displays as ``text/html`` in JupyterLab, Binder, Colab and on the website.

    Parameters
    ----------
    markup : str
        The complete, self-contained HTML.
    alt : str
        A plain-text description, shown where HTML is not rendered.

    Examples
    --------
    >>> c = ControlElement("<div>a control</div>", "an example")
    >>> c._repr_html_(), c
    ('<div>a control</div>', <ControlElement: an example>)
    """

    def __init__(self, markup: str, alt: str) -> None:
        self.markup = markup
        self.alt = alt

    def _repr_html_(self) -> str:
        return self.markup

    def __repr__(self) -> str:
        return f"<ControlElement: {self.alt}>"


#: What a control that runs a model in the page says about its weights (``{name}`` slots,
#: filled by ``assets/model.js``): while they load, and why they could not be used.
WEIGHT_MESSAGES = {
    "loading": "Loading the weights...",
    "weights_unreachable": ("The weights did not load: {src} could not be fetched. Nothing was "
                            "computed; try again once the page can reach it."),
    "weights_status": ("The weights did not load: the server answered {status} for {src}. "
                       "Nothing was computed."),
    "weights_size": ("The weights did not load: the file holds {got} bytes, but the model needs "
                     "{want}, so it is cut short or belongs to another model. Nothing was "
                     "computed."),
    "weights_checksum": ("The weights did not load: the file has the model's size ({want} "
                         "bytes) but not its checksum (CRC-32 {got}, expected {crc32}), so it "
                         "is another file. Nothing was computed."),
}

#: The number formats a page decodes (``assets/model.js``), by the bytes of one number.
_WIDTHS = {2: ("<f2", "float16"), 4: ("<f4", "float32"), 8: ("<f8", "float64")}


@dataclass(frozen=True)
class Weights:
    """A model's arrays as a page receives them: little-endian floats, one run of bytes.

    ``layout`` lists ``[name, shape, offset]`` (the offset counted in numbers), the order the
    script decodes them in; ``check`` is what identifies the bytes (their length and CRC-32),
    which the script compares before it decodes anything.
    """

    layout: list[list[Any]]
    raw: bytes

    @property
    def encoded(self) -> str:
        return base64.b64encode(self.raw).decode("ascii")

    @property
    def check(self) -> dict[str, Any]:
        return {"bytes": len(self.raw), "crc32": f"{zlib.crc32(self.raw):08x}"}

    def markup(self, kind: str) -> str:
        """The element that carries them: a script that never runs (its type is not
        JavaScript), with their length and CRC-32. The website's build moves its content into
        a file of its own, which the page checks against them before it decodes anything."""
        check = self.check
        return (f'<script type="application/octet-stream" class="lc-blob" data-blob="{kind}" '
                f'data-bytes="{check["bytes"]}" data-crc32="{check["crc32"]}">\n'
                f"{self.encoded}</script>")


def pack_weights(params: Mapping[str, Any], names: Sequence[str], width: int,
                 why: str = "") -> Weights:
    """The arrays ``names`` of ``params`` as one run of little-endian floats of ``width``
    bytes (2, 4 or 8), in that order.

    Refuses arrays that this format does not hold exactly (``why`` says how to get such
    weights): the page must compute with the very numbers the library computes with.

    Examples
    --------
    >>> w = pack_weights({"w": np.array([[0.5, 2.0]])}, ["w"], 4)
    >>> w.layout, w.encoded, w.check
    ([['w', [1, 2], 0]], 'AAAAPwAAAEA=', {'bytes': 8, 'crc32': '308fb1ae'})
    """
    dtype, kind = _WIDTHS[width]
    layout, offset, parts = [], 0, []
    for name in names:
        a = np.asarray(params[name], dtype=np.float64)
        packed = a.astype(dtype)
        if not np.array_equal(packed.astype(np.float64), a):
            raise ValueError(f"params[{name!r}] holds numbers {kind} cannot represent; the "
                             f"page receives {kind} weights" + (f" ({why})" if why else ""))
        layout.append([name, list(a.shape), offset])
        offset += a.size
        parts.append(packed.ravel())
    raw = np.concatenate(parts) if parts else np.zeros(0, dtype)
    return Weights(layout, raw.tobytes())


def engine_config(config: Any, *, prefix: str = "") -> dict[str, Any]:
    """A stack's sizes and wiring (a :class:`~attention_lib.GPTConfig`, parameters named with
    ``prefix``) as the page's engine, ``assets/model.js``, reads them.

    The engine runs what the book's trained models use: pre-norm blocks with layer norm, a
    GELU network and attention biases, tied embeddings, no window; any other configuration
    is refused with the field the page cannot run.
    """
    unsupported = {name: getattr(config, name) for name, value in
                   (("norm", "layer"), ("norm_position", "pre"), ("ffn", "gelu"),
                    ("attention_biases", True), ("tie_embeddings", True), ("window", None))
                   if getattr(config, name) != value}
    if unsupported:
        raise ValueError(f"config has {unsupported}; the page's engine runs pre-norm blocks "
                         "with layer norm, GELU, attention biases, tied embeddings and no window")
    return {"prefix": prefix, "vocab_size": config.vocab_size, "context": config.context,
            "d_model": config.d_model, "n_layers": config.n_layers, "n_heads": config.n_heads,
            "n_kv_heads": config.kv_heads, "attention_only": config.attention_only,
            "positions": config.positions, "causal": config.causal,
            "cross": config.cross_attention}


def sequence_field(ident: str, label: str, text: str, rules: str) -> str:
    """The box a reader types a sequence into, with the rules under it and a line for errors.

    The HTML parser drops one new line right after ``<textarea>``: one is added, so none of
    ``text`` is lost.
    """
    return f"""<div class="lc-controls"><div class="lc-field lc-field-wide">
<label for="{ident}-seq">{label}</label>
<textarea class="lc-seq" id="{ident}-seq" rows="2" disabled autocomplete="off"
spellcheck="false" aria-describedby="{ident}-rules {ident}-err">
{html.escape(text)}</textarea>
</div></div>
<p class="lc-hint" id="{ident}-rules">{html.escape(rules)}</p>
<p class="lc-error" id="{ident}-err" role="status" aria-live="polite"></p>"""


def position_slider(ident: str, label: str, last: int, value: int, shown: str) -> str:
    """The slider that picks the position a model's heads are seen from (0 to ``last``),
    with its visible label and the position as the reader reads it (``shown``)."""
    return f"""<div class="lc-field lc-field-wide">
<label for="{ident}-pos">{label}</label>
<input type="range" class="lc-pos" id="{ident}-pos" min="0" max="{last}" step="1"
value="{value}" disabled>
<output class="lc-num lc-pos-value" for="{ident}-pos">{shown}</output>"""


def assemble(kind: str, uid: str, data: Mapping[str, Any], body: str,
             script: str | Sequence[str], *, state: str, alt: str, title: str,
             templates: Sequence[str] = ()) -> ControlElement:
    """The element: root with its data and templates, style, title, body, note and script.

    ``script`` names the control's asset script, or several (shared code first), which run
    after ``common.js`` in the order given.
    """
    title = check_title(title)
    scripts = [script] if isinstance(script, str) else list(script)
    data = {**data, "templates": {name: TEMPLATES[name] for name in templates}}
    if {"heat_cell", "gen_cell", "ind_cell", "align_cell", "lens_cell"} & set(templates):
        data["dark_from"] = HEAT_DARK_FROM
    attrs = " ".join(f'data-{name.replace("_", "-")}="{to_attr(value)}"'
                     for name, value in data.items())
    js = ("(function () {\n"
          f"const root = document.getElementById({json.dumps(uid)});\n"
          'if (!root || root.dataset.ready) { return; }\nroot.dataset.ready = "1";\n'
          + asset("common.js") + "".join(asset(name) for name in scripts) + "})();")
    # JupyterLab takes arrow keys as notebook shortcuts unless a control opts out.
    body = re.sub(r"<(input|select|button|textarea)\b", rf"<\1 {SUPPRESS_SHORTCUTS}", body)
    markup = (f'<div class="lc-root lc-{kind}" id="{uid}" {attrs}>\n'
              f'<style>{asset("controls.css")}</style>\n'
              f'<p class="lc-title">{html.escape(title)}</p>\n{body}\n'
              f'<p class="lc-static-note"><em>{html.escape(STATIC_NOTE.format(state=state))}'
              f'</em></p>\n<script>{js}</script>\n</div>')
    return ControlElement(markup, alt)
