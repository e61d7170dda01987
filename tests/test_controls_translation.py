"""The translation explorer's element: the values shown before its script runs are the
library's, the source is read by the grammar, the weights it carries, and what it refuses.
(Chromium drives it in test_controls_browser.py.)"""

from __future__ import annotations

import html
import re

import numpy as np
import pytest
from controls_helpers import carried_weights, data_json, trained_models

import attention_lib as al
from attention_lib import controls


@pytest.fixture(scope="module")
def model():
    return trained_models()[1]


def test_the_values_shown_first_are_the_librarys(model):
    source = "a red king calls the small bird"
    markup = controls.translation_explorer(model, source=source, head=(0, 1))._repr_html_()
    static = markup.split('<script type="application/octet-stream"')[0]
    said = model.translate(source)
    assert f'<strong class="lc-translation">{html.escape(said)}</strong>' in static
    rule, alignment = al.translate_by_rule(source)
    assert f'<span class="lc-rule">{rule}</span>' in static
    cells = re.findall(r'<td class="lc-heat-cell([^"]*)"[^>]*>([0-9.]+)<', static)
    w = model.cross_attention(source, said)[0, 1]  # (m, n)
    np.testing.assert_allclose([float(x) for _, x in cells], w.ravel(), atol=0.005 + 1e-12)
    gold = {i for i, (cls, _) in enumerate(cells) if "lc-gold" in cls}
    n = len(source.split())
    assert gold == {j * n + alignment[j] for j, word in enumerate(said.split())
                    if rule.split()[j:j + 1] == [word]}
    assert "layer 1, head 2" in static
    held = set(al.translation_held_out_pairs())
    note = re.search(r'<p class="lc-where">([^<]*)</p>', static).group(1)
    unseen = [p for p in (("red", "king"), ("small", "bird")) if p in held]
    assert ("Never in a training sentence" in note) == bool(unseen)


def test_the_grammar_reads_the_source():
    read = controls.parse_translation_source
    assert read("the dog sees a cat") == {"det1": "the", "adj1": "(none)", "noun1": "dog",
                                          "verb": "sees", "det2": "a", "adj2": "(none)",
                                          "noun2": "cat"}
    assert read("a big dog sees the red cat")["adj2"] == "red"
    for bad in ("the dog sees", "the big red dog sees a cat", "dog sees a cat",
                "the dog sees a cat today", "the dragon sees a cat"):
        with pytest.raises(ValueError, match="source="):
            read(bad)
    with pytest.raises(TypeError, match="expected a str"):
        read(None)


def test_the_element_carries_the_very_weights(model):
    markup = controls.translation_explorer(model)._repr_html_()
    carried_weights(markup, model.params, "<f4")
    assert data_json(markup, "lexicon")["dog"] == "kanu"


def test_bad_arguments_are_refused(model):
    with pytest.raises(ValueError, match="head="):
        controls.translation_explorer(model, head=(2, 0))
    with pytest.raises(ValueError, match="head="):
        controls.translation_explorer(model, head=(True, 0))
    with pytest.raises(TypeError, match="TranslationModel"):
        controls.translation_explorer(trained_models()[0])
    with pytest.raises(ValueError, match="float32"):
        controls.translation_explorer(al.init_translation_model())
