"""The logit-lens explorer (``controls.logit_lens_explorer``): the book's GPT read after the
embedding and after each block, in the page.

In headless Chromium, one page, moved by keyboard: for the default text and texts typed in,
every cell's top character and probability, the probability of the next character it is
shaded by, and every reading's loss equal a reference written here (the stream captured by
hooks, the final norm, the tied read-out and the log-softmax, in float64) and
``al.logit_lens``; texts the model cannot read are refused in the generator's words; the
control is labelled, fits a phone (the grid scrolls inside its own focusable box) and passes
axe-core in both themes. In Python: the grid shown before the script runs, what the page
carries, and the arguments it refuses.
"""

from __future__ import annotations

import html
import re

import numpy as np
import pytest
from chromium import ARGS, CHROMIUM, needs_chromium
from controls_helpers import carried_weights, data_json, elements

import attention_lib as al
from attention_lib import controls as lc
from attention_lib.controls import element, logit_lens

DEFAULT = "ROMEO:\nBut soft, what light through yonder window breaks"
THEMES = {"light": ("#ffffff", "#222832"), "dark": ("#121212", "#ced6dd")}


@pytest.fixture(scope="module")
def book():
    return al.book_language_model()


def lens_reference(book, text):
    """The five readings written out in float64: (log-probabilities (R, T, V), ids)."""
    ids = book.encode(text)
    params = {k: np.asarray(v, dtype=np.float64) for k, v in book.params.items()}
    sites = ["embed"] + [f"blocks.{n}.resid_post" for n in range(book.config.n_layers)]
    seen = {}
    al.gpt_logits(params, book.config, ids[None], hooks=al.capture_hooks(seen, sites))
    out = []
    for site in sites:
        x = seen[site][0]  # (T, d)
        mu = x.mean(axis=-1, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
        y = (x - mu) / np.sqrt(var + 1e-5) * params["ln_f.gamma"] + params["ln_f.beta"]
        z = y @ params["wte"].T  # (T, V): the tied read-out
        z = z - z.max(axis=-1, keepdims=True)
        out.append(z - np.log(np.exp(z).sum(axis=-1, keepdims=True)))
    return np.stack(out), ids


def shown(c):
    return "↵" if c == "\n" else "␣" if c == " " else c


def expected_grid(book, text, columns=16):
    """What the grid must show: per reading, per column, (top char, p, p of the next char),
    the columns' characters, the losses; from the reference, checked against al.logit_lens."""
    ref, ids = lens_reference(book, text)
    lib = al.logit_lens(book.params, book.config, ids)  # float32, the library's own
    np.testing.assert_allclose(np.exp(lib), np.exp(ref), atol=1e-4)
    alphabet = book.tokenizer.alphabet
    first = max(0, len(text) - columns)
    p, p_lib = np.exp(ref), np.exp(lib.astype(np.float64))
    tops = ref.argmax(axis=-1)  # (R, T)
    top_lib = lib.argmax(axis=-1)
    gap = np.sort(p_lib, axis=-1)[..., -1] - np.sort(p_lib, axis=-1)[..., -2]
    assert ((tops == top_lib) | (gap < 1e-5)).all()
    nll = -np.take_along_axis(ref[:, :-1], ids[None, 1:, None], axis=-1)[..., 0]
    nll_lib = -np.take_along_axis(lib[:, :-1].astype(np.float64), ids[None, 1:, None],
                                  axis=-1)[..., 0]
    t = np.arange(first, len(text))
    r = np.arange(ref.shape[0])[:, None]
    return {"cols": [shown(c) for c in text[first:]],
            "chars": [[shown(alphabet[i]) for i in row] for row in tops[:, first:]],
            "p": p[r, t, tops[:, first:]], "p_lib": p_lib[r, t, top_lib[:, first:]],
            "next": p[r, t[:-1], ids[None, first + 1:]],
            "loss": nll.mean(axis=1), "loss_lib": nll_lib.mean(axis=1)}


# --- in Python ---------------------------------------------------------------------------------

def _static(markup: str) -> str:
    return markup.split('<script type="application/octet-stream"')[0]


def test_the_grid_shown_first_is_the_librarys(book):
    markup = lc.logit_lens_explorer(book)._repr_html_()
    static = _static(markup)
    want = expected_grid(book, DEFAULT)
    cols = re.findall(r'<th scope="col" class="lc-lens-char" data-pos="\d+">([^<]*)</th>',
                      static)
    assert [html.unescape(c) for c in cols] == want["cols"]
    rows = re.findall(r"<tr><th scope=\"row\">([^<]*)</th>(.*?)</tr>", static)
    assert [name for name, _ in rows] == ["embedding"] + [f"after block {n}" for n in range(1, 5)]
    for r, (_, cells) in enumerate(rows):
        chars = re.findall(r'<span class="lc-top">([^<]*)</span>', cells)
        ps = [float(x) for x in re.findall(r'class="lc-weight" data-exact="">([0-9.]+)<', cells)]
        assert [html.unescape(c) for c in chars] == want["chars"][r]
        np.testing.assert_allclose(ps, want["p_lib"][r], rtol=0, atol=0.005 + 1e-4)
        assert cells.count("lc-lens-last") == 1  # the last column has no next character
    losses = [float(x) for x in re.findall(r'class="lc-num lc-loss" data-exact="">([0-9.]+)<',
                                           static)]
    np.testing.assert_allclose(losses, want["loss_lib"], rtol=0, atol=0.005 + 1e-4)
    assert html.escape(logit_lens.MESSAGES["losses"].format(n=len(DEFAULT) - 1)) in static
    assert "Trust Notebook" in markup


def test_the_grid_shows_the_last_columns_and_a_lone_character_has_no_loss(book):
    static = _static(lc.logit_lens_explorer(book, text="To be, or", columns=4)._repr_html_())
    cols = re.findall(r'class="lc-lens-char" data-pos="(\d+)">([^<]*)<', static)
    assert cols == [("5", ","), ("6", "␣"), ("7", "o"), ("8", "r")]
    assert static.count('class="lc-lens-cell') == 5 * 4
    static = _static(lc.logit_lens_explorer(book, text="\n")._repr_html_())
    assert static.count('class="lc-lens-cell lc-lens-last"') == 5
    assert 'class="lc-num lc-loss"' not in static
    assert html.escape(logit_lens.MESSAGES["no_loss"]) in static


def test_before_its_script_runs_every_control_is_labelled_and_disabled(book):
    markup = lc.logit_lens_explorer(book)._repr_html_()
    tags = elements(markup.split("<script>")[0])
    ids = [a["id"] for _, a in tags if "id" in a]
    assert len(ids) == len(set(ids))
    fields = [(t, a) for t, a in tags if t in ("input", "select", "textarea", "button")]
    assert [t for t, _ in fields] == ["textarea", "button"]
    assert all("disabled" in a and a["data-lm-suppress-shortcuts"] == "true" for _, a in fields)
    labelled = {a["for"] for t, a in tags if t == "label"}
    assert fields[0][1]["id"] in labelled
    scroller = [a for _, a in tags if "lc-lens-scroll" in a.get("class", "")]
    assert scroller[0]["tabindex"] == "0" and scroller[0]["role"] == "region"
    templates = data_json(markup, "templates")
    assert all(element.TEMPLATES[n] == t for n, t in templates.items())
    js = element.asset("logit_lens.js")
    assert set(re.findall(r'fill\("(\w+)"', js)) | {"gen_error"} <= set(templates)


def test_the_page_carries_the_model_and_its_alphabet(book):
    markup = lc.logit_lens_explorer(book)._repr_html_()
    carried_weights(markup, book.params, "<f2")
    assert data_json(markup, "alphabet") == book.tokenizer.alphabet
    assert data_json(markup, "columns") == 16
    assert data_json(markup, "config") == element.engine_config(book.config)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(text=""), ValueError, "^text='': type at least one character$"),
    (dict(text="caf\u00e9 1"), ValueError, 'not "\u00e9" "1"$'),
    (dict(text="a" * 128), ValueError, r"at most 127 characters \(the model reads 128\)"),
    (dict(text=3), TypeError, "^text=3; expected a str"),
    (dict(columns=0), ValueError, "^columns=0; expected a positive integer"),
    (dict(columns=33), ValueError, "^columns=33; expected at most 32"),
    (dict(columns=2.0), TypeError, "^columns=2.0"),
    (dict(columns=True), TypeError, "^columns=True"),
    (dict(title=None), TypeError, "^title=None; expected a str"),
])
def test_bad_arguments_are_refused_with_what_was_expected(book, kwargs, error, message):
    with pytest.raises(error, match=message):
        lc.logit_lens_explorer(book, **kwargs)


