"""The induction playground's element: how it reads a typed sequence, where copying points,
what it shows before its script runs, the weights it carries and what it refuses.
(Chromium drives it in test_controls_browser.py.)"""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest
from controls_helpers import carried_weights, data_json, induction_model

import attention_lib as al
from attention_lib import controls
from attention_lib.controls.element import WEIGHT_MESSAGES
from attention_lib.controls.induction import MESSAGES


@pytest.fixture(scope="module")
def model():
    return induction_model()


def _static(markup: str) -> str:
    return markup.split("<script>")[0]


# --- reading a sequence -----------------------------------------------------------------------

def test_one_character_per_token_in_base64_order_spaces_skipped():
    assert controls.INDUCTION_ALPHABET == (
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    assert controls.parse_induction_sequence("AZaz09+/").tolist() == [0, 25, 26, 51, 52, 61,
                                                                       62, 63]
    spaced = " Kd9\tZr\n2 \u00a0g\u3000H\u2009v\r\nK "
    assert controls.parse_induction_sequence(spaced).tolist() == \
        controls.parse_induction_sequence("Kd9Zr2gHvK").tolist()
    assert controls.parse_induction_sequence("B" * 32).tolist() == [1] * 32


@pytest.mark.parametrize("text, kwargs, message", [
    ("", {}, MESSAGES["empty"].format(example="ABCDABCD")),
    (" \t\n", {}, MESSAGES["empty"].format(example="ABCDABCD")),
    ("ab-c.d-", {}, '"-" ".": not among the model\'s 64 tokens, which are A–Z, a–z, 0–9, +, /'),
    ("abc", {"vocab_size": 28}, '"c": not among the model\'s 28 tokens, which are A–Z, a–b'),
    ("A\u200bB", {}, '"\u200b": not among'),   # a zero-width space is no white space
    ("A" * 33, {}, "at most 32 tokens (the model reads 32); this has 33"),
    ("ABC D", {"context": 3}, "at most 3 tokens (the model reads 3); this has 4"),
])
def test_what_is_not_a_sequence_is_refused_in_the_pages_words(text, kwargs, message):
    with pytest.raises(ValueError) as info:
        controls.parse_induction_sequence(text, **kwargs)
    assert str(info.value).startswith("sequence=")
    assert message in str(info.value)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="^sequence=3"):
        controls.parse_induction_sequence(3)
    with pytest.raises(ValueError, match="^vocab_size=65; expected at most 64"):
        controls.parse_induction_sequence("A", vocab_size=65)
    with pytest.raises(TypeError, match="^context=2.0"):
        controls.parse_induction_sequence("A", context=2.0)


def test_copy_targets_equal_a_loop():
    rng = np.random.default_rng(0)
    for _ in range(200):
        tokens = rng.integers(0, rng.integers(1, 8), size=rng.integers(1, 20))
        expected = []
        for t, tok in enumerate(tokens):
            earlier = [j for j in range(t) if tokens[j] == tok]
            expected.append(earlier[-1] + 1 if earlier else -1)
        assert controls.copy_targets(tokens).tolist() == expected
    # on the task's sequences, the target of the second copy is the position L - 1 back
    data = al.make_induction_data(50, rng=rng)
    for row, s, L in zip(data.tokens, data.start, data.period, strict=True):
        targets = controls.copy_targets(row)
        for t in range(s + L, s + 2 * L):
            # the second copy's token occurred L back, or later by chance
            assert t - L + 1 <= targets[t] <= t
    with pytest.raises(ValueError, match="1-D integer"):
        controls.copy_targets([[1, 2]])


# --- the element before its script runs -------------------------------------------------------

def _rows(markup: str) -> list[str]:
    return re.findall(r"<tr class=\"[^\"]*\"><th scope=\"row\">.*?</tr>", _static(markup))


