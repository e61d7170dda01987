r"""The coreference explorer (chapter 21): the trained encoder resolves "it" in the page.

The reader picks the two nouns, the verb and the adjective of the corpus's sentence
frame; the page runs the trained encoder of
:func:`~attention_lib.train_coreference_model` in JavaScript on the sentence and shows
which noun it names, with its probability, whether the sentence is a training sentence, a
held-out one or new, and the weights from "it" in every head of every layer.
"""

from __future__ import annotations

import functools
import html
from typing import Any

import numpy as np

from ..training import coreference as co
from ..training.coreference import CoreferenceModel
from . import element as el

__all__ = ["coreference_explorer"]

#: What the page says (``{name}`` slots), in the words the ValueError uses too.
MESSAGES = {
    "train": "a training sentence",
    "test": "a held-out sentence: the model never saw these two nouns in these roles",
    "none": "not in the corpus: the model never saw a sentence of this kind",
    "same": "pick two different nouns, so that “it” has two to choose from",
    "right": "the model is right",
    "wrong": "the model is wrong",
    **el.WEIGHT_MESSAGES,
}

GROUPS = {
    "first": (("animals and people", co.AGENTS), ("places", co.PLACES)),
    "verb": (("crossing", co.CROSS_VERBS), ("chasing", co.CHASE_VERBS)),
    "second": (("places", co.PLACES), ("animals and people", co.AGENTS)),
    "adjective": (("it is the first noun", co.FIRST_ADJECTIVES),
                  ("it is the second noun: a place", co.PLACE_ADJECTIVES),
                  ("it is the second noun: an animal or a person", co.AGENT_ADJECTIVES)),
}
LABELS = {"first": "first noun", "verb": "verb", "second": "second noun",
          "adjective": "adjective"}


def sentence_status(first: str, verb: str, second: str, adjective: str) -> str:
    """``"train"``, ``"test"`` or ``"none"``: where the sentence of these words stands.

    The page decides with the same rules: the corpus's frames, and the held-out pairs.

    Examples
    --------
    >>> sentence_status("animal", "cross", "street", "tired")
    'test'
    >>> sentence_status("street", "chase", "animal", "wide")
    'none'
    """
    cross = (verb in co.CROSS_VERBS and first in co.AGENTS and second in co.PLACES
             and adjective in co.FIRST_ADJECTIVES + co.PLACE_ADJECTIVES)
    chase = (verb in co.CHASE_VERBS and first in co.AGENTS and second in co.AGENTS
             and first != second and adjective in co.FIRST_ADJECTIVES + co.AGENT_ADJECTIVES)
    if not (cross or chase):
        return "none"
    return "test" if (first, second) in _held_out_pairs() else "train"


@functools.cache
def _held_out_pairs() -> tuple[tuple[str, str], ...]:
    """The held-out noun pairs, read from the corpus."""
    return tuple(sorted({CoreferenceModel.candidates(s)
                         for s, _ in co.coreference_examples("test")}))


def _check(model: Any, words: dict[str, Any]) -> None:
    if not isinstance(model, CoreferenceModel):
        raise TypeError(f"model is {type(model).__name__}; expected a CoreferenceModel "
                        "(from train_coreference_model)")
    for slot, value in words.items():
        choices = [w for _, group in GROUPS[slot] for w in group]
        if value not in choices:
            raise ValueError(f"{slot}={value!r}; expected one of {choices}")
    if words["first"] == words["second"]:
        raise ValueError(f"first={words['first']!r} and second={words['second']!r}: "
                         f"{MESSAGES['same']}")


def _select(ident: str, slot: str, value: str) -> str:
    groups = "".join(
        f'<optgroup label="{html.escape(label)}">'
        + "".join(f'<option value="{html.escape(w)}"{" selected" if w == value else ""}>'
                  f"{html.escape(w)}</option>" for w in words)
        + "</optgroup>" for label, words in GROUPS[slot])
    return (f'<div class="lc-field"><label for="{ident}-{slot}">{LABELS[slot]}</label>'
            f'<select class="lc-{slot}" id="{ident}-{slot}" disabled autocomplete="off">'
            f"{groups}</select></div>")


