r"""The retrieval playground (chapter 10): the trained soft dictionary on a typed sequence."""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._validation import displayable, weight_arrays
from ..softmax import softmax
from ..training import EXPORT_FORMAT, RETRIEVAL_PARAMS, retrieval_forward
from ..training.retrieval import RETRIEVAL_SHAPES
from . import element as el

__all__ = ["SEPARATOR", "parse_retrieval_sequence", "retrieval_playground"]

#: What separates the tokens of a typed sequence: a run of Python's whitespace characters
#: (``str.isspace``: tabs, new lines, spaces, non-breaking and other Unicode spaces). The
#: page's script splits with this very pattern, exported with the control's data.
SEPARATOR = (r"[\u0009-\u000d\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029"
             r"\u202f\u205f\u3000]+")

#: What is wrong with a sequence, in the words the page and the ValueError use.
MESSAGES = {
    "empty": "type the pairs, then ? and the key to look up, e.g. {example}",
    "no_query": "end the sequence with ? and one key to look up, e.g. {example}",
    "no_pair": "store at least one pair before ?",
    "too_many": "at most {n} pairs: there are {n} keys and each is stored once",
    "not_pair": ('"{token}" is not a pair: write a key {keys} followed by a value {values}, '
                 "like {like}"),
    "twice": "the key {key} is stored twice; each key may be stored once",
    "not_key": '"{token}" is not a key: look up one of {keys}',
}


def _tokens(text: str) -> list[str]:
    return [t for t in re.split(SEPARATOR, text) if t]


