"""The coreference explorer's element: what it shows before its script runs is the library's,
the sentence's place in the corpus, the weights it carries, and what it refuses. (Chromium
drives it in test_controls_browser.py.)"""

from __future__ import annotations

import html
import re

import numpy as np
import pytest
from controls_helpers import carried_weights, data_json, trained_models

import attention_lib as al
from attention_lib import controls
from attention_lib.controls.coreference import MESSAGES, sentence_status
from attention_lib.training import coreference as co


@pytest.fixture(scope="module")
def model():
    return trained_models()[0]


def _static(markup: str) -> str:
    return markup.split('<script type="application/octet-stream"')[0]


def test_the_values_shown_first_are_the_librarys(model):
    markup = controls.coreference_explorer(model, first="dog", verb="catch", second="fox",
                                           adjective="clever")._repr_html_()
    sentence = "The dog didn't catch the fox because it was too clever"
    static = _static(markup)
    assert f'<p class="lc-sentence">{html.escape(sentence)}</p>' in static
    p = model.probabilities([sentence])[0]
    assert f'<strong class="lc-said">{model.predict(sentence)}</strong>' in static
    assert f"(probability {p.max():.2f})" in static
    cells = [float(x) for x in re.findall(r'class="lc-heat-cell[^"]*"[^>]*>([0-9.]+)<', static)]
    w = model.it_weights(sentence)  # (L, h, n): shown a row per word, a column per head
    np.testing.assert_allclose(cells, w.reshape(4, -1).T.ravel(), atol=0.005 + 1e-12)
    assert "by the corpus’s rule it is the fox" in static
    split = "train" if (sentence, "fox") in co.coreference_examples("train") else "test"
    assert f"This is {MESSAGES[split]}." in static
    for slot, value in (("first", "dog"), ("verb", "catch"), ("second", "fox"),
                        ("adjective", "clever")):
        assert re.search(rf'class="lc-{slot}"[^>]*>.*?<option value="{value}" selected>',
                         static, re.S)


def test_the_status_follows_the_corpus():
    train = set(co.coreference_examples("train"))
    test = set(co.coreference_examples("test"))
    for sentence, _ in list(train)[::97] + list(test)[::31]:
        words = sentence.split()
        verb = " ".join(words[3:-7])
        status = sentence_status(words[1], verb, words[-6], words[-1])
        assert status == ("train" if sentence in {s for s, _ in train} else "test"), sentence
    assert sentence_status("animal", "chase", "street", "tired") == "none"  # chasing a place
    assert sentence_status("street", "cross", "road", "wide") == "none"  # a place crossing
    assert sentence_status("dog", "cross", "road", "fast") == "none"  # an adjective for animals
    assert sentence_status("animal", "cross", "street", "wide") == "test"


def test_the_element_carries_the_very_weights(model):
    markup = controls.coreference_explorer(model)._repr_html_()
    carried_weights(markup, model.params, "<f4")
    assert data_json(markup, "vocabulary") == list(model.vocabulary)
    held = data_json(markup, "held-out")
    assert ["animal", "street"] in held and all(
        tuple(p) in {al.CoreferenceModel.candidates(s) for s, _ in co.coreference_examples(
            "test")} for p in held)


def test_bad_arguments_are_refused(model):
    with pytest.raises(ValueError, match="two different nouns"):
        controls.coreference_explorer(model, first="dog", second="dog")
    with pytest.raises(ValueError, match="adjective='happy'"):
        controls.coreference_explorer(model, adjective="happy")
    with pytest.raises(TypeError, match="CoreferenceModel"):
        controls.coreference_explorer(trained_models()[1])
    untrained = al.init_coreference_model()  # weights float32 cannot hold exactly
    with pytest.raises(ValueError, match="float32"):
        controls.coreference_explorer(untrained)
