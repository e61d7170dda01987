r"""The patching map (chapter 24): activation patching on one minimal pair, in the page.

The reader picks a minimal pair of sentences (or types a sentence, and the page builds its
twin by swapping the adjective, as :func:`~attention_lib.coreference_minimal_pairs` does);
the page runs the trained coreference encoder in JavaScript on both sentences, then once
more on the corrupt sentence for every site with the clean run's activation put back
there: each head's output, and the residual stream at each position entering each block
and leaving the last one. A map shows the fraction of the logit difference each site
restores, the numbers :func:`~attention_lib.coreference_patching` gives for that one pair.
A cell, clicked or reached with Tab and Enter, shows the probabilities of the two nouns in
that patched run beside those of the clean and the corrupt run.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import patching as pt
from .._validation import index
from ..model.hooks import capture_hooks
from ..training import coreference as co
from ..training.coreference import CoreferenceModel
from . import element as el

__all__ = ["patching_map", "patching_twin"]

#: What the page says (``{name}`` slots), in the words the ValueError uses too.
MESSAGES = {
    "empty": "type a sentence",
    "unknown": "the encoder does not know {words}",
    "long": "it has {n} words; the encoder reads at most {most}",
    "it": "it needs exactly one “it” (it has {n})",
    "nouns": ("it needs two different nouns for “it” to choose between, among "
              "{choices} (it has {nouns})"),
    "adjective": ("its last word, “{word}”, is not an adjective that decides what “it” is: "
                  "end it with one of {choices}"),
    "kind": ("“{word}” does not go with a second noun that is {kind} (“{noun}”): end it "
             "with one of {choices}"),
    "none": "no patched run shown yet: pick a cell of the map",
    **el.WEIGHT_MESSAGES,
}

#: How the page names a second noun's kind, and which adjectives go with it.
KINDS = {"place": "a place", "agent": "an animal or a person"}

#: The clean sentences of the pairs offered first, the corpus's frame with these words:
#: held-out sentences, two of 11 words and two of 12.
DEFAULT_WORDS = (
    {"first": "animal", "verb": "cross", "second": "street", "adjective": "tired"},
    {"first": "fox", "verb": "chase", "second": "dog", "adjective": "fast"},
    {"first": "girl", "verb": "walk across", "second": "yard", "adjective": "muddy"},
    {"first": "horse", "verb": "run across", "second": "field", "adjective": "slow"},
)

TITLE = "Patch one site from the clean run into the corrupt run, in this page"


def _kind(noun: str) -> str:
    return "place" if noun in co.PLACES else "agent"


@functools.cache
def _twins() -> dict[str, dict[str, str]]:
    """For a second noun of each kind: every adjective that goes with it and its twin, by
    the rule of :func:`~attention_lib.coreference_minimal_pairs` (run on one sentence each)."""
    out: dict[str, dict[str, str]] = {}
    for kind, second, seconds in (("place", co.PLACES[0], co.PLACE_ADJECTIVES),
                                  ("agent", co.AGENTS[1], co.AGENT_ADJECTIVES)):
        out[kind] = {}
        for adjective in co.FIRST_ADJECTIVES + seconds:
            sentence = co.FRAME.format(first=co.AGENTS[0], verb="chase", second=second,
                                       adjective=adjective)
            out[kind][adjective] = pt._twin(sentence).split()[-1]
    return out


def _quoted(words: Sequence[str]) -> str:
    return ", ".join(f"“{w}”" for w in words)


def _problem(sentence: str, vocabulary: Sequence[str], context: int) -> str | None:
    """Why the encoder cannot patch ``sentence`` (the page's words), or None."""
    words = sentence.split()
    if not words:
        return MESSAGES["empty"]
    known = set(vocabulary) - {co.PAD}
    unknown = list(dict.fromkeys(w for w in words if w not in known))
    if unknown:
        return el.fill(MESSAGES["unknown"], words=_quoted(unknown))
    if len(words) > context:
        return el.fill(MESSAGES["long"], n=len(words), most=context)
    if words.count("it") != 1:
        return el.fill(MESSAGES["it"], n=words.count("it"))
    nouns = [w for w in words if w in co.NOUNS]
    if len(nouns) != 2 or nouns[0] == nouns[1]:
        return el.fill(MESSAGES["nouns"], choices=_quoted(co.AGENTS + co.PLACES),
                       nouns=_quoted(nouns) if nouns else "none")
    twins = _twins()[_kind(nouns[1])]
    word = words[-1]
    if word not in twins:
        everything = {a for t in _twins().values() for a in t}
        key = "kind" if word in everything else "adjective"
        return el.fill(MESSAGES[key], word=word, kind=KINDS[_kind(nouns[1])], noun=nouns[1],
                       choices=_quoted(list(twins)))
    return None


def patching_twin(sentence: str) -> str:
    """The twin of a sentence the coreference encoder reads: its last word, the adjective,
    swapped for the one that makes "it" the other noun, as the patching map builds it.

    Parameters
    ----------
    sentence : str
        Words of the encoder's vocabulary separated by spaces (at most 12), one "it", two
        different nouns, and as last word an adjective of the corpus that goes with the
        second noun (a place, or an animal or a person).

    Returns
    -------
    str
        The same words with the other adjective: the k-th adjective of the first noun
        goes with the k-th of the second (:func:`~attention_lib.coreference_minimal_pairs`).

    Raises
    ------
    ValueError
        For a sentence the encoder cannot patch, with the reason the page gives.

    Examples
    --------
    >>> patching_twin("The animal didn't cross the street because it was too tired")
    "The animal didn't cross the street because it was too wide"
    >>> patching_twin("The dog didn't follow the fox because it was too clever")
    "The dog didn't follow the fox because it was too slow"
    """
    if not isinstance(sentence, str):
        raise TypeError(f"sentence={sentence!r}; expected a str of words separated by spaces")
    problem = _problem(sentence, co._vocabulary(), co.coreference_config().context)
    if problem:
        raise ValueError(f"sentence={sentence!r}: {problem}")
    words = sentence.split()
    second = [w for w in words if w in co.NOUNS][1]
    return " ".join([*words[:-1], _twins()[_kind(second)][words[-1]]])


def _default_pairs() -> list[tuple[str, str]]:
    sentences = [co.FRAME.format(**words) for words in DEFAULT_WORDS]
    return [(s, patching_twin(s)) for s in sentences]


def _check_pairs(model: CoreferenceModel, pairs: Any) -> list[tuple[str, str]]:
    """``pairs`` as a list of (clean, corrupt) pairs the library patches, one at a time."""
    cleans, corrupts = pt._check_pairs(pairs)
    out = []
    for n, pair in enumerate(zip(cleans, corrupts, strict=True)):
        try:
            model.encode(list(pair))  # words the encoder knows, one "it", two nouns
        except ValueError as e:
            raise ValueError(f"pairs[{n}]: {e}") from None
        try:
            pt._changed_words([pair[0]], [pair[1]])  # one adjective, the other referent
        except ValueError as e:
            raise ValueError(str(e).replace("pairs[0]", f"pairs[{n}]", 1)) from None
        out.append((pair[0], pair[1]))
    return out


def _runs(model: CoreferenceModel, clean: str, corrupt: str, site: str, where: Any,
          ) -> list[np.ndarray]:
    """The two nouns' logits at "it" on the clean run, the corrupt run, and the corrupt run
    with the clean activation put back at ``site`` where ``where`` indexes one sentence's
    activation (``(i,)`` at a head site: head ``i``, every position)."""
    batches = model.encode([clean]), model.encode([corrupt])
    kept: dict[str, np.ndarray] = {}
    logits = [co._forward(model.params, model.config, batches[0],
                          hooks=capture_hooks(kept, [site]))[0][0],
              co._forward(model.params, model.config, batches[1])[0][0]]

    def put_back(a: np.ndarray) -> np.ndarray:
        a = a.copy()
        a[(0, *where)] = kept[site][(0, *where)]
        return a

    logits.append(co._forward(model.params, model.config, batches[1],
                              hooks={site: put_back})[0][0])
    return logits


def _labels(clean: str, corrupt: str) -> list[str]:
    return [a if a == b else f"{a}/{b}" for a, b in zip(clean.split(), corrupt.split(),
                                                        strict=True)]


def _cell(value: float, site: str, index: int, name: str, on: bool) -> str:
    shade = min(max(value, 0.0), 1.0) if np.isfinite(value) else 0.0
    return el.piece("patch_cell", dark=el.dark(shade), on=" lc-on" if on else "",
                    w=el.fmt(shade, 4), site=site, index=index, exact="", disabled=" disabled",
                    pressed="true" if on else "false", what=html.escape(name),
                    value=el.fmt(value, 2) if np.isfinite(value) else "–")


def _result(model: CoreferenceModel, clean: str, corrupt: str) -> str:
    """The pair, its runs with L1 H1 patched, and the map, as the script writes them."""
    result = pt.coreference_patching(model, [(clean, corrupt)])
    L, h = model.config.n_layers, model.config.n_heads
    nouns = model.candidates(clean)
    referent = int(pt._referent(clean.split()[_changed(clean, corrupt)]))
    logits = _runs(model, clean, corrupt, "blocks.0.attn.heads", (0,))  # head 0, everywhere
    names = ["clean", "corrupt", "patched: head L1 H1"]
    rows = []
    for name, lg in zip(names, logits, strict=True):
        p = np.exp(lg - lg.max())
        p /= p.sum()
        rows.append(el.piece("patch_run", cls="", run=name, p0=el.fmt(p[0], 3), e0="",
                             p1=el.fmt(p[1], 3), e1="", diff=el.fmt(lg[referent]
                                                                   - lg[1 - referent], 2)))
    heads = "".join(
        el.piece("heat_row", label=f"L{layer + 1}", cells="".join(
            _cell(result.heads[layer, i], f"blocks.{layer}.attn.heads", i,
                  f"head L{layer + 1} H{i + 1}", layer == 0 and i == 0) for i in range(h)))
        for layer in range(L))
    head_cols = "".join(el.piece("col_head", word=f"H{i + 1}") for i in range(h))
    sites = _site_names(L)
    resid = "".join(
        el.piece("heat_row", label=html.escape(label), cells="".join(
            _cell(result.resid[r, j], result.sites[r], j, f"{label}, {sites[r]}", False)
            for r in range(L + 1)))
        for j, label in enumerate(_labels(clean, corrupt)))
    resid_cols = "".join(el.piece("col_head", word=name) for name in sites)
    return el.piece("patch_result", clean=html.escape(clean), corrupt=html.escape(corrupt),
                    noun0=html.escape(nouns[0]), noun1=html.escape(nouns[1]),
                    referent=html.escape(nouns[referent]), runs="".join(rows),
                    heads=el.piece("patch_heads", cols=head_cols, rows=heads),
                    resid=el.piece("patch_resid", cols=resid_cols, rows=resid))


def _site_names(n_layers: int) -> list[str]:
    return [f"into block {layer + 1}" for layer in range(n_layers)] + [
        f"out of block {n_layers}"]


def patching_map(
    model: CoreferenceModel | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
    *,
    pair: int = 0,
    sentence: str = "",
    title: str = TITLE,
) -> el.ControlElement:
    r"""Activation patching of the trained coreference encoder on one minimal pair, run in
    the browser: a map of what each head and each position of the residual stream restores.

    A list picks a pair of ``pairs``; a text field takes a sentence of the reader's, whose
    twin the page builds (:func:`patching_twin`). The script runs the encoder in
    JavaScript on the weights, on the clean and the corrupt sentence, then on the corrupt
    sentence once for every site with the clean run's activation put back there, and
    shows a map: one cell per head (layer by head), one per position and residual-stream
    layer (a row per word; columns: entering each block, leaving the last). A cell holds
    the fraction of the logit difference that site restores. Clicked, or reached with Tab
    and pressed with Enter, it shows the probabilities of the two nouns in that patched
    run, beside the clean and the corrupt run's.

    Parameters
    ----------
    model : CoreferenceModel, optional
        Default :func:`~attention_lib.trained_coreference_model`. Its weights must be
        numbers float32 holds exactly (the page receives float32), as the trained
        models' are.
    pairs : sequence of (str, str), optional
        ``(clean, corrupt)`` sentences that differ in one word, the adjective, one of each
        referent (:func:`~attention_lib.coreference_minimal_pairs`); each pair is patched
        on its own, so pairs of 11 and of 12 words may be mixed. Default: four held-out
        sentences of the corpus, two of each length, with their twins.
    pair : int, default 0
        The pair shown first.
    sentence : str, default ""
        Text shown in the field for typed sentences (nothing is patched until the reader
        asks).
    title : str

    Returns
    -------
    ControlElement
        Before its script runs, it shows the library's numbers for the pair shown first,
        with the run that patches head L1 H1.

    Notes
    -----
    With :math:`r` the clean sentence's referent and :math:`o` the other noun, each run's
    logit difference is :math:`\Delta = \ell_r - \ell_o` at "it", and a site restores
    :math:`(\Delta_{\text{patched}} - \Delta_{\text{corrupt}}) /
    (\Delta_{\text{clean}} - \Delta_{\text{corrupt}})`: the numbers of
    :func:`~attention_lib.coreference_patching` for the one pair, computed in double
    precision. A head's output is put back at every position (site
    ``"blocks.l.attn.heads"``, that head's slice); the residual stream at one position
    (``"blocks.l.resid_pre"``, and ``"blocks.{L-1}.resid_post"`` leaving the last block).
    The cost is :math:`2 + L h + (L + 1) T` forward passes of one sentence, a few
    milliseconds in a browser.

    Examples
    --------
    >>> markup = patching_map()._repr_html_()
    >>> static = markup.split('<script type="application/octet-stream"')[0]
    >>> static.count('class="lc-site"')  # 4 heads, 11 words x 3 layers of the stream
    37
    """
    if model is None:
        model = co.trained_coreference_model()
    if not isinstance(model, CoreferenceModel):
        raise TypeError(f"model is {type(model).__name__}; expected a CoreferenceModel "
                        "(trained_coreference_model or train_coreference_model)")
    pairs = _default_pairs() if pairs is None else _check_pairs(model, pairs)
    pair = _index(pair, len(pairs))
    if not isinstance(sentence, str):
        raise TypeError(f"sentence={sentence!r}; expected a str")
    el.engine_config(model.config)  # refuses a configuration the page cannot run
    blob = el.pack_weights(model.params, list(model.params), 4,
                           "the trained models round to them")
    ident = el.uid("patching", model.config.as_dict(), blob.check, pairs, pair, sentence, title)
    clean, corrupt = pairs[pair]
    options = "".join(
        f'<option value="{n}"{" selected" if n == pair else ""}>'
        f'{html.escape(c)} / {html.escape(d.split()[_changed(c, d)])}</option>'
        for n, (c, d) in enumerate(pairs))
    body = f"""<div class="lc-controls">
<div class="lc-field lc-field-wide"><label for="{ident}-pair">minimal pair (clean / the \
corrupt adjective)</label>
<select class="lc-patch-pair" id="{ident}-pair" disabled autocomplete="off">{options}</select></div>
<div class="lc-field lc-field-wide"><label for="{ident}-typed">or a sentence of yours (its \
twin swaps the last word, the adjective)</label>
<input type="text" class="lc-typed" id="{ident}-typed" value="{html.escape(sentence)}" \
disabled autocomplete="off" spellcheck="false" aria-describedby="{ident}-err">
<button type="button" class="lc-use" disabled>Patch this sentence</button></div></div>
<p class="lc-error" id="{ident}-err" role="status" aria-live="polite"></p>
<p class="lc-status lc-hint" role="status" aria-live="polite"></p>
<div class="lc-result">{_result(model, clean, corrupt)}</div>
{blob.markup("patching")}"""
    data = {"config": el.engine_config(model.config), "layout": blob.layout,
            "vocabulary": list(model.vocabulary), "pairs": [list(p) for p in pairs],
            "nouns": {n: _kind(n) for n in co.AGENTS + co.PLACES},
            "first": list(co.FIRST_ADJECTIVES), "twins": _twins(), "kinds": KINDS,
            "sites": _site_names(model.config.n_layers), "messages": MESSAGES,
            "dark_from": el.HEAT_DARK_FROM}
    alt = ("pick a minimal pair or type a sentence; the trained encoder runs in the page, and "
           "a map shows how much of its answer each head and each position of the residual "
           "stream restores when patched from the clean run into the corrupt run")
    state = f"the pair {clean!r} / {corrupt.split()[-1]!r}, with head L1 H1 patched"
    return el.assemble("patching", ident, data, body, ("model.js", "patching.js"),
                       state=state, alt=alt, title=title,
                       templates=("patch_result", "patch_run", "patch_heads", "patch_resid",
                                  "patch_cell", "heat_row", "col_head", "patch_error"))


def _changed(clean: str, corrupt: str) -> int:
    return next(j for j, (a, b) in enumerate(zip(clean.split(), corrupt.split(), strict=True))
                if a != b)


def _index(value: Any, n: int) -> int:
    try:
        return index(value, n, "pair")
    except ValueError:
        raise ValueError(f"pair={value!r}; expected the index of a pair, 0 to {n - 1}") from None