def test_the_text_is_refused_in_the_generators_words(book):
    for text in ("", "caf\u00e9 1", "a" * 128):
        with pytest.raises(ValueError) as ours:
            lc.logit_lens_explorer(book, text=text)
        with pytest.raises(ValueError) as theirs:
            lc.text_generator(book, prompt=text)
        assert str(ours.value).split(": ", 1)[1] == str(theirs.value).split(": ", 1)[1]
    with pytest.raises(TypeError, match="model is dict"):
        lc.logit_lens_explorer(book.params)


# --- in Chromium -------------------------------------------------------------------------------

def _page(markup: str, theme: str) -> str:
    bg, fg = THEMES[theme]
    return (f'<!doctype html><html lang="en" data-theme="{theme}"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1"><title>'
            f'logit lens</title><style>body {{ background: {bg}; color: {fg}; margin: 8px; }}'
            f"</style></head><body><main>{markup}</main></body></html>")


GRID = """() => {
  const root = document.querySelector('.lc-root');
  const rows = [...root.querySelectorAll('.lc-lens-grid tbody tr')];
  return {
    cols: [...root.querySelectorAll('.lc-lens-char')].map(e => e.textContent),
    names: rows.map(r => r.querySelector('th').textContent),
    chars: rows.map(r => [...r.querySelectorAll('.lc-top')].map(e => e.textContent)),
    p: rows.map(r => [...r.querySelectorAll('.lc-weight')].map(e => e.textContent)),
    exact: rows.map(r => [...r.querySelectorAll('.lc-weight')].map(e => e.dataset.exact)),
    next: rows.map(r => [...r.querySelectorAll('td[data-next]')].map(e => e.dataset.next)),
    last: rows.map(r => r.querySelectorAll('.lc-lens-last').length),
    loss: [...root.querySelectorAll('.lc-loss')].map(e => e.textContent),
    loss_exact: [...root.querySelectorAll('.lc-loss')].map(e => e.dataset.exact),
    status: root.querySelector('.lc-status').textContent,
    intro: root.querySelector('.lc-lens-intro').textContent,
  };
}"""


