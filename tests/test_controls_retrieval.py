"""``attention_lib.controls.retrieval``: the retrieval playground of chapter 10 and its parser."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest
from controls_helpers import data_json, export_model, texts

import attention_lib as al
from attention_lib import controls
from attention_lib.controls.retrieval import MESSAGES

VOCAB = {"keys": list("abcdefgh"), "values": list("01234567")}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return export_model(tmp_path_factory)


def test_embeds_the_exported_model(exported):
    path, doc, result = exported
    for model in (doc, path, str(path)):
        markup = controls.retrieval_playground(model, sequence="c3 a7 f1 ? f")._repr_html_()
        embedded = data_json(markup, "model")
        assert embedded["format"] == doc["format"]
        assert embedded["vocabulary"] == doc["vocabulary"]
        for name, value in result.params.items():
            assert np.array_equal(np.array(embedded["params"][name]), value), name
    logits, w = al.retrieval_forward(result.params, [[2, 0, 5]], [[3, 7, 1]], [5])
    assert texts(markup, "lc-weight") == [f"{x:.3f}" for x in w[0]]
    np.testing.assert_array_equal(data_json(markup, "logits"), logits[0])
    assert "(looked up)" in markup
    assert data_json(markup, "separator") == controls.SEPARATOR
    assert data_json(markup, "messages") == MESSAGES


def test_the_text_box_keeps_the_sequence_as_given(exported):
    # One new line follows <textarea>, which the HTML parser drops: a sequence starting
    # with a new line keeps it.
    for sequence in ("c3 ? c", "\nc3\t? c", "a1  b2\n? a"):
        markup = controls.retrieval_playground(exported[1], sequence=sequence)._repr_html_()
        shown = re.search(r"<textarea[^>]*>\n(.*?)</textarea>", markup, re.S).group(1)
        assert shown == sequence


def test_the_separator_is_exactly_python_whitespace():
    pattern = re.compile(controls.SEPARATOR)
    space = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    matched = {chr(c) for c in range(sys.maxunicode + 1) if pattern.fullmatch(chr(c))}
    assert matched == space
    assert pattern.fullmatch(" \t\u00a0\n  ") and not pattern.search("\u200b?x")


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "type the pairs"),
        (" \t\n\u00a0", "type the pairs"),
        ("c3 a7 f", "end the sequence with ?"),
        ("c3 ? a ? b", "end the sequence with ?"),
        ("c3 a7?f", "end the sequence with ?"),
        ("? a", "at least one pair"),
        ("a0 b0 c0 d0 e0 f0 g0 h0 a1 ? a", "at most 8 pairs"),
        ("c3 a9 ? c", '"a9" is not a pair'),
        ("c3 z1 ? c", '"z1" is not a pair'),
        ("C3 ? c", '"C3" is not a pair'),
        ("c3\u200ba7 ? c", '"c3\u200ba7" is not a pair'),  # a zero-width space is no space
        ("c3 c4 ? c", "the key c is stored twice"),
        ("c3 a7 ? z", '"z" is not a key'),
    ],
)
def test_bad_sequences_are_refused_with_a_reason(text, problem):
    with pytest.raises(ValueError, match=re.escape(f"sequence={text!r}: ") + ".*"
                       + re.escape(problem)):
        controls.parse_retrieval_sequence(text, VOCAB)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("  h0   ?  h ", ([7], [0], 7)),
        ("a1 b2 ? c", ([0, 1], [1, 2], 2)),  # the key looked up need not be stored
        ("a1\tb2\n?\u00a0c", ([0, 1], [1, 2], 2)),
        ("a1\r\nb2\u2003\u3000? c\n", ([0, 1], [1, 2], 2)),
        (" ".join(f"{x}{i}" for i, x in enumerate("abcdefgh")) + " ? e",
         (list(range(8)), list(range(8)), 4)),
    ],
)
def test_good_sequences_parse(text, expected):
    assert controls.parse_retrieval_sequence(text, VOCAB) == expected


def _bad_model(doc, change):
    bad = json.loads(json.dumps(doc))
    change(bad)
    return bad


@pytest.mark.parametrize(
    "change, error, match",
    [
        (lambda d: d.update(format="x"), ValueError, "model has format"),
        (lambda d: d["params"].pop("w_q"), ValueError, "model lacks"),
        (lambda d: d["params"].update(w_k=[[1.0]]), ValueError, "w_k"),
        (lambda d: d["vocabulary"].update(keys=["a b"]), ValueError, "vocabulary"),
        (lambda d: d["vocabulary"].update(keys=["a\u00a0b"] + d["vocabulary"]["keys"][1:]),
         ValueError, "vocabulary"),
        (lambda d: d["vocabulary"].update(values=["?"] + d["vocabulary"]["values"][1:]),
         ValueError, "vocabulary"),
        (lambda d: d["params"].update(w_out=(np.array(d["params"]["w_out"]) * 1e20).tolist()),
         ValueError, "model's logits: up to"),
        (lambda d: d["params"].update(w_q=(np.array(d["params"]["w_q"]) * 1e18).tolist()),
         ValueError, "model's"),
    ],
)
def test_refuses_a_bad_model(exported, change, error, match):
    with pytest.raises(error, match=match):
        controls.retrieval_playground(_bad_model(exported[1], change), sequence="a1 ? a")


@pytest.mark.parametrize(
    "kwargs, error, match",
    [({"sequence": "c3 ? z"}, ValueError, "sequence"), ({"sequence": 3}, TypeError, "sequence"),
     ({"title": 1}, TypeError, "title")],
)
def test_refuses_bad_arguments(exported, kwargs, error, match):
    with pytest.raises(error, match=match):
        controls.retrieval_playground(exported[1], **kwargs)
    with pytest.raises(TypeError, match="model"):
        controls.retrieval_playground(42)
