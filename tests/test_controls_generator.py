"""The text generator's element: what it shows before its script runs, the weights it
carries, its sampler and what it refuses. (Chromium drives it in test_controls_browser.py.)"""

from __future__ import annotations

import html
import re
from dataclasses import replace

import numpy as np
import pytest
from controls_helpers import carried_weights, data_json

import attention_lib as al
from attention_lib import controls
from attention_lib.gpt import BookLanguageModel


@pytest.fixture(scope="module")
def book():
    return al.book_language_model()


def test_mulberry32_gives_the_reference_sequence():
    # Values printed by the reference JavaScript (Math.imul, >>> 0) for these seeds.
    draw = controls.mulberry32(1)
    assert [draw() for _ in range(3)] == pytest.approx(
        [0.6270739405881613, 0.002735721180215478, 0.5274470399599522], abs=1e-15)
    draw = controls.mulberry32(0)
    assert [draw(), draw()] == [0.26642920868471265, 0.0003297457005828619]
    draw = controls.mulberry32(4294967295)
    assert [draw(), draw()] == [0.8964226141106337, 0.189478256739676]
    draws = [controls.mulberry32(7)() for _ in range(3)]
    assert draws[0] == draws[1] == draws[2]  # a fresh generator starts over


def _static(markup: str) -> str:
    return markup.split('<script type="application/octet-stream"')[0]


def test_the_text_shown_first_is_the_librarys(book):
    markup = controls.text_generator(book, prompt="Juliet:\n", temperature=0.7, seed=3,
                                     n_new=40)._repr_html_()
    expected = book.decode(al.generate(book.params, book.config, book.encode("Juliet:\n"), 40,
                                       temperature=0.7, uniform=controls.mulberry32(3)))
    chars = re.findall(r'<span class="lc-ch[^"]*" data-pos="\d+">([^<]*(?:<br>)?)</span>',
                       _static(markup))
    shown = "".join(html.unescape(c).replace("↵<br>", "\n") for c in chars)
    assert shown == expected
    assert len(re.findall(r'class="lc-ch lc-prompt', markup)) == len("Juliet:\n")
    assert data_json(markup, "generated") == expected


def test_the_heads_shown_first_are_the_librarys_at_the_last_character(book):
    markup = controls.text_generator(book, prompt="Romeo:\n", n_new=30)._repr_html_()
    text = data_json(markup, "generated")
    w = al.gpt_attention_weights(book.params, book.config, book.encode(text)[None])[:, 0, :, -1]
    shown = [float(x) for x in re.findall(r'class="lc-weight" data-exact="">([0-9.]+)<',
                                          _static(markup))]
    top = w.max(axis=-1).ravel()  # (L * h,), layer by layer, head by head
    assert len(shown) == book.config.n_layers * book.config.n_heads
    np.testing.assert_allclose(shown, top, atol=0.005 + 1e-12)
    backs = [int(b) for b in re.findall(r"</span> (\d+) back,", _static(markup))]
    assert backs == (len(text) - 1 - w.argmax(axis=-1).ravel()).tolist()


def test_the_element_carries_the_very_weights(book):
    markup = controls.text_generator(book)._repr_html_()
    carried_weights(markup, book.params, "<f2")
    layout = data_json(markup, "layout")
    assert [name for name, _, _ in layout] == list(al.gpt_parameter_shapes(book.config))


@pytest.mark.parametrize("prompt, message", [
    ("", "type at least one character"),
    ("caf\u00e9 1", 'not "\u00e9" "1"'),
    ("a" * 128, "at most 127 characters"),
])
def test_prompts_the_model_cannot_read_are_refused_in_the_pages_words(book, prompt, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        controls.text_generator(book, prompt=prompt)


def test_models_and_settings_the_page_cannot_run_are_refused(book):
    with pytest.raises(ValueError, match="float16 cannot represent"):
        nudged = dict(book.params, wte=book.params["wte"] + np.float32(1e-7))
        controls.text_generator(replace(book, params=nudged))
    rope = al.GPTConfig(book.config.vocab_size, 8, 8, 1, 2, positions="rope")
    with pytest.raises(ValueError, match="positions='rope'"):
        controls.text_generator(BookLanguageModel(al.round_to_half(al.init_gpt(rope)), rope,
                                                  book.tokenizer))
    with pytest.raises(ValueError, match="^temperature=2.5"):
        controls.text_generator(book, temperature=2.5)
    with pytest.raises(TypeError, match="BookLanguageModel"):
        controls.text_generator(book.params)
    with pytest.raises(ValueError, match="^seed=-1"):
        controls.text_generator(book, seed=-1)


def test_generate_takes_its_uniform_numbers_from_the_caller(book):
    ids = book.encode("Romeo")
    a = al.generate(book.params, book.config, ids, 20, uniform=controls.mulberry32(9))
    b = al.generate(book.params, book.config, ids, 20, uniform=controls.mulberry32(9),
                    use_cache=False)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="uniform\\(\\) returned 1.0"):
        al.generate(book.params, book.config, ids, 2, uniform=lambda: 1.0)
    with pytest.raises(TypeError, match="uniform is int"):
        al.generate(book.params, book.config, ids, 2, uniform=3)