def check_page(page, book, text):
    got = page.evaluate(GRID)
    want = expected_grid(book, text)
    n = len(want["cols"])
    assert got["cols"] == want["cols"], text
    assert got["names"] == ["embedding"] + [f"after block {n}" for n in range(1, 5)]
    assert got["chars"] == want["chars"], text
    assert got["last"] == [1] * 5
    # the numbers shown, at the precision shown, are the library's (float32) ...
    np.testing.assert_allclose(np.array(got["p"], dtype=float), want["p_lib"], rtol=0,
                               atol=0.005 + 1e-4, err_msg=text)
    np.testing.assert_allclose(np.array(got["loss"], dtype=float), want["loss_lib"], rtol=0,
                               atol=0.005 + 1e-4, err_msg=text)
    # ... and the exact ones the float64 reference's
    np.testing.assert_allclose(np.array(got["exact"], dtype=float), want["p"], rtol=1e-6,
                               err_msg=text)
    np.testing.assert_allclose(np.array(got["next"], dtype=float), want["next"], rtol=1e-6,
                               atol=1e-300, err_msg=text)
    np.testing.assert_allclose(np.array(got["loss_exact"], dtype=float), want["loss"],
                               rtol=1e-6, err_msg=text)
    assert got["status"] == f"Read {len(text)} characters after each block; the grid shows " \
        f"the last {n}."
    assert got["intro"] == logit_lens.MESSAGES["losses"].format(n=len(text) - 1)