@pytest.mark.parametrize("sequence, position, mask", [
    ("Kd9 Zr2gHvLp Kd9 Zr2gHvLp xq", None, None),
    ("Kd9 Zr2gHvLp Kd9 Zr2gHvLp xq", 14, [[1, 0], [1, 1]]),
    ("ABCABC", 0, [[0, 0], [0, 1]]),
])
def test_the_weights_shown_first_are_the_librarys(model, sequence, position, mask):
    params, config = model
    markup = controls.induction_playground(params, config, sequence=sequence,
                                           position=position, head_mask=mask)._repr_html_()
    ids = controls.parse_induction_sequence(sequence)
    t = ids.size - 1 if position is None else position
    keep = np.ones((2, 2), dtype=bool) if mask is None else np.array(mask, dtype=bool)
    w = al.gpt_attention_weights(params, config, ids[None], head_mask=keep)[:, 0, :, t]
    logits = al.gpt_logits(params, config, ids[None], head_mask=keep)[0, t]
    rows = _rows(markup)
    assert len(rows) == 4
    target = controls.copy_targets(ids)[t]
    for r, row in enumerate(rows):
        layer, head = divmod(r, 2)
        shades = [float(x) for x in re.findall(r'style="--w: ([0-9.]+)"', row)]
        np.testing.assert_allclose(shades, w[layer, head, :t + 1], rtol=0, atol=5e-5 + 1e-12)
        outlined = re.findall(r'class="lc-hw[^"]*lc-target', row)
        assert len(outlined) == (target >= 0)
        removed = not keep[layer, head]
        assert ("(removed)" in row) == removed and row.startswith(
            '<tr class="lc-off">' if removed else '<tr class="">')
        best = int(np.argmax(w[layer, head, :t + 1]))
        assert f"</span> {t - best} back, " in row
    result = re.search(r'<div class="lc-result" data-logits="([^"]*)"', markup).group(1)
    np.testing.assert_array_equal(json.loads(html.unescape(result)), logits)
    p = al.softmax(logits)
    summary = re.search(r'<p class="lc-summary">(.*?)</p>', _static(markup)).group(1)
    top = controls.INDUCTION_ALPHABET[int(np.argmax(p))]
    assert f"top choice is <strong>{top}</strong>" in summary
    if target >= 0:
        assert f"at position {target} (outlined)" in summary
        assert f'<span class="lc-p-copy">{p[ids[target]]:.3f}</span>' in summary
    else:
        assert "nothing to copy" in summary
    checked = re.findall(r'<input [^>]*class="lc-remove"[^>]*>', markup)
    assert [" checked" in c for c in checked] == [not k for k in keep.ravel()]
    assert all("disabled" in c for c in checked)
    assert f'value="{t}"' in re.search(r'<input [^>]*class="lc-pos"[^>]*>', markup).group(0)


def test_the_element_carries_the_very_weights(model):
    params, config = model
    markup = controls.induction_playground(params, config)._repr_html_()
    carried_weights(markup, params, "<f8")
    layout = data_json(markup, "layout")
    assert [name for name, _, _ in layout] == list(al.gpt_parameter_shapes(config))
    assert data_json(markup, "config")["positions"] == "rope"
    assert data_json(markup, "messages") == {**MESSAGES, **WEIGHT_MESSAGES}


def test_models_and_settings_the_page_cannot_run_are_refused(model):
    params, config = model
    with pytest.raises(ValueError, match="^position=6; expected a position from 0 to 5"):
        controls.induction_playground(params, config, sequence="ABCABC", position=6)
    with pytest.raises(ValueError, match="entries other than 0 and 1"):
        controls.induction_playground(params, config, head_mask=[[1, 0.5], [1, 1]])
    with pytest.raises(ValueError, match=r"^head_mask has shape \(2,\)"):
        controls.induction_playground(params, config, head_mask=[1, 1])
    with pytest.raises(ValueError, match="^sequence='A-B'"):
        controls.induction_playground(params, config, sequence="A-B")
    full = al.GPTConfig(64, 8, 8, 1, 2)
    with pytest.raises(ValueError, match="attention_only=False"):
        controls.induction_playground(al.init_gpt(full), full)
    big = al.GPTConfig(65, 8, 8, 1, 2, attention_only=True)
    with pytest.raises(ValueError, match="vocab_size=65"):
        controls.induction_playground(al.init_gpt(big), big)
    with pytest.raises(TypeError, match="^title=3"):
        controls.induction_playground(params, config, title=3)
    with pytest.raises(TypeError, match="params is list"):
        controls.induction_playground([], config)
