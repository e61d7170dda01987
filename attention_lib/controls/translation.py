r"""The translation explorer (chapter 22): the trained encoder-decoder translates in the page.

The reader builds a source sentence from lists (two noun phrases with an optional
adjective each, and a verb); the page runs the encoder and the greedy decoder of
:func:`~attention_lib.train_translation_model` in JavaScript, shows the translation beside
the grammar's, says whether the sentence's adjective-noun pairs occur in training, and
draws one cross-attention head as a heatmap over the source, with the gold alignment
outlined.
"""

from __future__ import annotations

import html

import numpy as np

from ..training import translation as tr
from ..training.translation import TranslationModel, translate_by_rule
from . import element as el

__all__ = ["parse_translation_source", "translation_explorer"]

NONE = "(none)"
SLOTS = (("det1", "1st determiner", tuple(tr.DETERMINERS)),
         ("adj1", "1st adjective", (NONE, *tr.ADJECTIVES)),
         ("noun1", "1st noun", tuple(tr.NOUNS)),
         ("verb", "verb", tuple(tr.VERBS)),
         ("det2", "2nd determiner", tuple(tr.DETERMINERS)),
         ("adj2", "2nd adjective", (NONE, *tr.ADJECTIVES)),
         ("noun2", "2nd noun", tuple(tr.NOUNS)))

#: What the page says (``{name}`` slots).
MESSAGES = {
    "same": "the same",
    "different": "different",
    "seen": "Every adjective–noun pair of this sentence occurs in the training sentences.",
    "unseen": "Never in a training sentence: {pairs}.",
    "no_pair": "This sentence has no adjective.",
    **el.WEIGHT_MESSAGES,
}


def parse_translation_source(source: str) -> dict[str, str]:
    """The words of a source sentence by slot (``det1``, ``adj1``, ... ``noun2``).

    Raises ``ValueError`` for a sentence the grammar does not make: a determiner, an
    optional adjective, a noun, a verb, and again a determiner, an optional adjective and
    a noun, from the lexicon.

    Examples
    --------
    >>> parse_translation_source("the big dog sees a cat")["adj2"]
    '(none)'
    """
    if not isinstance(source, str):
        raise TypeError(f"source={source!r}; expected a str such as 'the big dog sees a cat'")
    words = source.split()
    slots: dict[str, str] = {}
    i = 0
    for name, _, choices in SLOTS:
        optional = NONE in choices
        if i < len(words) and words[i] in choices:
            slots[name] = words[i]
            i += 1
        elif optional:
            slots[name] = NONE
        else:
            raise ValueError(f"source={source!r} is not a sentence of the corpus's grammar: "
                             "expected a determiner, an optional adjective, a noun, a verb, "
                             "a determiner, an optional adjective and a noun, words of the "
                             f"lexicon {sorted(tr.LEXICON)}")
    if i != len(words):
        raise ValueError(f"source={source!r} has words after the second noun: {words[i:]}")
    return slots


def _sentence(slots: dict[str, str]) -> str:
    return " ".join(w for w in slots.values() if w != NONE)


def _pairs_note(slots: dict[str, str]) -> str:
    held = set(tr.translation_held_out_pairs())
    pairs = [(slots[a], slots[n]) for a, n in (("adj1", "noun1"), ("adj2", "noun2"))
             if slots[a] != NONE]
    if not pairs:
        return MESSAGES["no_pair"]
    unseen = [f"{a} {n}" for a, n in pairs if (a, n) in held]
    return el.fill(MESSAGES["unseen"], pairs=", ".join(unseen)) if unseen else MESSAGES["seen"]


def _result(model: TranslationModel, slots: dict[str, str], head: tuple[int, int]) -> str:
    source = _sentence(slots)
    said = model.translate(source)
    rule, alignment = translate_by_rule(source)
    rows = []
    if said:
        w = model.cross_attention(source, said)[head]  # (m, n)
        gold = rule.split()
        for j, word in enumerate(said.split()):
            cells = "".join(
                el.piece("align_cell", w=el.fmt(x, 4), exact="", weight=el.fmt(x, 2),
                         dark=el.dark(x), gold=" lc-gold" if j < len(gold) and gold[j] == word
                         and alignment[j] == i else "")
                for i, x in enumerate(w[j]))
            rows.append(el.piece("heat_row", label=html.escape(word), cells=cells))
    heads = "".join(el.piece("col_head", word=html.escape(x)) for x in source.split())
    table = el.piece("tr_table", heads=heads, rows="".join(rows))
    return el.piece("tr_result", source=html.escape(source), translation=html.escape(said),
                 rule=html.escape(rule), verdict=MESSAGES["same" if said == rule else "different"],
                 pairs=_pairs_note(slots), head=f"layer {head[0] + 1}, head {head[1] + 1}",
                 table=table)