@needs_chromium
def test_the_page_reads_the_stream_as_the_library_does(book):
    from axe_playwright_python.sync_playwright import Axe
    from playwright.sync_api import sync_playwright

    markup = lc.logit_lens_explorer(book)._repr_html_()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.set_content(_page(markup, "light"))
        root = page.locator(".lc-root")
        assert root.locator(".lc-static-note").count() == 0, "the script did not run"
        unlabelled = page.evaluate("""() => [...document.querySelectorAll(
            '.lc-root input, .lc-root select, .lc-root button, .lc-root textarea')]
            .filter(el => el.disabled || (el.tagName === 'BUTTON' ? el.innerText.trim() === ''
                : ![...el.labels].some(l => l.offsetWidth > 0 && l.innerText.trim() !== '')))
            .map(el => el.className)""")
        assert unlabelled == []

        def read(text=None):
            page.evaluate("() => { document.querySelector('.lc-status').textContent = ''; }")
            if text is not None:
                root.locator(".lc-prompt-box").fill(text)
            root.locator(".lc-read").focus()
            page.keyboard.press("Enter")
            page.wait_for_function(
                "() => document.querySelector('.lc-status').textContent.startsWith('Read')",
                timeout=60_000)

        read()  # the default text: the weights load now
        check_page(page, book, DEFAULT)
        for text in ("JULIET:\nO Romeo, Romeo! wherefore art thou Romeo?", "To be, or not"):
            read(text)
            check_page(page, book, text)

        # once the weights are here, the grid follows the text as it is typed
        box = root.locator(".lc-prompt-box")
        box.focus()
        page.keyboard.press("End")
        page.keyboard.type(" to be")
        page.wait_for_function("() => document.querySelector('.lc-status').textContent"
                               ".startsWith('Read 19 ')")
        check_page(page, book, "To be, or not to be")

        # texts it cannot read: the generator's message, nothing recomputed
        before = page.evaluate(GRID)
        for text in ("", "caf\u00e9 1", "a" * 128):
            box.fill(text)
            root.locator(".lc-read").focus()
            page.keyboard.press("Enter")
            with pytest.raises(ValueError) as err:
                lc.text_generator(book, prompt=text)
            assert root.locator(".lc-error").inner_text() == \
                f"Not a prompt the model reads: {str(err.value).split(': ', 1)[1]}."
            assert box.get_attribute("aria-invalid") == "true"
        assert page.evaluate(GRID) == before

        # a lone character: one column, no loss
        read("Q")
        assert root.locator(".lc-error").inner_text() == ""
        assert root.locator(".lc-lens-last").count() == 5 and root.locator(".lc-loss").count() == 0
        assert root.locator(".lc-lens-intro").inner_text() == logit_lens.MESSAGES["no_loss"]
        read(DEFAULT)

        # contrast enough in both themes; on a phone only the grid's own box scrolls sideways,
        # and the keyboard scrolls it
        for theme in ("light", "dark"):
            page.evaluate(f"""() => {{ document.documentElement.dataset.theme = '{theme}';
                document.body.style.background = '{THEMES[theme][0]}';
                document.body.style.color = '{THEMES[theme][1]}'; }}""")
            serious = [(v["id"], v["nodes"][0]["target"])
                       for v in Axe().run(page).response["violations"]
                       if v["impact"] in ("serious", "critical")]
            assert not serious, f"{theme}: {serious}"
        page.set_viewport_size({"width": 390, "height": 900})
        wide = page.evaluate("""() => [...document.querySelectorAll('.lc-root, .lc-root *')]
            .filter(e => !e.closest('.lc-lens-scroll .lc-lens-grid'))
            .filter(e => e.getBoundingClientRect().right > 391)
            .map(e => e.tagName + '.' + e.className)""")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 and not wide
        scroller = root.locator(".lc-lens-scroll")
        assert page.evaluate("() => { const s = document.querySelector('.lc-lens-scroll');"
                             " return s.scrollWidth > s.clientWidth; }")
        scroller.focus()
        for _ in range(4):
            page.keyboard.press("ArrowRight")
        page.wait_for_function("() => document.querySelector('.lc-lens-scroll').scrollLeft > 0")
        assert not errors, errors
        browser.close()
