r"""The logit-lens explorer (chapter 23): the book's GPT read after every block, in the page.

The reader types a text, and the page runs the book's Shakespeare model on it, reads the
residual stream after the embedding and after each block through the final layer norm and
the tied read-out, as :func:`~attention_lib.logit_lens` does, and shows, for the last
characters of the text, what each reading would predict next and with what probability,
shaded by the probability it gives the character that does come next; under the grid, each
reading's mean loss on the text. The weights travel as the text generator's do
(:func:`~attention_lib.controls.text_generator`: float16 bytes, decoded on first use, on the
website in a file of their own), and the page computes in double precision with the engine
``assets/model.js``, reading the stream with hooks at ``"embed"`` and
``"blocks.l.resid_post"``.
"""

from __future__ import annotations

import html

import numpy as np

from .._validation import positive_int
from ..gpt import BookLanguageModel
from ..interpret import logit_lens
from . import element as el
from .generator import MESSAGES as GENERATOR_MESSAGES
from .generator import _prompt_problem, page_model

__all__ = ["logit_lens_explorer"]

#: The most columns (positions) the grid may show.
MAX_COLUMNS = 32

#: What the page says (``{name}`` slots); the text's checks say it in the generator's words.
MESSAGES = {
    **{name: GENERATOR_MESSAGES[name] for name in ("empty", "alphabet", "too_long")},
    "waiting": "The weights ({size} MB) load when you first press Read.",
    "edited": "Press Read to read the text as it is now (the weights load then).",
    "read": "Read {n} characters after each block; the grid shows the last {shown}.",
    "losses": "Mean loss on the text's {n} next characters, in nats per character:",
    "no_loss": ("The text has one character: no character follows it, so no reading has a "
                "loss."),
    **el.WEIGHT_MESSAGES,
}


def _reading_names(n_layers: int) -> list[str]:
    """The rows: the stream after the embedding, then after each block."""
    return ["embedding"] + [f"after block {n}" for n in range(1, n_layers + 1)]


def _shown(c: str) -> str:
    """A character standing alone, as the page shows it (the script's ``shownChar``)."""
    return "↵" if c == "\n" else "␣" if c == " " else html.escape(c)


def _grid(lens: np.ndarray, text: str, alphabet: str, names: list[str], columns: int) -> str:
    """The grid of the last ``columns`` positions: ``lens`` (R, T, V) log-probabilities."""
    n_pos = len(text)
    first = max(0, n_pos - columns)
    probs = np.exp(lens.astype(np.float64))  # (R, T, V)
    cols = "".join(el.piece("lens_col", pos=t, char=_shown(text[t]))
                   for t in range(first, n_pos))
    rows = []
    for name, p in zip(names, probs, strict=True):
        cells = []
        for t in range(first, n_pos):
            top = int(np.argmax(p[t]))
            if t + 1 < n_pos:
                w = p[t, alphabet.index(text[t + 1])]
                cells.append(el.piece("lens_cell", dark=el.dark(w), w=el.fmt(w, 4),
                                      exact_next="", char=_shown(alphabet[top]), exact="",
                                      p=el.fmt(p[t, top], 2),
                                      next=f"next {_shown(text[t + 1])}", p_next=el.fmt(w, 2)))
            else:
                cells.append(el.piece("lens_last", char=_shown(alphabet[top]), exact="",
                                      p=el.fmt(p[t, top], 2)))
        rows.append(el.piece("lens_row", reading=html.escape(name), cells="".join(cells)))
    return el.piece("lens_table", cols=cols, rows="".join(rows))


def _losses(lens: np.ndarray, ids: np.ndarray, names: list[str]) -> str:
    """Each reading's mean loss on the text's next characters (nats), as a line of items."""
    nll = -np.take_along_axis(lens[:, :-1].astype(np.float64), ids[None, 1:, None],
                              axis=-1)[..., 0]  # (R, T - 1)
    return ", ".join(el.piece("lens_loss", reading=html.escape(name), exact="",
                              loss=el.fmt(loss, 2))
                     for name, loss in zip(names, nll.mean(axis=1), strict=True))