def translation_explorer(
    model: TranslationModel,
    *,
    source: str = "the big dog sees a small cat",
    head: tuple[int, int] = (1, 0),
    title: str = "The trained encoder-decoder translates, in this page",
) -> el.ControlElement:
    """The trained toy translator, run in the browser on a sentence the reader builds.

    Seven lists pick the source words (a determiner, an adjective or none, a noun, a verb,
    and again a determiner, an adjective or none and a noun), an eighth the cross-attention
    head to draw. The script encodes the sentence and decodes greedily in JavaScript on the
    model's weights, then shows the translation beside the grammar's
    (:func:`~attention_lib.translate_by_rule`), whether the sentence's adjective-noun pairs
    occur in training, and the head's weights from each target word's position over the
    source words, the aligned source word outlined (where the model's word is the
    grammar's).

    Parameters
    ----------
    model : TranslationModel
        From :func:`~attention_lib.train_translation_model` (weights that float32 holds
        exactly; they load when the reader first changes a list).
    source : str
        The sentence shown first (:func:`parse_translation_source` reads it).
    head : (int, int)
        The cross-attention head shown first, ``(layer, head)`` numbered from 0.
    title : str

    Returns
    -------
    ControlElement
        Before its script runs, it shows the library's translation of ``source`` and
        the head ``head``.

    Notes
    -----
    The script computes what :meth:`~attention_lib.TranslationModel.translate` and
    :meth:`~attention_lib.TranslationModel.cross_attention` return, in double precision.

    Examples
    --------
    >>> import attention_lib as al
    >>> markup = translation_explorer(al.train_translation_model(steps=1))._repr_html_()
    >>> markup.count("<select")
    8
    """
    if not isinstance(model, TranslationModel):
        raise TypeError(f"model is {type(model).__name__}; expected a TranslationModel "
                        "(from train_translation_model)")
    slots = parse_translation_source(source)
    dec = model.configs[1]
    if not (isinstance(head, tuple) and len(head) == 2
            and all(isinstance(x, int | np.integer) and not isinstance(x, bool) for x in head)
            and 0 <= head[0] < dec.n_layers and 0 <= head[1] < dec.n_heads):
        raise ValueError(f"head={head!r}; expected (layer, head) with layer below "
                         f"{dec.n_layers} and head below {dec.n_heads}")
    head = (int(head[0]), int(head[1]))
    blob = el.pack_weights(model.params, list(model.params), 4, "the trained models round to them")
    ident = el.uid("translation", blob.check, slots, head, title)
    lists = []
    for name, label, choices in SLOTS:
        options = "".join(f'<option value="{html.escape(c)}"'
                          f'{" selected" if c == slots[name] else ""}>{html.escape(c)}</option>'
                          for c in choices)
        lists.append(f'<div class="lc-field"><label for="{ident}-{name}">{label}</label>'
                     f'<select class="lc-{name}" id="{ident}-{name}" disabled '
                     f'autocomplete="off">{options}</select></div>')
    head_options = "".join(
        f'<option value="{layer},{h}"{" selected" if (layer, h) == head else ""}>'
        f"layer {layer + 1}, head {h + 1}</option>"
        for layer in range(dec.n_layers) for h in range(dec.n_heads))
    lists.append(f'<div class="lc-field"><label for="{ident}-head">head shown</label>'
                 f'<select class="lc-head" id="{ident}-head" disabled autocomplete="off">'
                 f"{head_options}</select></div>")
    src_vocab, tgt_vocab = tr.vocabularies()
    body = f"""<div class="lc-controls">{"".join(lists)}</div>
<p class="lc-error" role="status" aria-live="polite"></p>
<p class="lc-status lc-hint" role="status" aria-live="polite"></p>
<div class="lc-result">{_result(model, slots, head)}</div>
{blob.markup("translation")}"""
    data = {"configs": [el.engine_config(model.configs[0], prefix="enc."),
                        el.engine_config(dec, prefix="dec.")],
            "layout": blob.layout, "source_vocabulary": list(src_vocab),
            "target_vocabulary": list(tgt_vocab), "lexicon": tr.LEXICON,
            "verbs": list(tr.VERBS), "adjectives": list(tr.ADJECTIVES),
            "held_out": [list(p) for p in tr.translation_held_out_pairs()],
            "slots": [name for name, _, _ in SLOTS], "none": NONE,
            "max_words": tr.TARGET_CONTEXT - 1, "messages": MESSAGES}
    alt = ("build a sentence from lists; the trained encoder-decoder translates it in the page "
           "and shows a cross-attention head over the source words, the alignment outlined")
    return el.assemble("translation", ident, data, body,
                    ("model.js", "translation.js"),
                    state=f"the sentence {_sentence(slots)!r}", alt=alt, title=title,
                    templates=("tr_result", "tr_table", "col_head", "heat_row",
                               "align_cell"))