def _load_model(model: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The exported document (format, vocabulary, params) and its arrays, checked."""
    if isinstance(model, str | os.PathLike):
        with open(model, encoding="utf-8") as f:
            doc = json.load(f)
    elif isinstance(model, Mapping):
        doc = dict(model)
    else:
        raise TypeError(f"model is a {type(model).__name__}; expected the document "
                        "export_retrieval_model writes (a dict, as json.load gives) or its path")
    if doc.get("format") != EXPORT_FORMAT:
        raise ValueError(f"model has format {doc.get('format')!r}; expected {EXPORT_FORMAT!r} "
                         "(a file written by export_retrieval_model)")
    vocab = doc.get("vocabulary")
    if not (isinstance(vocab, Mapping) and all(
            isinstance(vocab.get(name), list) and vocab[name]
            and all(isinstance(x, str) and x and not re.search(SEPARATOR, x) and "?" not in x
                    for x in vocab[name]) for name in ("keys", "values"))):
        raise ValueError("model has no usable vocabulary; expected lists of key and value "
                         "names (non-empty strings without spaces or '?')")
    params_doc = doc.get("params")
    if not isinstance(params_doc, Mapping) or any(n not in params_doc for n in RETRIEVAL_PARAMS):
        raise ValueError(f"model lacks some of the params {list(RETRIEVAL_PARAMS)}")
    params, _ = weight_arrays(params_doc, RETRIEVAL_SHAPES, "model params", extra="ignore",
                              dims={"n_keys": len(vocab["keys"]),
                                    "n_values": len(vocab["values"])})
    _check_reachable(params)
    kept = {"format": doc["format"], "vocabulary": {"keys": list(vocab["keys"]),
                                                    "values": list(vocab["values"])},
            "params": {n: params[n].tolist() for n in RETRIEVAL_PARAMS}}
    return kept, params


def _check_reachable(p: Mapping[str, np.ndarray]) -> None:
    """Refuse a model for which some typed sequence would make the page overflow.

    Every stored pair is a row ``key_embed[i] + value_embed[j]``; the scores are those of
    every query against every such row, and the logits lie within the range of the rows'
    logits (the weights are a convex combination), so checking every row bounds them all.
    """
    x = (p["key_embed"][:, None, :] + p["value_embed"][None, :, :]).reshape(
        -1, p["key_embed"].shape[-1])  # (n_keys * n_values, d): every possible pair
    with np.errstate(all="ignore"):
        q = p["query_embed"] @ p["w_q"] / np.sqrt(p["w_q"].shape[-1])  # (n_keys, d_k)
        k, v = x @ p["w_k"], x @ p["w_v"]
        scores, logits = q @ k.T, v @ p["w_out"]
    for name, a in (("model's queries", q), ("model's keys", k), ("model's values", v),
                    ("model's scores", scores),
                    ("model's logits", np.abs(logits) + np.abs(p["b_out"]))):
        displayable(a, name)


def _sequence_problem(text: str, keys: Sequence[str], values: Sequence[str]
                      ) -> tuple[str | None, tuple[list[int], list[int], int] | None]:
    """What is wrong with ``text`` (as the script words it), or its key, value, query indices."""
    tokens = _tokens(text)
    span = {"keys": f"{keys[0]}–{keys[-1]}", "values": f"{values[0]}–{values[-1]}"}
    example = f"{keys[0]}{values[-1]} ? {keys[0]}"
    if not tokens:
        return el.fill(MESSAGES["empty"], example=example), None
    if tokens.count("?") != 1 or tokens.index("?") != len(tokens) - 2:
        return el.fill(MESSAGES["no_query"], example=example), None
    pairs, query = tokens[:-2], tokens[-1]
    if not pairs:
        return MESSAGES["no_pair"], None
    if len(pairs) > len(keys):
        return el.fill(MESSAGES["too_many"], n=len(keys)), None
    key_idx, value_idx = [], []
    for tok in pairs:
        split = next(((tok[:i], tok[i:]) for i in range(1, len(tok))
                      if tok[:i] in keys and tok[i:] in values), None)
        if split is None:
            return el.fill(MESSAGES["not_pair"], token=tok, like=f"{keys[0]}{values[-1]}",
                        **span), None
        if keys.index(split[0]) in key_idx:
            return el.fill(MESSAGES["twice"], key=split[0]), None
        key_idx.append(keys.index(split[0]))
        value_idx.append(values.index(split[1]))
    if query not in keys:
        return el.fill(MESSAGES["not_key"], token=query, **span), None
    return None, (key_idx, value_idx, list(keys).index(query))


def parse_retrieval_sequence(
    sequence: str, vocabulary: Mapping[str, Sequence[str]]
) -> tuple[list[int], list[int], int]:
    """Read a typed soft-dictionary sequence such as ``"c3 a7 f1 ? f"``.

    Parameters
    ----------
    sequence : str
        Pairs separated by whitespace (:data:`SEPARATOR`: spaces, tabs, new lines,
        non-breaking spaces, any number of them), each a key name followed by a value name,
        no key twice and at most as many pairs as there are keys; then ``?`` and the key to
        look up (which need not be stored).
    vocabulary : mapping
        ``{"keys": [...], "values": [...]}``, as :func:`attention_lib.export_retrieval_model`
        writes it.

    Returns
    -------
    keys, values : list of int
        The positions of the stored keys and values in the vocabulary.
    query : int
        The position of the key looked up.

    Raises
    ------
    TypeError
        When ``sequence`` is not a str (such as ``'c3 a7 ? a'``).
    ValueError
        Naming ``sequence`` and saying what is wrong, in the words
        :func:`retrieval_playground` shows in the page.

    Examples
    --------
    >>> vocab = {"keys": list("abcdefgh"), "values": list("01234567")}
    >>> parse_retrieval_sequence("c3 a7\\tf1\\n? f", vocab)
    ([2, 0, 5], [3, 7, 1], 5)
    """
    if not isinstance(sequence, str):
        raise TypeError(f"sequence={sequence!r}; expected a str such as 'c3 a7 ? a'")
    problem, parsed = _sequence_problem(sequence, list(vocabulary["keys"]),
                                        list(vocabulary["values"]))
    if problem is not None:
        raise ValueError(f"sequence={sequence!r}: {problem}")
    return parsed


def retrieval_playground(
    model: Mapping[str, Any] | str | os.PathLike,
    *,
    sequence: str = "c3 a7 f1 b1 h6 d0 ? f",
    title: str = "The trained soft dictionary, running in this page",
) -> el.ControlElement:
    r"""The exported soft-dictionary model, run in the browser on a sequence the reader types.

    The reader edits a sequence in a text box. While it is valid (see
    :func:`parse_retrieval_sequence`), the script runs the model's forward pass in
    JavaScript on the embedded weights at every keystroke and draws the query's attention
    weight on each stored pair (bars and three decimals, the pair whose key is looked up
    marked), with the model's answer (the value of the largest logit) and its probability.
    Anything else is refused with a message saying what is wrong.

    Parameters
    ----------
    model : dict or path
        The document :func:`attention_lib.export_retrieval_model` writes (as ``json.load``
        returns it) or the path of that file. Its format, vocabulary and parameters are
        embedded in the page. A model whose scores or logits could exceed ``1e15`` in size
        on some sequence is refused.
    sequence : str
        The sequence shown first.
    title : str

    Returns
    -------
    ControlElement
        Before its script runs, it shows the model's answer to ``sequence``, computed
        here.

    Notes
    -----
    The script computes the weights and logits :func:`attention_lib.retrieval_forward`
    returns (its Notes give the formula), in double precision and with the same operations.

    Examples
    --------
    >>> import attention_lib as al, tempfile, pathlib
    >>> result = al.train_retrieval(seed=0, steps=5)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = al.export_retrieval_model(result, pathlib.Path(tmp) / "model.json")
    ...     markup = retrieval_playground(path, sequence="a1 b2 ? b")._repr_html_()
    >>> markup.split("<script>")[0].count('class="lc-num lc-weight"')  # one row per pair
    2
    """
    doc, params = _load_model(model)
    keys, values = doc["vocabulary"]["keys"], doc["vocabulary"]["values"]
    key_idx, value_idx, query = parse_retrieval_sequence(sequence, doc["vocabulary"])
    ident = el.uid("retrieval", doc, sequence, title)
    logits, weights = retrieval_forward(params, [key_idx], [value_idx], [query])
    rules = (f"Allowed: 1 to {len(keys)} pairs separated by spaces (or tabs, or new lines), "
             f"each a key {keys[0]}–{keys[-1]} followed by a value {values[0]}–{values[-1]} "
             f"(like {keys[2 % len(keys)]}{values[3 % len(values)]}), no key twice; then ? and "
             "the key to look up. Anything else is refused with a message.")
    body = f"""{el.sequence_field(ident, "sequence", sequence, rules)}
<div class="lc-result" data-logits="{html.escape(json.dumps(logits[0].tolist()))}">
{_result(keys, values, key_idx, value_idx, query, logits[0], weights[0])}</div>"""
    alt = (f"type a sequence of key-value pairs and a query (keys {keys[0]}-{keys[-1]}, "
           f"values {values[0]}-{values[-1]}); the trained model's attention weights and "
           "answer are computed in the page")
    return el.assemble("retrieval", ident,
                    {"model": doc, "separator": SEPARATOR, "messages": MESSAGES}, body,
                    "retrieval.js", state=f"the sequence {sequence}", alt=alt, title=title,
                    templates=("bar_row", "score_cell", "answer_stored", "answer_absent",
                               "retrieval_result", "sequence_error"))


def _result(keys: Sequence[str], values: Sequence[str], key_idx: Sequence[int],
            value_idx: Sequence[int], query: int, logits: np.ndarray,
            weights: np.ndarray) -> str:
    """The answer and the table of weights, from the templates the script fills too."""
    probs = softmax(np.asarray(logits, dtype=np.float64))
    best = int(np.argmax(logits))
    slots = {"answer": html.escape(values[best]), "p": el.fmt(probs[best], 3),
             "key": html.escape(keys[query])}
    if query in key_idx:
        stored = values[value_idx[list(key_idx).index(query)]]
        answer = el.piece("answer_stored", stored=html.escape(stored),
                       verdict="right" if stored == values[best] else "wrong", **slots)
    else:
        answer = el.piece("answer_absent", **slots)
    rows = "".join(
        el.bar_row(f"{j + 1} {html.escape(keys[kk] + values[vv])}"
                + (" (looked up)" if kk == query else ""), float(weights[j]), 3, None,
                "lc-mark" if kk == query else "")
        for j, (kk, vv) in enumerate(zip(key_idx, value_idx, strict=True)))
    return el.piece("retrieval_result", answer=answer, key=html.escape(keys[query]),
                 rows=rows)
