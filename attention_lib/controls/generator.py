r"""The text generator (chapters 14 and 15): the trained GPT, run in the reader's browser.

The reader types a prompt, picks a temperature and a seed, and the page continues the prompt
with the book's model, computed in JavaScript from the model's own weights; then a slider
(or the mouse) picks a character, and the page shows where each of the model's heads looked
from it. The weights travel with the element as float16 bytes (the book's model holds only
float16 numbers, so nothing is rounded on the way) and are decoded only when the reader
first asks for text. On the website the build moves them into a file of their own that the
page fetches at that moment, so the page stays light.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable

import numpy as np

from .._validation import positive_int, real_number
from ..gpt import (
    BookLanguageModel,
    book_language_model,
    generate,
    gpt_attention_weights,
    gpt_parameter_shapes,
)
from . import element as el

__all__ = ["mulberry32", "text_generator"]

#: Characters of context shown in each head's strip.
STRIP = 24

#: What the page says, in the words the ValueError uses too (``{name}`` slots).
MESSAGES = {
    "empty": "type at least one character",
    "alphabet": "it knows only the {n} characters of the plays, not {chars}",
    "too_long": "at most {most} characters (the model reads {context})",
    "seed": "the seed is a whole number from 0 to 4294967295",
    "waiting": "The weights ({size} MB) load when you first press Generate.",
    "generated": "Generated {n} characters at temperature {temperature} with seed {seed}.",
    **el.WEIGHT_MESSAGES,
}


def _prompt_problem(text: str, alphabet: str, context: int) -> str | None:
    """What is wrong with a prompt, in the page's words, or None."""
    if text == "":
        return MESSAGES["empty"]
    bad = sorted(set(text) - set(alphabet), key=text.index)
    if bad:
        return el.fill(MESSAGES["alphabet"], n=len(alphabet),
                    chars=" ".join(json.dumps(c, ensure_ascii=False) for c in bad))
    if len(text) >= context:
        return el.fill(MESSAGES["too_long"], most=context - 1, context=context)
    return None


def page_model(model: BookLanguageModel | None) -> tuple[BookLanguageModel, el.Weights]:
    """The model a page runs (the book's by default) and its weights packed for the page."""
    model = book_language_model() if model is None else model
    if not isinstance(model, BookLanguageModel):
        raise TypeError(f"model is {type(model).__name__}; expected a BookLanguageModel")
    cfg = model.config
    if not cfg.tie_embeddings or cfg.positions == "rope":
        raise ValueError(f"the model has tie_embeddings={cfg.tie_embeddings} and positions="
                         f"{cfg.positions!r}; the page runs tied models with learned or no "
                         "positions")
    blob = el.pack_weights(model.params, list(gpt_parameter_shapes(cfg)), 2,
                           "round_to_half the model first")
    return model, blob


def mulberry32(seed: int) -> Callable[[], float]:
    """The small random generator the page samples with (Mulberry32), for ``generate``.

    Returns a function that gives the next number in ``[0, 1)`` each time it is called,
    the same sequence as the script's, so that
    ``generate(..., uniform=mulberry32(seed))`` draws the characters the page draws.

    Examples
    --------
    >>> draw = mulberry32(1)
    >>> [round(draw(), 6) for _ in range(3)]
    [0.627074, 0.002736, 0.527447]
    """
    state = positive_int(seed, "seed", minimum=0) & 0xFFFFFFFF
    mask = 0xFFFFFFFF

    def draw() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & mask
        t = ((state ^ (state >> 15)) * (state | 1)) & mask
        t = ((t + (((t ^ (t >> 7)) * (t | 61)) & mask)) & mask) ^ t
        return ((t ^ (t >> 14)) & mask) / 4294967296

    return draw


def _char(c: str, where: str = "text") -> str:
    """A character as the page shows it (as the script's ``shown``): in the text a new line
    is ↵ and a break; in a head's strip ↵ alone; where it stands alone, a space is ␣."""
    if c == "\n":
        return el.TEMPLATES["gen_newline"] if where == "text" else "↵"
    if c == " " and where == "alone":
        return "␣"
    return html.escape(c)


def _head_rows(chars: str, weights: np.ndarray, pos: int) -> str:
    """One row per head: the strip of context before ``pos`` shaded by the head's weights,
    and the position the head weights most. ``weights``: (L, h, T, T)."""
    rows = []
    n_layers, n_heads = weights.shape[:2]
    first = max(0, pos - STRIP + 1)
    for layer in range(n_layers):
        for head in range(n_heads):
            w = weights[layer, head, pos, :pos + 1]
            cells = "".join(el.piece("gen_cell", w=el.fmt(w[j], 4), exact="", dark=el.dark(w[j]),
                                  char=_char(chars[j], "strip"))
                            for j in range(first, pos + 1))
            top = int(np.argmax(w))
            rows.append(el.piece("head_row", layer=layer + 1, head=head + 1, cells=cells,
                              char=_char(chars[top], "alone"), back=pos - top, exact="",
                              weight=el.fmt(w[top], 2)))
    return "".join(rows)


def _text(chars: str, n_prompt: int, pos: int) -> str:
    return "".join(el.piece("gen_char", pos=j, char=_char(c),
                         cls=(" lc-prompt" if j < n_prompt else "")
                         + (" lc-sel" if j == pos else ""))
                   for j, c in enumerate(chars))


