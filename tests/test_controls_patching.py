"""The patching map: its element (what it shows before its script runs, what it carries,
what it refuses) and, in headless Chromium, every number the page computes against
``al.coreference_patching`` and a patched run written here with hooks."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest
from chromium import ARGS, CHROMIUM, needs_chromium
from controls_helpers import carried_weights, data_json

import attention_lib as al
from attention_lib import controls
from attention_lib.controls.patching import MESSAGES
from attention_lib.training import coreference as co

PHONE = 390


@pytest.fixture(scope="module")
def model():
    return al.trained_coreference_model()


def logits_at_it(model, sentence, hooks=None):
    """The two nouns' logits at "it", by hand from the model core's logits."""
    ids = {w: i for i, w in enumerate(model.vocabulary)}
    words = sentence.split()
    logits = al.gpt_logits(model.params, model.config, np.array([[ids[w] for w in words]]),
                           hooks=hooks)[0, words.index("it")]
    return logits[[ids[n] for n in model.candidates(sentence)]]


def patched_run(model, clean, corrupt, site, index):
    """The corrupt run with the clean run's activation at ``site`` put back: head ``index``
    (every position), or the residual stream at position ``index``. Probabilities of the
    two nouns and the logit difference (the clean referent's minus the other's)."""
    kept = {}
    logits_at_it(model, clean, al.capture_hooks(kept, [site]))

    def put_back(a):  # heads (1, h, T, e): head `index`; the stream (1, T, d): a position
        a = a.copy()
        a[0, index] = kept[site][0, index]
        return a

    z = logits_at_it(model, corrupt, {site: put_back})
    adjective = next(a for a, b in zip(clean.split(), corrupt.split(), strict=True) if a != b)
    r = 0 if adjective in co.FIRST_ADJECTIVES else 1
    p = np.exp(z - z.max())
    return p / p.sum(), z[r] - z[1 - r]


def expected_cells(model, clean, corrupt):
    """The map's numbers in page order: heads row by row, then the stream a row per word."""
    result = al.coreference_patching(model, [(clean, corrupt)])
    return np.concatenate([result.heads.ravel(), result.resid.T.ravel()]), result


# --- the element -----------------------------------------------------------------------------

def test_the_values_shown_first_are_the_librarys(model):
    markup = controls.patching_map(model, pair=1)._repr_html_()
    static = markup.split("<script")[0]
    clean, corrupt = data_json(markup, "pairs")[1]
    assert (clean, corrupt) == ("The fox didn't chase the dog because it was too fast",
                                "The fox didn't chase the dog because it was too tired")
    want, result = expected_cells(model, clean, corrupt)
    shown = [float(x) for x in re.findall(r'class="lc-site"[^>]*>([-0-9.]+)<', static)]
    np.testing.assert_allclose(shown, want, rtol=0, atol=0.005 + 1e-12)
    labels = re.findall(r'<tr><th scope="row">([^<]*)</th><td class="lc-patch', static)
    labels = [html.unescape(x) for x in labels]
    assert labels[2:] == [*clean.split()[:-1], "fast/tired"]
    assert list(result.labels[:-1]) == labels[2:-1]
    rows = re.findall(r'<tr class="lc-run"><th scope="row">([^<]*)</th><td[^>]*>([0-9.]+)</td>'
                      r'<td[^>]*>([0-9.]+)</td><td class="lc-num lc-diff">([-0-9.]+)<', static)
    assert [r[0] for r in rows] == ["clean", "corrupt", "patched: head L1 H1"]
    p, diff = patched_run(model, clean, corrupt, "blocks.0.attn.heads", 0)
    np.testing.assert_allclose([float(x) for x in rows[2][1:]], [*p, diff], rtol=0,
                               atol=0.005 + 1e-12)
    assert all(' disabled' in b for b in re.findall(r'<button type="button" class="lc-site"'
                                                    r'[^>]*>', static))


def test_the_twins_are_the_corpus_twins():
    for clean, corrupt in al.coreference_minimal_pairs("test")[::29]:
        assert controls.patching_twin(clean) == corrupt
    assert controls.patching_twin("The cow didn't follow the boy because it was too big") == (
        "The cow didn't follow the boy because it was too sleepy")  # big is 5th, sleepy too
    # any sentence the encoder reads, outside the frame too
    assert controls.patching_twin("it was too the dog cat sleepy") == "it was too the dog cat big"