def _result(model: CoreferenceModel, words: dict[str, str]) -> tuple[str, np.ndarray]:
    """The answer, the status and the table of weights from "it", from the templates."""
    sentence = co.FRAME.format(**words)
    p = model.probabilities([sentence])[0]
    nouns = model.candidates(sentence)
    answer = nouns[int(p[1] > p[0])]
    expected = nouns[0] if words["adjective"] in co.FIRST_ADJECTIVES else nouns[1]
    status = sentence_status(**words)
    said = el.piece("coref_answer", answer=html.escape(answer), p=el.fmt(p.max(), 2),
                 expected=html.escape(expected),
                 verdict=MESSAGES["right" if answer == expected else "wrong"])
    weights = model.it_weights(sentence)  # (L, h, n)
    n_layers, n_heads, _ = weights.shape
    rows = []
    for j, word in enumerate(sentence.split()):  # a row per word, a column per head
        cells = "".join(el.heat_cell(w, 2) for w in weights[:, :, j].ravel())
        rows.append(el.piece("heat_row", label=html.escape(word), cells=cells))
    heads = "".join(el.piece("col_head", word=f"L{layer + 1} H{head + 1}")
                    for layer in range(n_layers) for head in range(n_heads))
    table = el.piece("coref_table", heads=heads, rows="".join(rows))
    out = el.piece("coref_result", sentence=html.escape(sentence), answer=said,
                status=MESSAGES[status], table=table)
    return out, p


def coreference_explorer(
    model: CoreferenceModel,
    *,
    first: str = "animal",
    verb: str = "cross",
    second: str = "street",
    adjective: str = "tired",
    title: str = "The trained encoder resolves “it”, in this page",
) -> el.ControlElement:
    """The trained coreference encoder, run in the browser on a sentence the reader builds.

    Four lists pick the words of the frame "The *first* didn't *verb* the *second* because
    it was too *adjective*" (any noun in either place, any verb and adjective, so sentences
    outside the corpus too). The script runs the encoder in JavaScript on the model's
    weights and shows the noun it names with its probability, the noun the corpus's rule
    names (the adjective decides), whether the sentence is a training sentence, a held-out
    one or outside the corpus, and a heatmap of the weights from "it" in every head.

    Parameters
    ----------
    model : CoreferenceModel
        From :func:`~attention_lib.train_coreference_model` (weights that float32 holds
        exactly, which the page receives; they load when the reader first picks a word).
    first, verb, second, adjective : str
        The words shown first; the two nouns must differ.
    title : str

    Returns
    -------
    ControlElement
        Before its script runs, it shows the library's numbers for the words given.

    Notes
    -----
    The script computes what :meth:`~attention_lib.CoreferenceModel.probabilities` and
    :meth:`~attention_lib.CoreferenceModel.it_weights` return, in double precision.

    Examples
    --------
    >>> import attention_lib as al
    >>> model = al.train_coreference_model(steps=1)
    >>> markup = coreference_explorer(model)._repr_html_()
    >>> markup.split("<script")[0].count('class="lc-heat-cell')  # 11 words x 4 heads
    44
    """
    words = {"first": first, "verb": verb, "second": second, "adjective": adjective}
    _check(model, words)
    blob = el.pack_weights(model.params, list(model.params), 4, "the trained models round to them")
    ident = el.uid("coreference", model.config.as_dict(), blob.check, words, title)
    result, p = _result(model, words)
    selects = "".join(_select(ident, slot, value) for slot, value in words.items())
    body = f"""<div class="lc-controls">{selects}</div>
<p class="lc-error" role="status" aria-live="polite"></p>
<p class="lc-status lc-hint" role="status" aria-live="polite"></p>
<div class="lc-result" data-probabilities="{html.escape(str(p.tolist()))}">{result}</div>
{blob.markup("coreference")}"""
    data = {"config": el.engine_config(model.config), "layout": blob.layout,
            "vocabulary": list(model.vocabulary), "frame": co.FRAME,
            "nouns": list(co.AGENTS + co.PLACES),
            "classes": {"agents": list(co.AGENTS), "places": list(co.PLACES),
                        "cross": list(co.CROSS_VERBS), "chase": list(co.CHASE_VERBS),
                        "first": list(co.FIRST_ADJECTIVES),
                        "place": list(co.PLACE_ADJECTIVES),
                        "agent": list(co.AGENT_ADJECTIVES)},
            "held_out": [list(p) for p in _held_out_pairs()], "messages": MESSAGES}
    alt = ("pick the two nouns, the verb and the adjective of the sentence; the trained "
           "encoder names the noun 'it' refers to and shows its weights from 'it', in the page")
    state = f"the sentence {co.FRAME.format(**words)!r}"
    return el.assemble("coreference", ident, data, body,
                    ("model.js", "coreference.js"),
                    state=state, alt=alt, title=title,
                    templates=("coref_result", "coref_answer", "coref_table", "col_head",
                               "heat_row", "heat_cell"))