def text_generator(
    model: BookLanguageModel | None = None,
    *,
    prompt: str = "Romeo:\n",
    temperature: float = 0.8,
    seed: int = 1,
    n_new: int = 90,
    title: str = "The book's model, running in this page",
) -> el.ControlElement:
    """A generator the reader drives: prompt, temperature, seed; then where each head looked.

    The reader edits the prompt, sets the temperature (0 is greedy) and the seed, and
    presses *Generate*: the script continues the prompt by up to ``n_new`` characters (the
    model reads at most ``config.context``), computing every step of the model in double
    precision from its weights, with the key-value cache, and sampling as
    :func:`~attention_lib.generate` does from the numbers of :func:`mulberry32`. A slider,
    or the pointer over a character, picks a position; a table then shows, for every head
    of every layer, the last characters up to that position shaded by the head's
    attention weight, and the character the head weights most, how far back, and its
    weight.

    Parameters
    ----------
    model : BookLanguageModel, optional
        Defaults to :func:`~attention_lib.book_language_model`. Tied embeddings and learned
        or no positions; its parameters must be float16 numbers (see
        :func:`~attention_lib.round_to_half`), which the page receives exactly.
    prompt : str
        Shown first; characters of the model's alphabet, shorter than its context.
    temperature : float, default 0.8
        From 0 to 2.
    seed : int, default 1
    n_new : int, default 90
        Characters added per press (fewer if the context fills up).
    title : str

    Returns
    -------
    ControlElement
        Before its script runs, it shows the prompt continued by the library with the same
        settings and the heads at the last character.

    Examples
    --------
    >>> markup = text_generator(prompt="Romeo", n_new=5)._repr_html_()
    >>> markup.count('class="lc-ch lc-prompt')
    5
    """
    model, blob = page_model(model)
    cfg, params = model.config, model.params
    if not isinstance(prompt, str):
        raise TypeError(f"prompt={prompt!r}; expected a str")
    problem = _prompt_problem(prompt, model.tokenizer.alphabet, cfg.context)
    if problem is not None:
        raise ValueError(f"prompt={prompt!r:.60}: {problem}")
    ids = model.encode(prompt)
    temperature = real_number(temperature, "temperature", minimum=0.0, maximum=2.0)
    seed = positive_int(seed, "seed", minimum=0)
    n_new = positive_int(n_new, "n_new")

    out = generate(params, cfg, ids, min(n_new, cfg.context - ids.size),
                   temperature=temperature, uniform=mulberry32(seed))
    chars = model.decode(out)
    pos = len(chars) - 1
    weights = gpt_attention_weights(params, cfg, out[None])[:, 0]  # (L, h, T, T)

    ident = el.uid("generator", cfg.as_dict(), model.tokenizer.alphabet, prompt, temperature,
                seed, n_new, title, blob.check)
    waiting = el.fill(MESSAGES["waiting"], size=el.fmt(len(blob.raw) / 1e6, 1))
    data = {"config": el.engine_config(cfg), "layout": blob.layout,
            "alphabet": model.tokenizer.alphabet, "n_new": n_new, "strip": STRIP,
            "n_prompt": int(ids.size), "generated": chars, "messages": MESSAGES}
    slider = el.position_slider(ident, "look from character", pos, pos, f"{pos + 1} of {pos + 1}")
    body = f"""<div class="lc-controls"><div class="lc-field lc-field-wide">
<label for="{ident}-prompt">prompt</label>
<textarea class="lc-prompt-box" id="{ident}-prompt" rows="2" disabled autocomplete="off"
spellcheck="false" aria-describedby="{ident}-err">
{html.escape(prompt)}</textarea></div>
<div class="lc-field"><label for="{ident}-temp">temperature</label>
<input type="range" class="lc-temp" id="{ident}-temp" min="0" max="2" step="0.05"
value="{temperature!r}" disabled>
<output class="lc-num lc-temp-value" for="{ident}-temp">{el.fmt(temperature, 2)}</output></div>
<div class="lc-field"><label for="{ident}-seed">seed</label>
<input type="number" class="lc-seed" id="{ident}-seed" min="0" max="4294967295" step="1"
value="{seed}" disabled autocomplete="off"></div>
<button type="button" class="lc-generate" disabled>Generate</button></div>
<p class="lc-error" id="{ident}-err" role="status" aria-live="polite"></p>
<p class="lc-status lc-hint" role="status" aria-live="polite">{waiting}</p>
<div class="lc-gen-text" aria-label="prompt and generated text">{_text(chars, ids.size, pos)}
</div>
<div class="lc-controls">{slider}
</div></div>
<table class="lc-heads"><thead><tr><th scope="col">head</th><th scope="col">weights on the
last {STRIP} characters</th><th scope="col" class="lc-num lc-wrap">most weight</th></tr></thead>
<tbody>{_head_rows(chars, weights, pos)}</tbody></table>
{blob.markup("book-gpt")}"""
    alt = ("type a prompt and pick a temperature; the trained model continues it in the page, "
           "and each attention head's weights from a chosen character are shaded")
    state = (f"the prompt {prompt!r} continued at temperature {el.fmt(temperature, 2)} with "
             f"seed {seed}, and the heads at its last character")
    return el.assemble("generator", ident, data, body,
                    ("model.js", "generator.js"), state=state, alt=alt,
                    title=title, templates=("gen_char", "gen_newline", "gen_cell", "head_row",
                                            "gen_error"))

