r"""Reading a trained GPT's heads: where each looks, what it moves, what it is worth.

Three measurements, each a number computed over text, never a picture alone:

- :func:`text_relations` names, for every position of a text, the earlier position that a
  relation points to (the previous character, the start of the word, the speaker's name,
  ...), and :func:`weight_on_relation` measures how much weight each head puts there;
- :func:`head_value_norms` gives the size of what each head would move from each
  position, :math:`\lVert \mathbf v_j W_O^{(h)} \rVert`, so that weight times size says
  how much a position really contributes to the head's output (chapter 6's caveat:
  weight is not contribution);
- ``head_mask=`` of :func:`~attention_lib.gpt_logits` removes heads from a model (their
  outputs scaled by 0), so that the loss without them says what they were worth.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import as_real_array, describe, real_number
from ..model.hooks import capture_hooks
from ..model.stack import stack_forward
from .config import GPTConfig, check_params, check_tokens

__all__ = ["RELATIONS", "head_value_norms", "text_relations", "weight_on_relation"]

#: The relations :func:`text_relations` knows, with what each points to from position t.
RELATIONS = {
    "previous": "the character before (t - 1)",
    "word_start": "the last space or new line before t (where the current word begins)",
    "line_start": "the last new line before t (where the current line begins)",
    "speaker": "the colon ending the name of the speaker of the current speech",
    "same_char": "the last earlier occurrence of the character at t",
    "induction": ("the character after the last earlier occurrence of the two characters "
                  "ending at t (copying what followed them before)"),
}


def text_relations(text: str) -> dict[str, np.ndarray]:
    """For every position of ``text``, the earlier position each relation points to.

    Parameters
    ----------
    text : str
        A window of text, as the model reads it (position 0 is its first character).

    Returns
    -------
    dict of str to numpy.ndarray of int64, shape (len(text),)
        One array per name of :data:`RELATIONS`; entry ``t`` is a position ``j <= t``, or
        ``-1`` where the relation points nowhere inside the window (no earlier space, no
        speaker name in sight, ...). A speaker's name is a line that ends with a colon
        and follows a blank line (or opens the window).

    Examples
    --------
    >>> r = text_relations("Romeo:\\nI fear")
    >>> r["previous"][:3].tolist(), int(r["speaker"][-1]), int(r["word_start"][-1])
    ([-1, 0, 1], 5, 8)
    """
    if not isinstance(text, str):
        raise TypeError(f"text is {type(text).__name__}; expected a str")
    n = len(text)
    out = {name: np.full(n, -1, dtype=np.int64) for name in RELATIONS}
    last_space = last_newline = speaker = -1
    last_seen: dict[str, int] = {}
    last_pair: dict[str, int] = {}
    line_begins = 0
    for t, c in enumerate(text):
        out["previous"][t] = t - 1
        out["word_start"][t] = last_space
        out["line_start"][t] = last_newline
        out["speaker"][t] = speaker
        out["same_char"][t] = last_seen.get(c, -1)
        if t >= 1:
            pair = text[t - 1:t + 1]
            j = last_pair.get(pair, -1)  # j ends an earlier copy of the pair
            out["induction"][t] = j + 1 if 0 <= j and j + 1 < t else -1
            last_pair[pair] = t
        last_seen[c] = t
        if c in " \n":
            last_space = t
        if c == "\n":
            last_newline = t
            line = text[line_begins:t]
            opens_speech = line_begins == 0 or (line_begins >= 2 and
                                                text[line_begins - 2:line_begins] == "\n\n")
            if line.endswith(":") and opens_speech and len(line) > 1:
                speaker = t - 1  # the colon
            line_begins = t + 1
    # A relation never points at t itself, and "previous" at 0 points nowhere.
    return out


def weight_on_relation(weights: Any, targets: Any, *,
                       threshold: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """How much weight each head puts on the position a relation points to.

    Parameters
    ----------
    weights : array_like, shape (L, B, h, T, T)
        As :func:`~attention_lib.gpt_attention_weights` returns them.
    targets : array_like of int, shape (B, T)
        For each query position, the key position the relation points to, ``-1`` where it
        points nowhere (such positions are left out).
    threshold : float, default 0.5

    Returns
    -------
    mean : numpy.ndarray, shape (L, h)
        The mean weight on the target, over the positions where there is one.
    share : numpy.ndarray, shape (L, h)
        The fraction of those positions where the weight on the target is at least
        ``threshold``.

    Examples
    --------
    >>> w = np.zeros((1, 1, 1, 3, 3)); w[0, 0, 0, [0, 1, 2], [0, 0, 1]] = 1.0
    >>> weight_on_relation(w, [[-1, 0, 1]])
    (array([[1.]]), array([[1.]]))
    """
    w = as_real_array(weights, "weights").astype(np.float64, copy=False)  # finite, real
    t = np.asarray(targets)
    threshold = real_number(threshold, "threshold", minimum=0.0, maximum=1.0)
    if w.ndim != 5 or w.shape[-1] != w.shape[-2]:
        raise ValueError(f"weights have {describe(w)}; expected shape (L, B, h, T, T)")
    if t.shape != (w.shape[1], w.shape[3]) or t.dtype.kind not in "iu":
        raise ValueError(f"targets have {describe(t)}; expected integer positions of shape "
                         f"(B, T) = {(w.shape[1], w.shape[3])}")
    if (t < -1).any() or (t >= np.arange(w.shape[3])[None, :] + 1).any():
        raise ValueError("targets hold positions outside -1 .. t (a target must be at or "
                         "before its query; -1 for none)")
    b, q = np.nonzero(t >= 0)  # the (sequence, query) pairs that have a target
    if b.size == 0:
        raise ValueError("targets are all -1: no position has a target to measure")
    on = w[:, b, :, q, t[b, q]]  # (P, L, h): advanced indices first
    return on.mean(axis=0), (on >= threshold).mean(axis=0)


def head_value_norms(params: dict[str, np.ndarray], config: GPTConfig,
                     tokens: Any) -> np.ndarray:
    r"""The size of what each head moves from each position: :math:`\lVert v_j W_O^{(h)}\rVert`.

    Head :math:`h` adds :math:`\sum_j a_{tj}\, \mathbf v_j W_O^{(h)}` to the residual stream at
    position :math:`t`, with :math:`W_O^{(h)}` the head's rows of the output projection.
    Position :math:`j`'s contribution therefore has the size
    :math:`a_{tj} \lVert \mathbf v_j W_O^{(h)} \rVert`: a large weight on a small vector
    moves little.

    Parameters
    ----------
    params, config, tokens
        As in :func:`~attention_lib.gpt_logits`.

    Returns
    -------
    numpy.ndarray, shape (L, B, h, T)

    Examples
    --------
    >>> from attention_lib.gpt import init_gpt
    >>> config = GPTConfig(10, 8, 8, 2, 2)
    >>> head_value_norms(init_gpt(config), config, [[1, 2, 3]]).shape
    (2, 1, 2, 3)
    """
    check_params(params, config)
    tokens = check_tokens(tokens, config)
    values: dict[str, np.ndarray] = {}
    sites = [f"blocks.{layer}.attn.v" for layer in range(config.n_layers)]
    stack_forward(params, config, tokens, hooks=capture_hooks(values, sites))
    dh, group = config.d_head, config.n_heads // config.kv_heads
    norms = []
    for layer, site in enumerate(sites):
        v = np.repeat(values[site], group, axis=1)  # (B, h_kv, T, dh) -> (B, h, T, dh)
        w_o = params[f"blocks.{layer}.attn.w_o"].reshape(config.n_heads, dh, -1)  # (h, dh, d)
        moved = np.einsum("bhtc,hcd->bhtd", v, w_o)  # (B, h, T, d)
        norms.append(np.linalg.norm(moved, axis=-1))
    return np.stack(norms)