def logit_lens_explorer(
    model: BookLanguageModel | None = None,
    text: str = "ROMEO:\nBut soft, what light through yonder window breaks",
    *,
    columns: int = 16,
    title: str = "What the book's model would predict after each block",
) -> el.ControlElement:
    r"""The logit lens on a text the reader types: each reading's next character, per position.

    The reader edits the text and presses *Read*: the script runs the model on it in double
    precision from its weights (the engine of the text generator), reads the residual stream
    after the embedding and after each block through the final norm and the read-out, and
    shows a grid with a row per reading and a column per position, for the last ``columns``
    characters (the text's characters head the columns). Each cell holds the character the
    reading puts first to come next and its probability, shaded by the probability the
    reading gives the character that does come next (the last column has none). A line under
    the grid gives each reading's mean loss on the text's next characters, in nats. Once the
    weights are loaded, the grid follows the text as it is typed.

    Parameters
    ----------
    model : BookLanguageModel, optional
        Defaults to :func:`~attention_lib.book_language_model`; its parameters must be float16
        numbers, as the text generator's.
    text : str
        Shown first; characters of the model's alphabet, shorter than its context.
    columns : int, default 16
        Positions shown, the last ones of the text (from 1 to 32, ``MAX_COLUMNS``); the grid
        scrolls sideways where it does not fit.
    title : str

    Returns
    -------
    ControlElement
        Before its script runs, it shows the library's readings of ``text``
        (:func:`~attention_lib.logit_lens`).

    Notes
    -----
    With :math:`x^{(l)}_t` the stream at position :math:`t` after :math:`l` blocks
    (:math:`l = 0`: the embedding plus the positions), the final norm :math:`N_f` and the
    tied read-out :math:`W_E^{\mathsf T}`, a cell shows the largest entry of

    .. math::

        p^{(l)}_t = \operatorname{softmax}\bigl(N_f(x^{(l)}_t)\, W_E^{\mathsf T}\bigr),

    shaded by :math:`p^{(l)}_t[y_{t+1}]`, with :math:`y_{t+1}` the next character, and a
    reading's loss is :math:`-\frac{1}{T-1}\sum_{t<T-1} \log p^{(l)}_t[y_{t+1}]`.

    Examples
    --------
    >>> markup = logit_lens_explorer(text="ROMEO:\nBut")._repr_html_()
    >>> markup.count('class="lc-lens-cell'), markup.count('class="lc-lens-loss"')
    (50, 5)
    """
    model, blob = page_model(model)
    cfg, params = model.config, model.params
    if not isinstance(text, str):
        raise TypeError(f"text={text!r}; expected a str")
    alphabet = model.tokenizer.alphabet
    problem = _prompt_problem(text, alphabet, cfg.context)
    if problem is not None:
        raise ValueError(f"text={text!r:.60}: {problem}")
    columns = positive_int(columns, "columns")
    if columns > MAX_COLUMNS:
        raise ValueError(f"columns={columns}; expected at most {MAX_COLUMNS} positions")
    title = el.check_title(title)
    ids = model.encode(text)
    lens = logit_lens(params, cfg, ids)  # (L + 1, T, V)
    names = _reading_names(cfg.n_layers)

    ident = el.uid("lens", cfg.as_dict(), alphabet, text, columns, title, blob.check)
    data = {"config": el.engine_config(cfg), "layout": blob.layout, "alphabet": alphabet,
            "columns": columns, "readings": names, "messages": MESSAGES}
    waiting = el.fill(MESSAGES["waiting"], size=el.fmt(len(blob.raw) / 1e6, 1))
    shown = min(columns, len(text))
    if len(text) > 1:
        intro, items = el.fill(MESSAGES["losses"], n=len(text) - 1), _losses(lens, ids, names)
    else:
        intro, items = MESSAGES["no_loss"], ""
    body = f"""<div class="lc-controls"><div class="lc-field lc-field-wide">
<label for="{ident}-text">text</label>
<textarea class="lc-prompt-box" id="{ident}-text" rows="2" disabled autocomplete="off"
spellcheck="false" aria-describedby="{ident}-err">
{html.escape(text)}</textarea></div>
<button type="button" class="lc-read" disabled>Read</button></div>
<p class="lc-error" id="{ident}-err" role="status" aria-live="polite"></p>
<p class="lc-status lc-hint" role="status" aria-live="polite">{waiting}</p>
<div class="lc-lens-out">
<p class="lc-pane-title" id="{ident}-cap">What each reading predicts next, at the last
<span class="lc-shown">{shown}</span> characters of the text</p>
<p class="lc-hint">A column per character of the text; in it, the character each reading puts
first to come next, and its probability. The shade is the probability the reading gives the
character that does come next (the next column's), from 0 (white) to 1 (dark blue); the last
column has none. The last row is the model's own prediction.</p>
<div class="lc-lens-scroll" role="region" tabindex="0" aria-labelledby="{ident}-cap">{
_grid(lens, text, alphabet, names, columns)}</div>
<p class="lc-lens-losses" aria-live="polite"><span class="lc-lens-intro">{
html.escape(intro)}</span>
<span class="lc-lens-items">{items}</span></p></div>
{blob.markup("book-gpt")}"""
    alt = ("type a text; the trained model reads it in the page, and a grid shows what the "
           "residual stream after the embedding and after each block would predict next")
    state = f"the text {text!r}"
    return el.assemble("lens", ident, data, body, ("model.js", "logit_lens.js"), state=state,
                       alt=alt, title=title, templates=("lens_table", "lens_col", "lens_row",
                                                        "lens_cell", "lens_last", "lens_loss",
                                                        "gen_error"))
