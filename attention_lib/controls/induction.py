r"""The induction playground (chapter 20): the trained attention-only GPT on a typed sequence.

The reader types tokens of the induction task, one character per token, picks a position and
may remove heads; the page runs the model (:func:`~attention_lib.train_induction_model`) in
JavaScript from the weights embedded in the element, rotary positions included, and shows
where every head looks from that position, which position copying points to (the one right
after the last earlier occurrence of the current token) and what the model predicts. The
weights travel as float64 bytes, so the page computes with the very numbers of the library.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

import numpy as np

from .._validation import index, positive_int
from ..gpt import GPTConfig, gpt_attention_weights, gpt_logits, gpt_parameter_shapes
from ..gpt.config import check_head_mask, check_params
from ..softmax import softmax
from . import element as el
from .retrieval import SEPARATOR

__all__ = ["INDUCTION_ALPHABET", "copy_targets", "induction_playground",
           "parse_induction_sequence"]

#: The characters that stand for the tokens 0 .. 63, in the order base64 writes its digits.
INDUCTION_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

#: What is wrong with a typed sequence, in the words the page and the ValueError use.
MESSAGES = {
    "empty": "type at least one token, e.g. {example}",
    "not_token": "{chars}: not among the model's {n} tokens, which are {span}",
    "too_long": "at most {most} tokens (the model reads {most}); this has {n}",
}


def _span(n: int) -> str:
    """The first ``n`` characters of the alphabet, written as ranges: ``A–Z, a–z, 0–9, +, /``."""
    runs, chars = [], INDUCTION_ALPHABET[:n]
    for group in ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz", "0123456789"):
        part = "".join(c for c in chars if c in group)
        if part:
            runs.append(part[0] if len(part) == 1 else f"{part[0]}–{part[-1]}")
    runs += [c for c in chars if c in "+/"]
    return ", ".join(runs)


def _sequence_problem(text: str, n: int, context: int) -> tuple[str | None, list[int] | None]:
    """What is wrong with ``text`` (as the script words it), or its token ids."""
    chars = list(re.sub(SEPARATOR, "", text))  # code points, as the script's [...text]
    alphabet = INDUCTION_ALPHABET[:n]
    if not chars:
        return el.fill(MESSAGES["empty"], example=alphabet[:4] + alphabet[:4]), None
    bad = list(dict.fromkeys(c for c in chars if c not in alphabet))
    if bad:
        return el.fill(MESSAGES["not_token"], n=n, span=_span(n),
                    chars=" ".join(json.dumps(c, ensure_ascii=False) for c in bad)), None
    if len(chars) > context:
        return el.fill(MESSAGES["too_long"], most=context, n=len(chars)), None
    return None, [alphabet.index(c) for c in chars]


def parse_induction_sequence(sequence: str, *, vocab_size: int = 64,
                             context: int = 32) -> np.ndarray:
    """Read a typed sequence of the induction task: one character per token.

    Parameters
    ----------
    sequence : str
        Characters of :data:`INDUCTION_ALPHABET` (``A`` is token 0, ``/`` token 63); white
        space of any kind (:data:`~attention_lib.controls.SEPARATOR`) is skipped, so that
        ``"Qx7 Qx7"`` is six tokens. From one token to ``context``.
    vocab_size : int, default 64
        The model's vocabulary: its tokens are the first ``vocab_size`` characters.
    context : int, default 32
        The most tokens the model reads.

    Returns
    -------
    numpy.ndarray of int64, shape (n,)

    Raises
    ------
    TypeError
        When ``sequence`` is not a str (such as ``'Qx7 Qx7'``).
    ValueError
        Naming ``sequence`` and saying what is wrong, in the words
        :func:`induction_playground` shows in the page.

    Examples
    --------
    >>> parse_induction_sequence("Qx7 Qx7").tolist()
    [16, 49, 59, 16, 49, 59]
    """
    if not isinstance(sequence, str):
        raise TypeError(f"sequence={sequence!r}; expected a str such as 'Qx7 Qx7'")
    vocab_size = positive_int(vocab_size, "vocab_size")
    if vocab_size > len(INDUCTION_ALPHABET):
        raise ValueError(f"vocab_size={vocab_size}; expected at most {len(INDUCTION_ALPHABET)}, "
                         "the characters of INDUCTION_ALPHABET")
    context = positive_int(context, "context")
    problem, ids = _sequence_problem(sequence, vocab_size, context)
    if problem is not None:
        raise ValueError(f"sequence={sequence!r:.60}: {problem}")
    return np.array(ids, dtype=np.int64)


def copy_targets(tokens: Any) -> np.ndarray:
    """For every position, the position that copying reads: right after the last earlier
    occurrence of the same token.

    Parameters
    ----------
    tokens : array_like of int, shape (n,)

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
        Entry ``t`` is ``j + 1`` for the largest ``j < t`` with ``tokens[j] == tokens[t]``
        (the token at ``j + 1`` followed the earlier copy, so copying predicts it next), or
        ``-1`` where the token has not appeared before. ``j + 1 <= t`` always.

    Examples
    --------
    >>> copy_targets([5, 8, 2, 5, 8]).tolist()
    [-1, -1, -1, 1, 2]
    """
    t = np.asarray(tokens)
    if t.ndim != 1 or t.dtype.kind not in "iu":
        raise ValueError(f"tokens have shape {t.shape}, dtype {t.dtype}; expected a 1-D "
                         "integer array")
    out = np.full(t.size, -1, dtype=np.int64)
    last: dict[int, int] = {}
    for pos, tok in enumerate(t.tolist()):
        if tok in last:
            out[pos] = last[tok] + 1
        last[tok] = pos
    return out


def _cell(w: float, char: str, target: bool) -> str:
    return el.piece("ind_cell", cls=el.dark(w) + (" lc-target" if target else ""), w=el.fmt(w, 4),
                 exact="", char=html.escape(char))


def _view(chars: str, weights: np.ndarray, logits: np.ndarray, targets: np.ndarray,
          pos: int, mask: np.ndarray) -> dict[str, str]:
    """The markup at position ``pos``: token chips, the summary and one row per head.

    ``weights`` (L, h, T, T) and ``logits`` (T, V) of the sequence; rounded numbers only, so
    that the markup shown before the script runs does not depend on the last bits.
    """
    k = int(targets[pos])
    chips = "".join(el.piece("token_chip", j=j, token=html.escape(c), tail="",
                          cls=" ".join(name for name, on in (("lc-new", j == pos),
                                                              ("lc-target", j == k),
                                                              ("lc-future", j > pos)) if on))
                    for j, c in enumerate(chars))
    p = softmax(np.asarray(logits[pos], dtype=np.float64))
    top = int(np.argmax(p))
    slots = {"t": pos, "token": html.escape(chars[pos]),
             "top": html.escape(INDUCTION_ALPHABET[top]), "p_top": el.fmt(p[top], 3)}
    if k >= 0:
        summary = el.piece("ind_copy", j=k - 1, k=k, next=html.escape(chars[k]),
                        p_copy=el.fmt(p[INDUCTION_ALPHABET.index(chars[k])], 3), **slots)
    else:
        summary = el.piece("ind_fresh", **slots)
    rows = []
    n_layers, n_heads = weights.shape[:2]
    for layer in range(n_layers):
        for head in range(n_heads):
            w = weights[layer, head, pos, :pos + 1]
            best = int(np.argmax(w))
            removed = not mask[layer, head]
            rows.append(el.piece(
                "ind_head_row", layer=layer + 1, head=head + 1,
                cls="lc-off" if removed else "", note=" (removed)" if removed else "",
                cells="".join(_cell(float(w[j]), chars[j], j == k) for j in range(pos + 1)),
                char=html.escape(chars[best]), back=pos - best, exact="",
                weight=el.fmt(w[best], 2)))
    return {"chips": chips, "summary": summary, "rows": "".join(rows)}


def induction_playground(
    params: dict[str, np.ndarray],
    config: GPTConfig,
    *,
    sequence: str = "Kd9 Zr2gHvLp Kd9 Zr2gHvLp xq",
    position: int | None = None,
    head_mask: Any = None,
    title: str = "The trained model, running in this page",
) -> el.ControlElement:
    r"""An attention-only GPT run in the browser on a sequence of tokens the reader types.

    The reader edits the sequence (see :func:`parse_induction_sequence`); while it is valid,
    the script runs the model's forward pass in JavaScript at every keystroke, in double
    precision from the float64 weights in the element, and the view moves to the last
    token. A slider picks the position :math:`t` to look from; a check box per head removes
    that head (its output scaled by 0, as ``head_mask=`` of :func:`~attention_lib.gpt_logits`
    does). The page then shows the tokens with :math:`t` and its copy target marked
    (:func:`copy_targets`), a sentence naming the token that copying predicts and the
    probabilities the model gives it and its top choice, and, for every head, its weights
    on positions :math:`0 \dots t` (each token shaded by its weight, the copy target
    outlined) with the token it weights most. Anything else is refused with a message
    saying what is wrong, and nothing is computed.

    Parameters
    ----------
    params : dict of str to numpy.ndarray
        Trained parameters, float64 (or float32, sent as float64 numbers).
    config : GPTConfig
        Attention only, tied embeddings, at most 64 tokens (:data:`INDUCTION_ALPHABET`),
        any kind of positions (:func:`~attention_lib.train_induction_model` uses rotary
        ones).
    sequence : str
        The sequence shown first.
    position : int, optional
        The position looked from first; defaults to the last token.
    head_mask : array_like of bool, shape (n_layers, n_heads), optional
        Heads removed at first (0 or False); the reader's check boxes start so.
    title : str

    Returns
    -------
    ControlElement
        Before its script runs, it shows the library's numbers for the starting state.

    Notes
    -----
    The script computes :func:`~attention_lib.gpt_attention_weights` and
    :func:`~attention_lib.gpt_logits` of the sequence: token embedding, then per layer layer
    norm, the projections, rotary positions on queries and keys (angles
    :math:`p\,\omega_i`, :math:`\omega_i = 10000^{-2i/d_{\text{head}}}`), causal softmax of
    :math:`q k^{\mathsf T}/\sqrt{d_{\text{head}}}` per head, each head's output times its
    mask entry, the output projection and the residual; then the final layer norm and the
    tied output layer. The tests hold it to the library within :math:`10^{-9}`.

    Examples
    --------
    >>> import attention_lib as al
    >>> config = al.induction_config()
    >>> markup = induction_playground(al.init_gpt(config, dtype=np.float64), config,
    ...                               sequence="ABCABC")._repr_html_()
    >>> markup.split("<script>")[0].count('class="lc-hw')   # 4 heads, 6 positions each
    24
    """
    dtype = check_params(params, config)
    if not config.attention_only or not config.tie_embeddings:
        raise ValueError(f"config has attention_only={config.attention_only} and "
                         f"tie_embeddings={config.tie_embeddings}; the page runs attention-only "
                         "models with tied embeddings")
    if config.vocab_size > len(INDUCTION_ALPHABET):
        raise ValueError(f"config has vocab_size={config.vocab_size}; the page writes tokens "
                         f"as the {len(INDUCTION_ALPHABET)} characters of INDUCTION_ALPHABET, "
                         f"so expected at most {len(INDUCTION_ALPHABET)}")
    ids = parse_induction_sequence(sequence, vocab_size=config.vocab_size,
                                   context=config.context)
    pos = ids.size - 1 if position is None else index(position, ids.size, "position")
    mask = check_head_mask(head_mask, config, dtype)
    mask = np.ones((config.n_layers, config.n_heads)) if mask is None else mask
    if not np.isin(mask, (0, 1)).all():
        raise ValueError("head_mask has entries other than 0 and 1; the page keeps (1) or "
                         "removes (0) a head")
    keep = mask.astype(bool)

    chars = "".join(INDUCTION_ALPHABET[i] for i in ids)
    weights = gpt_attention_weights(params, config, ids[None], head_mask=keep)[:, 0]
    logits = gpt_logits(params, config, ids[None], head_mask=keep)[0]  # (T, V)
    view = _view(chars, weights, logits, copy_targets(ids), pos, keep)

    blob = el.pack_weights(params, list(gpt_parameter_shapes(config)), 8)
    ident = el.uid("induction", config.as_dict(), sequence, pos, keep.tolist(), title, blob.check)
    n = config.vocab_size
    rules = (f"One character per token: {_span(n)} ({n} tokens; spaces are skipped, so "
             f"you can group them). At most {config.context} tokens. Anything else is "
             "refused with a message.")
    boxes = "".join(
        f'<div class="lc-field"><input type="checkbox" class="lc-remove" '
        f'id="{ident}-rm-{layer}-{head}" data-layer="{layer}" data-head="{head}" disabled'
        f'{"" if keep[layer, head] else " checked"}><label for="{ident}-rm-{layer}-{head}">'
        f"remove L{layer + 1} H{head + 1}</label></div>"
        for layer in range(config.n_layers) for head in range(config.n_heads))
    slider = el.position_slider(ident, "look from position", ids.size - 1, pos, f"t = {pos}")
    body = f"""{el.sequence_field(ident, "tokens", sequence, rules)}
