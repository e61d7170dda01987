"""The browser-side controls of ``attention_lib.controls`` in headless Chromium.

Each control's HTML is loaded on its own (``page.set_content``, no server), every control is
moved by keyboard (focus, arrow keys, typing, Enter, Space), and what the page displays is
compared with ``attention_lib`` computed here. Also checked: the script ran (the note for
script-less viewers is gone), every visible control has a visible label, nothing is wider
than a 390 px phone, axe-core finds no serious violation (contrast included) in the light and
the dark theme, and the console stays free of errors.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
from chromium import ARGS, CHROMIUM, needs_chromium
from controls_helpers import KINDS, causal_example, induction_model

import attention_lib as al
from attention_lib import _validation
from attention_lib import controls as lc
from attention_lib.controls.saturation import MAX_D_K

pytestmark = needs_chromium

PHONE = 390
THEMES = {"light": ("#ffffff", "#222832"), "dark": ("#121212", "#ced6dd")}


def page_html(markup: str, theme: str = "light") -> str:
    """A bare page as sphinx-book-theme frames it: the theme on <html>, its colours on <body>."""
    bg, fg = THEMES[theme]
    return (f'<!doctype html><html lang="en" data-theme="{theme}" data-mode="{theme}"><head>'
            '<meta charset="utf-8"><meta name="viewport" content="width=device-width, '
            f'initial-scale=1"><title>control</title><style>body {{ background: {bg}; '
            f'color: {fg}; margin: 8px; }}</style></head><body><main>{markup}</main></body>'
            "</html>")


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield browser
        browser.close()


class Control:
    """One control loaded alone in a page, with the console errors it caused."""

    def __init__(self, browser, markup: str, *, theme: str = "light", width: int = 1280):
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.errors: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.set_content(page_html(markup, theme))
        self.root = self.page.locator(".lc-root")

    def texts(self, selector: str) -> list[str]:
        return self.root.locator(selector).all_inner_texts()

    def floats(self, selector: str) -> list[float]:
        return [float(t) for t in self.texts(selector)]

    def exact(self, selector: str = ".lc-weight") -> list[float]:
        loc = self.root.locator(selector)
        return [float(loc.nth(i).get_attribute("data-exact")) for i in range(loc.count())]

    def vectors(self, selector: str) -> list[list[float]]:
        return [json.loads(t) for t in self.texts(selector)]

    def type_into(self, selector: str, text: str, *, enter: bool = True) -> None:
        field = self.root.locator(selector)
        field.focus()
        self.page.keyboard.press("Control+A")
        self.page.keyboard.press("Delete")
        self.page.keyboard.type(text)
        if enter:
            self.page.keyboard.press("Enter")

    def press(self, selector: str, key: str, times: int = 1) -> None:
        self.root.locator(selector).focus()
        for _ in range(times):
            self.page.keyboard.press(key)

    def close(self) -> None:
        assert not self.errors, f"console errors: {self.errors}"
        self.page.close()


def assert_shown(shown, expected, digits, what=""):
    """Displayed numbers (rounded to ``digits`` decimals) equal the library's values."""
    np.testing.assert_allclose(shown, expected, rtol=0, atol=0.5 * 10.0**-digits + 1e-12,
                               err_msg=what)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A short training run (the forward pass is compared, not the model's quality)."""
    result = al.train_retrieval(seed=0, steps=300)
    path = al.export_retrieval_model(result, tmp_path_factory.mktemp("model") / "model.json")
    return result, json.loads(path.read_text())


def builders(trained):
    from controls_helpers import builders as by_kind

    return by_kind(trained[1])


# --- what every control must do --------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_script_runs_and_every_control_has_a_visible_label(chromium, trained, kind):
    c = Control(chromium, builders(trained)[kind]()._repr_html_())
    assert c.root.locator(".lc-static-note").count() == 0, "the script did not run"
    found = c.page.evaluate("""() => [...document.querySelectorAll(
            '.lc-root input, .lc-root select, .lc-root button, .lc-root textarea')]
        .filter(el => el.offsetWidth > 0)
        .map(el => {
            const visible = l => l.offsetWidth > 0 && l.innerText.trim() !== '';
            const named = el.tagName === 'BUTTON' ? el.innerText.trim() !== ''
                : [...el.labels].some(visible);
            return {html: el.outerHTML.slice(0, 80), named: named, cls: el.className,
                    disabled: el.disabled};
        })""")
    unlabelled = [f["html"] for f in found if not f["named"]]
    assert not unlabelled, f"{kind}: controls without a visible label: {unlabelled}"
    # Live now; only the division box waits while the tutorial's row (never divided) is shown.
    still = [f["cls"] for f in found if f["disabled"]]
    assert still == (["lc-divide"] if kind == "saturation" else []), f"{kind}: {still}"
    assert c.root.locator("input, select, button, textarea").count() > 0
    c.close()


@pytest.mark.parametrize("kind", KINDS)
def test_without_a_script_the_starting_values_and_the_note_show(chromium, trained, kind):
    # An untrusted notebook strips the script: numbers and a note, the controls inert.
    context = chromium.new_context(java_script_enabled=False)
    page = context.new_page()
    page.set_content(page_html(builders(trained)[kind]()._repr_html_()))
    root = page.locator(".lc-root")
    assert root.locator(".lc-static-note").is_visible()
    assert "Trust Notebook" in root.locator(".lc-static-note").inner_text()
    weights = [float(t) for t in root.locator(".lc-weight, .lc-heat td").all_inner_texts()]
    assert weights and all(0.0 <= w <= 1.0 for w in weights) and max(weights) > 0
    live = root.locator("input, select, button, textarea")
    assert all(live.nth(i).is_disabled() for i in range(live.count()))
    context.close()


@pytest.mark.parametrize("kind", KINDS)
def test_fits_a_phone(chromium, trained, kind):
    c = Control(chromium, builders(trained)[kind]()._repr_html_(), width=PHONE)
    wide = c.page.evaluate(f"""() => [...document.querySelectorAll('.lc-root, .lc-root *')]
        .filter(e => e.getBoundingClientRect().right > {PHONE} + 1)
        .map(e => e.tagName + '.' + e.className)""")
    width = c.page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE and not wide, f"{kind}: {width} px wide; sticking out: {wide[:5]}"
    c.close()


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("kind", KINDS)
def test_no_serious_accessibility_violation(chromium, trained, kind, theme):
    from axe_playwright_python.sync_playwright import Axe

    c = Control(chromium, builders(trained)[kind]()._repr_html_(), theme=theme)
    results = Axe().run(c.page)
    serious = [(v["id"], v["impact"], v["nodes"][0]["target"])
               for v in results.response["violations"]
               if v["impact"] in ("serious", "critical")]
    assert not serious, f"{kind} ({theme}): {serious}"
    c.close()


# --- 1. the saturation explorer ---------------------------------------------------------------

def sat_expected(row_scores, d_k, divide, c):
    s = np.asarray(row_scores, dtype=np.float64)
    if d_k is not None:
        s = al.saturation_scores(d_k, divide_by_sqrt_dk=divide)
    return al.saturation_stats(s, c)


def check_saturation(c, row_scores, d_k, divide, scale):
    st = sat_expected(row_scores, d_k, divide, scale)
    what = f"d_k={d_k}, divide={divide}, c={scale}"
    assert_shown(c.floats(".lc-weight"), st.weights, 3, what)
    np.testing.assert_allclose(c.exact(), st.weights, rtol=0, atol=1e-12, err_msg=what)
    assert_shown(c.floats(".lc-entropy"), [float(st.entropy)], 3, what)
    assert_shown(c.floats(".lc-jnorm"), [float(st.jacobian_norm)], 4, what)
    assert_shown(c.floats(".lc-jmax"), [float(st.jacobian_max)], 4, what)


def test_saturation_explorer_by_keyboard(chromium):
    tutorial = al.examples.SATURATION_SCORES
    c = Control(chromium, lc.saturation_explorer()._repr_html_())
    number, slider = ".lc-scale-number", ".lc-scale"
    check_saturation(c, tutorial, None, True, 10.0)
    assert c.root.locator(".lc-divide").is_disabled()  # the tutorial's row is not divided
    assert c.root.locator(".lc-divide-hint").is_visible()

    # Typing c into the number field reaches the window where the row rounds to the
    # tutorial's printed one, and leaves it on both sides.
    step = float(c.root.locator(number).get_attribute("step"))
    grid = np.round(np.arange(37.9, 38.3, step), 6)
    hits = grid[np.all(al.softmax(grid[:, None] * tutorial).round(3)
                       == al.examples.SATURATION_PRINTED[10.0], axis=1)]
    printed = [f"{x:.3f}" for x in al.examples.SATURATION_PRINTED[10.0]]
    for value in (hits.min(), hits.max(), hits.min() - step, hits.max() + step):
        c.type_into(number, f"{value:.3f}")
        assert float(c.root.locator(slider).input_value()) == pytest.approx(value)
        check_saturation(c, tutorial, None, True, value)
        inside = bool(hits.min() <= value <= hits.max())
        assert (c.texts(".lc-weight") == printed) == inside, value

    # The slider by arrow keys: the number field follows.
    c.press(slider, "ArrowRight", 3)
    value = float(c.root.locator(slider).input_value())
    assert value == pytest.approx(hits.max() + 4 * step)
    assert float(c.root.locator(number).input_value()) == pytest.approx(value)
    check_saturation(c, tutorial, None, True, value)

    # Out of range: a visible message, the last values stay.
    before = c.texts(".lc-weight")
    c.type_into(number, "1000")
    assert "from 0 to 100" in c.root.locator(".lc-error").inner_text()
    assert c.root.locator(number).get_attribute("aria-invalid") == "true"
    assert c.texts(".lc-weight") == before
    c.type_into(number, "2.5")
    assert c.root.locator(".lc-error").inner_text() == ""

    # Every random row, divided and not (the check box by Space).
    dims = [r["d_k"] for r in json.loads(c.root.get_attribute("data-rows"))[1:]]
    assert dims == [4, 16, 64, 256, 1024]
    for d_k in dims:
        c.press(".lc-row", "ArrowDown")
        assert c.root.locator(".lc-row").input_value() == str(d_k)
        check_saturation(c, None, d_k, True, 2.5)
        assert not c.root.locator(".lc-divide-hint").is_visible()
        c.press(".lc-divide", "Space")
        check_saturation(c, None, d_k, False, 2.5)
        c.press(".lc-divide", "Space")
    c.close()


# --- 2. pick a query --------------------------------------------------------------------------

def test_query_picker_by_keyboard(chromium):
    ex = al.examples.cat_sat_on()
    q, k, v = al.project_qkv(ex.x, ex.w_q, ex.w_k, ex.w_v)
    out, w = al.scaled_dot_product_attention(q, k, v)
    d_k = q.shape[-1]
    c = Control(chromium, lc.query_picker(ex, query="The")._repr_html_())
    for i, token in enumerate(ex.tokens):
        if i:
            c.press(".lc-query", "ArrowDown")
        assert c.root.locator(".lc-query").input_value() == str(i)
        assert c.texts(".lc-name")[0] == token
        assert_shown(c.floats(".lc-score"), q[i] @ k.T / np.sqrt(d_k), 4, token)
        assert_shown(c.floats(".lc-weight"), w[i], 4, token)
        np.testing.assert_allclose(c.exact(), w[i], rtol=0, atol=1e-13)
        terms = w[i][:, None] * v  # (n, d_v): a_ij v_j
        assert_shown(c.vectors(".lc-term"), terms, 4, token)
        assert_shown(c.vectors(".lc-partial"), np.cumsum(terms, axis=0), 4, token)
        assert_shown(c.vectors(".lc-output"), [out[i]], 4, token)
        exact = json.loads(c.root.locator(".lc-output").get_attribute("data-exact"))
        np.testing.assert_allclose(exact, out[i], rtol=0, atol=1e-13)
    c.close()


# --- 3. the trained model of chapter 10 -------------------------------------------------------

SEQUENCES = [
    "c3 a7 f1 b1 h6 d0 ? f",      # six pairs, as in training
    "h2 ? h",                     # one pair
    "b5 g0 e3 ? e",               # fewer pairs than in training
    "a0 b1 c2 d3 e4 f5 g6 h7 ? d",  # every key stored
    "a1 b2 c3 ? g",               # the key looked up is not stored
    "  d4   c0 ? c ",             # extra spaces
]
BAD = ["c3 a7 f1", "c3 a9 ? c", "c3 c4 ? c", "c3 ? z", "? a", "c3 ? a ? b",
       "a0 b0 c0 d0 e0 f0 g0 h0 a1 ? a", "C3 ? c", ""]


def test_retrieval_playground_equals_retrieval_forward(chromium, trained):
    result, doc = trained
    vocab = doc["vocabulary"]
    c = Control(chromium, lc.retrieval_playground(doc)._repr_html_())
    for text in SEQUENCES:
        c.type_into(".lc-seq", text, enter=False)
        keys, values, query = lc.parse_retrieval_sequence(text, vocab)
        logits, w = al.retrieval_forward(result.params, [keys], [values], [query])
        assert c.root.locator(".lc-result").is_visible() and not c.texts(".lc-error")[0]
        np.testing.assert_allclose(c.exact(), w[0], rtol=0, atol=1e-6, err_msg=text)
        shown_logits = json.loads(c.root.locator(".lc-result").get_attribute("data-logits"))
        np.testing.assert_allclose(shown_logits, logits[0], rtol=0, atol=1e-6, err_msg=text)
        assert_shown(c.floats(".lc-weight"), w[0], 3, text)
        answer = c.root.locator(".lc-answer").inner_text()
        best = vocab["values"][int(np.argmax(logits[0]))]
        assert f"answers {best} (probability " in answer
        stored = dict(zip(keys, values, strict=True))
        if query in stored:
            right = vocab["values"][stored[query]] == best
            assert answer.endswith(": right." if right else ": wrong."), answer
        else:
            assert "no pair holds the key" in answer
        marked = c.root.locator("tr.lc-mark").all_inner_texts()
        assert len(marked) == (query in stored) and all("(looked up)" in m for m in marked)
    c.close()


def test_retrieval_playground_refuses_what_the_model_cannot_read(chromium, trained):
    _, doc = trained
    c = Control(chromium, lc.retrieval_playground(doc)._repr_html_())
    for text in BAD:
        with pytest.raises(ValueError) as info:
            lc.parse_retrieval_sequence(text, doc["vocabulary"])
        reason = str(info.value).split(": ", 1)[1]
        c.type_into(".lc-seq", text, enter=False)
        message = c.root.locator(".lc-error").inner_text()
        assert message == f"Not a sequence the model reads: {reason}.", (text, message)
        assert c.root.locator(".lc-error").is_visible()
        assert not c.root.locator(".lc-result").is_visible(), text
        assert c.root.locator(".lc-seq").get_attribute("aria-invalid") == "true"
    c.type_into(".lc-seq", SEQUENCES[0], enter=False)
    assert c.root.locator(".lc-result").is_visible() and not c.texts(".lc-error")[0]
    c.close()


# Separators as a reader may paste them: tabs, new lines, non-breaking and other Unicode
# spaces, runs of them; and characters that look like a space but are none.
SPACED = [
    "c3\ta7\tf1 ? f", "c3\u00a0a7 ?\u00a0a", "c3\na7\n?\nc", "c3    a7   ?     a",
    "\n\t c3 \u2003 a7\u3000?\u2009c \n", "c3\r\nb2\r\n? b", "c3\x1fa7\x85? a",
    "\u202fc3\u205fa7\u1680? c\u2028", "c3\u200ba7 ? c", "c3\ufeffa7 ? c", "c3 a7\u00a0?c",
]


def test_retrieval_playground_splits_as_the_library_does(chromium, trained):
    result, doc = trained
    c = Control(chromium, lc.retrieval_playground(doc)._repr_html_())
    field = c.root.locator(".lc-seq")
    for text in SPACED:
        field.fill(text)  # sets the text box's value as a paste would, then "input"
        # a text box keeps every character but turns \r\n into \n (both separators)
        assert field.input_value() == text.replace("\r\n", "\n"), repr(text)
        try:
            keys, values, query = lc.parse_retrieval_sequence(text, doc["vocabulary"])
        except ValueError as e:
            reason = str(e)[len(f"sequence={text!r}: "):]
            message = c.root.locator(".lc-error").inner_text()
            assert message == f"Not a sequence the model reads: {reason}.", repr(text)
            assert not c.root.locator(".lc-result").is_visible(), repr(text)
            continue
        assert c.root.locator(".lc-result").is_visible(), repr(text)
        assert not c.texts(".lc-error")[0], repr(text)
        _, w = al.retrieval_forward(result.params, [keys], [values], [query])
        np.testing.assert_allclose(c.exact(), w[0], rtol=0, atol=1e-6, err_msg=repr(text))
    c.close()


# --- no NaN or inf anywhere a builder's range reaches -----------------------------------------

BAD_NUMBERS = re.compile(r"NaN|Infinity|e\+|e-\d")


def assert_finite(c: Control, what: str) -> None:
    text = c.root.inner_text()
    assert not BAD_NUMBERS.search(text), f"{what}: {BAD_NUMBERS.findall(text)[:3]}"
    exact = c.page.evaluate("""() => [...document.querySelectorAll('[data-exact]')]
        .map(e => e.dataset.exact).filter(x => x !== '')""")
    assert all(np.isfinite(json.loads(x)).all() for x in exact), what


def test_saturation_explorer_at_the_ends_of_its_accepted_range(chromium):
    scores = [1e3, -1e3, 0.5]
    dims = (1, MAX_D_K)
    largest = max(1e3, *(np.abs(al.saturation_scores(d, divide_by_sqrt_dk=False)).max()
                         for d in dims))
    top = _validation.LARGEST_SHOWN / largest
    markup = lc.saturation_explorer(d_ks=dims, tutorial_scores=scores, scale_max=top,
                                    step=top / 1e6, scale=top)._repr_html_()
    c = Control(chromium, markup)
    for value in (repr(top), "0", repr(top / 3)):
        c.type_into(".lc-scale-number", value)
        for row in range(len(dims) + 1):
            c.root.locator(".lc-row").select_option(index=row)
            assert_finite(c, f"c = {value}, row {row}")
            if row:
                c.press(".lc-divide", "Space")
                assert_finite(c, f"c = {value}, row {row}, divide toggled")
    c.press(".lc-scale", "End")
    assert_finite(c, "slider at its end")
    c.close()


def test_projection_scale_explorer_at_the_end_of_its_accepted_range(chromium):
    ex = al.examples.cat_sat_on()
    q, k, _ = al.project_qkv(ex.x, ex.w_q, ex.w_k, ex.w_v)
    top = np.sqrt(_validation.LARGEST_SHOWN / max(1.0, np.abs(al.scaled_scores(q, k)).max()))
    c = Control(chromium, lc.projection_scale_explorer(ex, scale_max=top,
                                                      step=top / 1e4)._repr_html_())
    for value in (repr(top), "0"):
        c.type_into(".lc-scale-number", value)
        assert_finite(c, f"c = {value}")
    c.press(".lc-scale", "End")
    assert_finite(c, "slider at its end")
    c.close()


def test_causal_stepper_and_query_picker_with_the_largest_numbers_accepted(chromium):
    rng = np.random.default_rng(3)
    q, k = rng.normal(size=(2, 4, 2)) * 1e7  # scores up to about 1e14
    v = rng.normal(size=(4, 3)) * 1e14
    c = Control(chromium, lc.causal_stepper(q, k, v)._repr_html_())
    for _ in range(4):
        assert_finite(c, "causal stepper")
        c.press(".lc-next", "Enter")
    c.close()
    ex = al.examples.cat_sat_on()
    big = SimpleNamespace(tokens=ex.tokens, x=np.asarray(ex.x) * 1e6, w_q=ex.w_q, w_k=ex.w_k,
                          w_v=ex.w_v)
    c = Control(chromium, lc.query_picker(big)._repr_html_())
    for _ in range(4):
        assert_finite(c, "query picker")
        c.press(".lc-query", "ArrowDown")
    c.close()


def test_retrieval_playground_with_the_largest_scores_accepted(chromium, trained):
    _, doc = trained
    p = {n: np.asarray(x) for n, x in doc["params"].items()}
    pairs = (p["key_embed"][:, None] + p["value_embed"][None]).reshape(-1, p["w_k"].shape[0])
    q = p["query_embed"] @ p["w_q"] / np.sqrt(p["w_q"].shape[1])
    factor = 0.9 * _validation.LARGEST_SHOWN / max(np.abs(q @ (pairs @ p["w_k"]).T).max(),
                                               np.abs(q).max())
    big = json.loads(json.dumps(doc))
    big["params"]["w_q"] = (p["w_q"] * factor).tolist()
    c = Control(chromium, lc.retrieval_playground(big)._repr_html_())
    for text in SEQUENCES:
        c.type_into(".lc-seq", text, enter=False)
        assert_finite(c, text)
    c.close()


# --- 4. the causal stepper --------------------------------------------------------------------

def check_step(c, t, q, k, v, tokens):
    out, w = al.scaled_dot_product_attention(q, k, v, causal=True)
    n = len(tokens)
    assert int(c.root.locator(".lc-step").input_value()) == t
    assert c.root.locator(".lc-now").inner_text().startswith(f"step t = {t} of {n}")
    chips = c.texts(".lc-tokens li")
    assert [x.endswith("(masked)") for x in chips] == [j > t for j in range(1, n + 1)]
    assert chips[t - 1].endswith("(new query)")
    assert len(c.texts(".lc-cache li")) == t  # K and V of positions 1..t
    for j, line in enumerate(c.texts(".lc-cache li")):
        assert line.startswith(f"{j + 1} {tokens[j]}:") and "k = [" in line and "v = [" in line
        key, value = (json.loads(x) for x in re.findall(r"\[[^\]]*\]", line))
        assert_shown(key, k[j], 2)
        assert_shown(value, v[j], 2)
    assert_shown(c.floats(".lc-weight"), w[t - 1], 3, f"step {t}")
    np.testing.assert_allclose(c.exact(), w[t - 1], rtol=0, atol=1e-13)
    scores = c.texts(".lc-score")
    assert scores[t:] == ["masked"] * (n - t)
    assert_shown([float(s) for s in scores[:t]], (q[t - 1] @ k[:t].T) / np.sqrt(q.shape[1]), 3)
    assert_shown(c.vectors(".lc-output"), [out[t - 1]], 3, f"step {t}")


def test_causal_stepper_by_keyboard(chromium):
    q, k, v = causal_example()
    tokens = list(al.examples.cat_sat_on().tokens)
    c = Control(chromium, lc.causal_stepper(q, k, v, tokens)._repr_html_())
    check_step(c, 1, q, k, v, tokens)
    assert c.root.locator(".lc-prev").get_attribute("aria-disabled") == "true"
    for t in range(2, 5):
        c.press(".lc-next", "Enter")
        check_step(c, t, q, k, v, tokens)
    c.press(".lc-next", "Enter")  # at the end: nothing moves, the focus stays
    check_step(c, 4, q, k, v, tokens)
    assert c.page.evaluate("() => document.activeElement.className") == "lc-next"
    assert c.root.locator(".lc-next").get_attribute("aria-disabled") == "true"
    c.press(".lc-prev", " ")
    check_step(c, 3, q, k, v, tokens)
    c.press(".lc-step", "Home")
    check_step(c, 1, q, k, v, tokens)
    c.press(".lc-step", "ArrowRight")
    check_step(c, 2, q, k, v, tokens)
    c.press(".lc-step", "End")
    check_step(c, 4, q, k, v, tokens)
    c.close()


# --- 5. the projection-scale explorer ---------------------------------------------------------

def test_projection_scale_explorer_by_keyboard(chromium):
    ex = al.examples.cat_sat_on()
    c = Control(chromium, lc.projection_scale_explorer(ex)._repr_html_())

    def check(factor):
        w = al.projection_scale_weights(ex.x, ex.w_q, ex.w_k, [factor])[0]
        assert_shown(c.floats(".lc-heat td"), w.ravel(), 3, f"c = {factor}")
        np.testing.assert_allclose(c.exact(".lc-heat td"), w.ravel(), rtol=0, atol=1e-12)
        assert_shown(c.floats(".lc-c2"), [factor**2], 2)

    check(1.0)
    for factor in (0.0, 3.0, 10.0, 17.25, 30.0):
        c.type_into(".lc-scale-number", f"{factor:g}")
        check(factor)
    c.press(".lc-scale", "ArrowLeft", 5)
    factor = float(c.root.locator(".lc-scale").input_value())
    assert factor == pytest.approx(29.95)
    check(factor)
    c.close()


# --- 6. the text generator: the book's GPT in the page -----------------------------------------

@pytest.fixture(scope="module")
def book():
    return al.book_language_model()


def generated(c: Control) -> str:
    return c.page.evaluate("() => [...document.querySelectorAll('.lc-ch')]"
                           ".map(e => e.textContent).join('')").replace("↵", "\n")


def press_generate(c: Control, seed_note: str) -> None:
    c.press(".lc-generate", "Enter")
    c.page.wait_for_function(
        "(s) => document.querySelector('.lc-status').textContent.includes(s)", arg=seed_note,
        timeout=120_000)


def test_text_generator_writes_what_the_library_writes(chromium, book):
    c = Control(chromium, lc.text_generator(book, n_new=60)._repr_html_())
    c.root.locator(".lc-prompt-box").fill("Juliet:\nO Romeo")
    c.press(".lc-temp", "Home")  # temperature 0: greedy
    press_generate(c, "temperature 0.00 with seed 1")
    ids = book.encode("Juliet:\nO Romeo")
    greedy = al.generate(book.params, book.config, ids, 60, temperature=0)
    assert generated(c) == book.decode(greedy)
    logits = al.gpt_logits(book.params, book.config, greedy[None])[0, -1]
    page_logits = json.loads(c.root.get_attribute("data-logits"))
    np.testing.assert_allclose(page_logits, logits, rtol=0, atol=2e-3)

    c.press(".lc-temp", "ArrowRight", 18)  # 0.90
    c.type_into(".lc-seed", "5", enter=False)
    press_generate(c, "temperature 0.90 with seed 5")
    sampled = al.generate(book.params, book.config, ids, 60, temperature=0.9,
                          uniform=lc.mulberry32(5))
    assert generated(c) == book.decode(sampled)
    assert c.root.locator(".lc-ch.lc-prompt").count() == len("Juliet:\nO Romeo")
    c.close()


def test_text_generator_shows_each_heads_weights_from_the_chosen_character(chromium, book):
    c = Control(chromium, lc.text_generator(book, prompt="Romeo:\n", seed=2,
                                            n_new=40)._repr_html_())
    press_generate(c, "with seed 2")
    text = generated(c)
    w = al.gpt_attention_weights(book.params, book.config, book.encode(text)[None])[:, 0]
    c.press(".lc-pos", "Home")
    for pos in (0, 1, 6, 20, len(text) - 1):
        c.press(".lc-pos", "ArrowRight", pos - int(c.root.locator(".lc-pos").input_value()))
        assert c.root.locator(".lc-pos").input_value() == str(pos)
        rows = c.root.locator(".lc-heads tbody tr")
        assert rows.count() == book.config.n_layers * book.config.n_heads
        first = max(0, pos - 23)
        for r in range(rows.count()):
            layer, head = divmod(r, book.config.n_heads)
            cells = rows.nth(r).locator(".lc-hw")
            exact = [float(cells.nth(i).get_attribute("data-exact")) for i in range(cells.count())]
            np.testing.assert_allclose(exact, w[layer, head, pos, first:pos + 1], rtol=0,
                                       atol=1e-5, err_msg=f"position {pos}, row {r}")
        assert c.root.locator(".lc-ch.lc-sel").get_attribute("data-pos") == str(pos)
    c.close()


def test_text_generator_refuses_prompts_and_seeds_in_the_librarys_words(chromium, book):
    c = Control(chromium, lc.text_generator(book, n_new=10)._repr_html_())
    before = generated(c)
    for prompt, seed in (("", "1"), ("caf\u00e9 1", "1"), ("a" * 128, "1"), ("ok", "1.5"),
                         ("ok", "-3"), ("ok", "4294967296")):
        c.root.locator(".lc-prompt-box").fill(prompt)
        c.root.locator(".lc-seed").fill(seed)
        c.press(".lc-generate", "Enter")
        message = c.root.locator(".lc-error").inner_text()
        if seed != "1":
            assert message == lc.generator.MESSAGES["seed"]
        else:
            with pytest.raises(ValueError) as err:
                lc.text_generator(book, prompt=prompt)
            assert message == f"Not a prompt the model reads: {str(err.value).split(': ', 1)[1]}."
        assert generated(c) == before
    c.close()


# --- 7. the induction playground: an attention-only GPT with rotary positions in the page ------

IND_SEQUENCES = [
    "Kd9 Zr2gHvLp Kd9 Zr2gHvLp xq",   # a segment written twice, then more tokens
    "A",                              # one token
    "ABAB",                           # the copy right after the first
    "+/+/ 09az 09az",                 # the last two characters of the alphabet
    "B" * 32,                         # the whole context, one token repeated
    "  q\tQ\nq  ",                    # white space of several kinds, skipped
    "Qx7mWp2 Qx7mWp2 Qx7mWp2 Qx",    # three copies
]
IND_BAD = ["", "A-B", "ABC!", "A" * 33, "xyz \u00e9", "A\u200bB", "  \n "]


def check_induction(c, params, config, text, t, keep):
    """Every head's weights from position t, the outlined copy target and the logits."""
    ids = lc.parse_induction_sequence(text)
    w = al.gpt_attention_weights(params, config, ids[None], head_mask=keep)[:, 0, :, t]
    logits = al.gpt_logits(params, config, ids[None], head_mask=keep)[0, t]
    what = f"{text!r} at t={t}, keep={keep.tolist()}"
    assert c.root.locator(".lc-result").is_visible() and not c.texts(".lc-error")[0], what
    assert c.root.locator(".lc-pos").input_value() == str(t), what
    assert c.root.locator(".lc-pos").get_attribute("max") == str(ids.size - 1)
    rows = c.root.locator(".lc-heads tbody tr")
    assert rows.count() == config.n_layers * config.n_heads
    target = int(lc.copy_targets(ids)[t])
    for r in range(rows.count()):
        layer, head = divmod(r, config.n_heads)
        cells = rows.nth(r).locator(".lc-hw")
        exact = [float(cells.nth(i).get_attribute("data-exact")) for i in range(cells.count())]
        np.testing.assert_allclose(exact, w[layer, head, :t + 1], rtol=0, atol=1e-9,
                                   err_msg=f"{what}, row {r}")
        outlined = [i for i in range(cells.count())
                    if "lc-target" in cells.nth(i).get_attribute("class")]
        assert outlined == ([target] if target >= 0 else []), what
        assert rows.nth(r).locator("th").inner_text().endswith(
            "(removed)" if not keep[layer, head] else f"H{head + 1}")
    shown = json.loads(c.root.locator(".lc-result").get_attribute("data-logits"))
    np.testing.assert_allclose(shown, logits, rtol=0, atol=1e-9, err_msg=what)
    chips = c.root.locator(".lc-ind-tokens li")
    assert chips.count() == ids.size
    assert "lc-new" in chips.nth(t).get_attribute("class")
    p = al.softmax(logits)
    summary = c.root.locator(".lc-summary").inner_text()
    top = lc.INDUCTION_ALPHABET[int(np.argmax(p))]
    assert f"top choice is {top} ({p.max():.3f})" in summary, (what, summary)
    if target >= 0:
        assert f"at position {target} (outlined)" in summary
        assert f"probability {p[ids[target]]:.3f};" in summary
    else:
        assert "nothing to copy" in summary


def test_induction_playground_equals_the_library_by_keyboard(chromium):
    params, config = induction_model()
    keep = np.ones((2, 2), dtype=bool)
    c = Control(chromium, lc.induction_playground(params, config, position=14)._repr_html_())
    check_induction(c, params, config, "Kd9 Zr2gHvLp Kd9 Zr2gHvLp xq", 14, keep)
    for text in IND_SEQUENCES:
        c.type_into(".lc-seq", text, enter=False)
        check_induction(c, params, config, text, lc.parse_induction_sequence(text).size - 1,
                        keep)
    text = IND_SEQUENCES[-1]
    c.press(".lc-pos", "Home")
    check_induction(c, params, config, text, 0, keep)
    c.press(".lc-pos", "ArrowRight", 9)
    check_induction(c, params, config, text, 9, keep)
    c.press(".lc-pos", "ArrowLeft", 2)
    check_induction(c, params, config, text, 7, keep)
    # remove heads by keyboard (Space on a check box); the view stays at the position
    uid = c.root.get_attribute("id")
    for layer, head in ((0, 1), (1, 0), (0, 1)):
        c.press(f"#{uid}-rm-{layer}-{head}", " ")
        keep[layer, head] = not keep[layer, head]
        check_induction(c, params, config, text, 7, keep)
    c.press(".lc-pos", "End")
    check_induction(c, params, config, text, lc.parse_induction_sequence(text).size - 1, keep)
    c.close()


def test_induction_playground_refuses_in_the_librarys_words(chromium):
    params, config = induction_model(seed=1)
    c = Control(chromium, lc.induction_playground(params, config)._repr_html_())
    for text in IND_BAD:
        with pytest.raises(ValueError) as info:
            lc.parse_induction_sequence(text)
        reason = str(info.value).split(": ", 1)[1]
        c.root.locator(".lc-seq").fill(text)  # as a paste would, characters kept
        message = c.root.locator(".lc-error").inner_text()
        assert message == f"Not a sequence the model reads: {reason}.", (text, message)
        assert not c.root.locator(".lc-result").is_visible(), text
        assert c.root.locator(".lc-seq").get_attribute("aria-invalid") == "true"
    c.type_into(".lc-seq", "ABAB", enter=False)
    check_induction(c, params, config, "ABAB", 3, np.ones((2, 2), dtype=bool))
# --- 7. the trained coreference encoder and the toy translator in the page --------------------

def choose(c: Control, selector: str, value: str) -> None:
    """Pick ``value`` in a list by keyboard: Home, then ArrowDown to it."""
    values = c.root.locator(f"{selector} option").evaluate_all("els => els.map(e => e.value)")
    c.press(selector, "Home")
    c.press(selector, "ArrowDown", values.index(value))
    assert c.root.locator(selector).input_value() == value


@pytest.fixture(scope="module")
def models():
    from controls_helpers import trained_models

    return trained_models()


COREF_PICKS = [
    {"first": "animal", "verb": "cross", "second": "street", "adjective": "wide"},
    {"first": "dog", "verb": "chase", "second": "cat", "adjective": "fast"},
    {"first": "girl", "verb": "walk across", "second": "park", "adjective": "sleepy"},
    {"first": "street", "verb": "follow", "second": "horse", "adjective": "muddy"},  # no corpus
]


def test_coreference_explorer_equals_the_library(chromium, models):
    from attention_lib.controls.coreference import MESSAGES, sentence_status
    from attention_lib.training.coreference import FRAME

    model = models[0]
    c = Control(chromium, lc.coreference_explorer(model)._repr_html_())
    for picks in COREF_PICKS:
        for slot in ("first", "verb", "second", "adjective"):
            if c.root.locator(f".lc-{slot}").input_value() != picks[slot]:
                choose(c, f".lc-{slot}", picks[slot])
        c.page.wait_for_function("([r, shown]) => r.dataset.shown === shown",
                                 arg=[c.root.element_handle(),
                                      json.dumps(picks, separators=(",", ":"))],
                                 timeout=60_000)
        sentence = FRAME.format(**picks)
        assert c.texts(".lc-sentence") == [sentence]
        p = model.probabilities([sentence])[0]
        shown = json.loads(c.root.locator(".lc-result").get_attribute("data-probabilities"))
        np.testing.assert_allclose(shown, p, rtol=0, atol=1e-10, err_msg=sentence)
        answer = c.texts(".lc-said")[0]
        assert answer == model.predict(sentence)
        assert f"(probability {p.max():.2f})" in c.texts(".lc-answer")[0]
        w = model.it_weights(sentence)  # (L, h, n): the table has a row per word
        n = len(sentence.split())
        np.testing.assert_allclose(c.exact(".lc-heat-cell"), w.reshape(-1, n).T.ravel(),
                                   rtol=0, atol=1e-10, err_msg=sentence)
        assert_shown(c.floats(".lc-heat-cell"), w.reshape(-1, n).T.ravel(), 2, sentence)
        assert c.texts(".lc-where") == [f"This is {MESSAGES[sentence_status(**picks)]}."]
    c.close()


def test_coreference_explorer_refuses_one_noun_twice(chromium, models):
    c = Control(chromium, lc.coreference_explorer(models[0])._repr_html_())
    choose(c, ".lc-second", "animal")
    assert c.texts(".lc-error") == [lc.coreference.MESSAGES["same"]]
    assert not c.root.locator(".lc-result").is_visible()
    assert c.root.locator(".lc-first").get_attribute("aria-invalid") == "true"
    with pytest.raises(ValueError, match="two different nouns"):
        lc.coreference_explorer(models[0], second="animal")
    choose(c, ".lc-second", "road")
    c.page.wait_for_function("(r) => r.dataset.shown && !r.querySelector('.lc-result').hidden",
                             arg=c.root.element_handle(), timeout=60_000)
    assert c.texts(".lc-error") == [""] and c.root.locator(".lc-first").get_attribute(
        "aria-invalid") is None
    c.close()


TRANSLATION_PICKS = [
    ("a tall farmer follows the young child", (1, 0)),
    ("the dog sees a cat", (1, 1)),
    ("the small bird likes the small bird", (0, 0)),
    ("a red king calls a black horse", (1, 0)),
]


def test_translation_explorer_equals_the_library(chromium, models):
    model = models[1]
    c = Control(chromium, lc.translation_explorer(model)._repr_html_())
    for source, head in TRANSLATION_PICKS:
        slots = lc.parse_translation_source(source)
        for name, value in slots.items():
            if c.root.locator(f".lc-{name}").input_value() != value:
                choose(c, f".lc-{name}", value)
        choose(c, ".lc-head", f"{head[0]},{head[1]}")
        said = model.translate(source)
        c.page.wait_for_function(
            "([r, s]) => r.dataset.translation !== undefined && "
            "r.querySelector('.lc-source').textContent === s",
            arg=[c.root.element_handle(), source], timeout=60_000)
        assert c.root.get_attribute("data-translation") == said
        assert c.texts(".lc-translation") == [said]
        rule, alignment = al.translate_by_rule(source)
        assert c.texts(".lc-rule") == [rule]
        w = model.cross_attention(source, said)[head] if said else np.zeros((0, 0))
        np.testing.assert_allclose(c.exact(".lc-heat-cell"), w.ravel(), rtol=0, atol=1e-10,
                                   err_msg=source)
        assert_shown(c.floats(".lc-heat-cell"), w.ravel(), 2, source)
        gold = c.root.locator(".lc-heat-cell.lc-gold")
        cells = c.root.locator(".lc-heat-cell")
        marked = {i for i in range(cells.count())
                  if "lc-gold" in (cells.nth(i).get_attribute("class") or "")}
        expected = {j * len(source.split()) + alignment[j]
                    for j, word in enumerate(said.split())
                    if j < len(rule.split()) and rule.split()[j] == word}
        assert marked == expected and gold.count() == len(expected)
        assert f"layer {head[0] + 1}, head {head[1] + 1}" in c.root.inner_text()
    c.close()