@pytest.mark.parametrize("sentence, message", [
    ("", MESSAGES["empty"]),
    ("The animal didn't cross the street because it was too sad", "“sad”"),
    ("The animal didn't walk across the street because it was too tired tired", "13 words"),
    ("The animal didn't cross the street because was too tired", "(it has 0)"),
    ("The animal didn't cross the animal because it was too tired", "(it has “animal”, "),
    ("The animal didn't cross the street because it was too", "its last word, “too”"),
    ("The animal didn't cross the street because it was too fast",
     "second noun that is a place (“street”)"),
])
def test_a_sentence_it_cannot_patch_is_refused(sentence, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        controls.patching_twin(sentence)
    with pytest.raises(TypeError, match="sentence"):
        controls.patching_twin(["it"])


def test_the_element_carries_the_very_weights_and_the_rules(model):
    markup = controls.patching_map(model)._repr_html_()
    carried_weights(markup, model.params, "<f4")
    assert data_json(markup, "vocabulary") == list(model.vocabulary)
    twins = data_json(markup, "twins")
    for kind, second in (("place", "road"), ("agent", "goat")):
        for adjective, other in twins[kind].items():
            sentence = f"The man didn't chase the {second} because it was too {adjective}"
            assert controls.patching_twin(sentence).split()[-1] == other
    assert data_json(markup, "first") == list(co.FIRST_ADJECTIVES)
    pairs = data_json(markup, "pairs")
    assert sorted(len(c.split()) for c, _ in pairs) == [11, 11, 12, 12]
    test = set(al.coreference_minimal_pairs("test"))
    assert all(tuple(p) in test for p in pairs)


def test_bad_arguments_are_refused(model):
    with pytest.raises(TypeError, match="CoreferenceModel"):
        controls.patching_map(model.params)
    with pytest.raises(TypeError, match="list of"):
        controls.patching_map(model, "The animal didn't cross")
    tired, wide = al.coreference_minimal_pairs("test")[0]
    with pytest.raises(ValueError, match=r"pairs\[1\] differs in 2 words"):
        controls.patching_map(model, [(tired, wide), (tired, wide.replace("animal", "dog"))])
    with pytest.raises(ValueError, match=r"pairs\[0\] differs in 'tired' and 'slow'"):
        controls.patching_map(model, [(tired, tired.replace("tired", "slow"))])
    with pytest.raises(ValueError, match=r"pairs\[0\].*does not know"):
        controls.patching_map(model, [(tired, wide.replace("wide", "happy"))])
    with pytest.raises(ValueError, match="pair=4; expected the index of a pair, 0 to 3"):
        controls.patching_map(model, pair=4)
    with pytest.raises(TypeError, match="pair=True"):
        controls.patching_map(model, pair=True)
    with pytest.raises(TypeError, match="sentence"):
        controls.patching_map(model, sentence=3)
    with pytest.raises(TypeError, match="title"):
        controls.patching_map(model, title=None)
    with pytest.raises(ValueError, match="float32"):
        controls.patching_map(al.init_coreference_model())


# --- in the browser ----------------------------------------------------------------------------

def page_html(markup: str, theme: str) -> str:
    bg, fg = {"light": ("#ffffff", "#222832"), "dark": ("#121212", "#ced6dd")}[theme]
    return (f'<!doctype html><html lang="en" data-theme="{theme}"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1"><title>map'
            f'</title><style>body {{ background: {bg}; color: {fg}; margin: 8px; }}</style>'
            f"</head><body><main>{markup}</main></body></html>")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


TYPED = ["The cow didn't walk across the yard because it was too dark",  # 12 words
         "The goat didn't follow the cat because it was too slow"]  # 11 words


@pytest.fixture(scope="module")
def page(browser, model):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content(page_html(controls.patching_map(model)._repr_html_(), "light"))
    yield page
    page.close()
    assert not errors, errors


def shown_after(page, act, pair):
    act()
    page.wait_for_function("shown => document.querySelector('.lc-root').dataset.shown === shown",
                           arg=json.dumps(list(pair), separators=(",", ":")), timeout=30_000)


def cells(page):
    buttons = page.locator(".lc-site")
    exact = buttons.evaluate_all("bs => bs.map(b => Number(b.dataset.exact))")
    return np.array(exact), np.array([float(t) for t in buttons.all_inner_texts()])


def patched_shown(page):
    row = page.locator(".lc-run").nth(2)
    ps = row.locator(".lc-p").evaluate_all("cs => cs.map(c => Number(c.dataset.exact))")
    return row.locator("th").inner_text(), ps, float(row.locator(".lc-diff").inner_text())


@needs_chromium
def test_every_cell_is_the_librarys_number(page, model):
    pairs = [tuple(p) for p in data_json(controls.patching_map(model)._repr_html_(), "pairs")]
    typed = [(s, controls.patching_twin(s)) for s in TYPED]
    select = page.locator(".lc-patch-pair")
    for n, pair in enumerate(pairs + typed):
        if n == 0:  # the pair shown first: pressing a cell computes it
            act = lambda: page.locator(".lc-site").first.click()  # noqa: E731
        elif n < len(pairs):
            def act(n=n):
                select.focus()
                page.keyboard.press("Home")
                for _ in range(n):
                    page.keyboard.press("ArrowDown")
        else:
            def act(sentence=pair[0]):
                page.locator(".lc-typed").fill(sentence)
                page.locator(".lc-typed").press("Enter")
        shown_after(page, act, pair)
        want, _ = expected_cells(model, *pair)
        exact, text = cells(page)
        np.testing.assert_allclose(exact, want, rtol=0, atol=1e-9, err_msg=pair[0])
        np.testing.assert_allclose(text, want, rtol=0, atol=0.005 + 1e-9, err_msg=pair[0])
        assert page.locator(".lc-clean").inner_text() == pair[0]
        assert page.locator(".lc-corrupt").inner_text() == pair[1]


@needs_chromium
def test_a_pressed_cell_shows_its_patched_run(page, model):
    clean, corrupt = TYPED[0], controls.patching_twin(TYPED[0])
    page.locator(".lc-typed").fill(clean)
    shown_after(page, lambda: page.locator(".lc-use").click(), (clean, corrupt))
    it = clean.split().index("it")
    checks = [("blocks.1.resid_pre", it, "click"), ("blocks.0.attn.heads", 1, "click"),
              ("blocks.1.attn.heads", 0, "tab")]  # Tab from L1 H2 reaches L2 H1
    for site, index, how in checks:
        if how == "click":
            page.locator(f'.lc-site[data-site="{site}"][data-index="{index}"]').click()
        else:
            page.keyboard.press("Tab")
            page.keyboard.press("Enter")
        assert json.loads(page.locator(".lc-root").get_attribute("data-chosen")) == [site, index]
        p, diff = patched_run(model, clean, corrupt, site, index)
        name, shown_p, shown_diff = patched_shown(page)
        np.testing.assert_allclose(shown_p, p, rtol=0, atol=1e-9, err_msg=site)
        assert abs(shown_diff - diff) <= 0.005 + 1e-9
        pressed = page.locator('.lc-site[aria-pressed="true"]')
        assert pressed.count() == 1 and pressed.get_attribute("data-site") == site
        assert name.startswith("patched: ")
    assert page.locator(".lc-site").nth(2).evaluate("b => b === document.activeElement")


@needs_chromium
def test_a_sentence_it_cannot_read_gets_the_librarys_reason(page):
    for sentence in ["The animal didn't cross the street because it was too fast",
                     "The animal didn't cross the street because it was too sad"]:
        page.locator(".lc-typed").fill(sentence)
        page.locator(".lc-typed").press("Enter")
        with pytest.raises(ValueError) as refused:
            controls.patching_twin(sentence)
        reason = str(refused.value).split(": ", 1)[1]
        assert page.locator(".lc-error").inner_text() == f"Not a sentence the encoder can " \
                                                         f"patch: {reason}."
        assert page.locator(".lc-typed").get_attribute("aria-invalid") == "true"
        assert page.locator(".lc-result").is_hidden()
    page.locator(".lc-patch-pair").select_option("0")
    page.wait_for_function("() => !document.querySelector('.lc-result').hidden")
    assert page.locator(".lc-error").inner_text() == ""


@needs_chromium
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_fits_a_phone_and_passes_axe(browser, model, theme):
    from axe_playwright_python.sync_playwright import Axe

    page = browser.new_page(viewport={"width": PHONE, "height": 800})
    page.set_content(page_html(controls.patching_map(model)._repr_html_(), theme))
    page.locator(".lc-site").nth(3).click()
    page.wait_for_function("() => document.querySelector('.lc-root').dataset.shown")
    wide = page.evaluate(f"""() => [...document.querySelectorAll('.lc-root, .lc-root *')]
        .filter(e => e.getBoundingClientRect().right > {PHONE} + 1)
        .map(e => e.tagName + '.' + e.className)""")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE and not wide
    unlabelled = page.evaluate("""() => [...document.querySelectorAll(
        '.lc-root input, .lc-root select, .lc-root button')].filter(el => el.tagName ===
        'BUTTON' ? !(el.getAttribute('aria-label') || el.innerText).trim()
        : ![...el.labels].some(l => l.offsetWidth > 0)).map(el => el.outerHTML)""")
    assert not unlabelled
    violations = [(v["id"], v["nodes"][0]["target"]) for v in Axe().run(page).response[
        "violations"] if v["impact"] in ("serious", "critical")]
    assert not violations, violations
    page.close()