<div class="lc-result" data-logits="{html.escape(json.dumps(logits[pos].tolist()))}">
<ul class="lc-tokens lc-ind-tokens" aria-label="the tokens by position">{view["chips"]}</ul>
<div class="lc-controls">{slider}</div>
{boxes}</div>
<p class="lc-summary">{view["summary"]}</p>
<table class="lc-heads"><thead><tr><th scope="col">head</th><th scope="col">weights on
positions 0 to t</th><th scope="col" class="lc-num lc-wrap">most weight</th></tr></thead>
<tbody>{view["rows"]}</tbody></table></div>"""
    data = {"config": el.engine_config(config), "layout": blob.layout, "weights": blob.encoded,
            "weights_check": blob.check, "alphabet": INDUCTION_ALPHABET[:n],
            "span": _span(n), "separator": SEPARATOR,
            "messages": {**MESSAGES, **el.WEIGHT_MESSAGES}}
    alt = ("type a sequence of tokens with a repeat; the trained model runs in the page and "
           "shows where each head looks from a chosen position and what it predicts")
    state = f"the sequence {sequence.strip()} seen from position {pos}"
    return el.assemble("induction", ident, data, body,
                    ("model.js", "induction.js"), state=state, alt=alt,
                    title=title, templates=("token_chip", "ind_cell", "ind_head_row",
                                            "ind_copy", "ind_fresh", "sequence_error"))
