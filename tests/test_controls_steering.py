"""Feature steering (``controls.feature_steering``): the book's GPT in the page with one
feature of a sparse autoencoder clamped, beside the text it writes unchanged.

In headless Chromium, one page, moved by keyboard: for several features, clamp values (0,
a value typed, the slider's top), seeds and temperatures, the page's two texts are
``generate`` with :func:`feature_clamp_hooks` and ``generate`` without, the first difference
is marked where it is, bad values and prompts are refused in the library's words, and the
control fits a phone and passes axe-core in both themes. In Python: the texts shown before
the script runs, what the page carries, and the arguments it refuses. The autoencoder is
made of random numbers here; the page's numbers are compared, not the features' meaning.
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
from attention_lib.controls import steering

FEATURES, LABELS, PEAKS = [2, 5, 9], ["sharp <b>", "soft & round", "third"], [1.7, 2.5, 0.9]
THEMES = {"light": ("#ffffff", "#222832"), "dark": ("#121212", "#ced6dd")}


@pytest.fixture(scope="module")
def book():
    return al.book_language_model()


@pytest.fixture(scope="module")
def sae():
    """A random autoencoder of the stream leaving block 1: 12 features, unit decoder rows."""
    rng = np.random.default_rng(7)
    d, m = 128, 12
    w_dec = rng.normal(size=(m, d))
    w_dec /= np.linalg.norm(w_dec, axis=1, keepdims=True)
    return al.SparseAutoencoder(rng.normal(0, 0.15, (d, m)), rng.normal(-0.5, 0.2, m), w_dec,
                             rng.normal(0, 0.1, d), site="blocks.1.resid_post")


def clamp_reference(sae, j, value):
    """feature_clamp_hooks written out, one row at a time."""
    def hook(x):
        out = np.array(x, dtype=np.float64)
        for row in out.reshape(-1, out.shape[-1]):
            f = max(float((row - sae.b_dec) @ sae.w_enc[:, j] + sae.b_enc[j]), 0.0)
            row += (value - f) * sae.w_dec[j]
        return out.astype(np.asarray(x).dtype)
    return {sae.site: hook}


def texts(book, prompt, n, temperature, seed, hooks=None):
    return book.decode(al.generate(book.params, book.config, book.encode(prompt), n,
                                   temperature=temperature, uniform=lc.mulberry32(seed),
                                   hooks=hooks))


def first_difference(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), None)


# --- in Python ---------------------------------------------------------------------------------

def test_the_clamp_hook_is_the_formula_row_by_row(sae):
    x = np.random.default_rng(1).normal(0, 3, (2, 5, 128)).astype(np.float32)
    got = al.feature_clamp_hooks(sae, 5, 2.25)[sae.site](x)
    np.testing.assert_allclose(got, clamp_reference(sae, 5, 2.25)[sae.site](x), atol=1e-5)


def test_the_texts_shown_first_are_the_librarys_with_the_first_difference_marked(book, sae):
    markup = lc.feature_steering(book, sae, features=FEATURES, labels=LABELS, peaks=PEAKS,
                                 value=4.0, prompt="ROMEO:\n", seed=4, n_new=50)._repr_html_()
    static = markup.split('<script type="application/octet-stream"')[0]
    clamped = texts(book, "ROMEO:\n", 50, 0.8, 4, al.feature_clamp_hooks(sae, 2, 4.0))
    plain = texts(book, "ROMEO:\n", 50, 0.8, 4)
    shown = []
    for cls in ("lc-clamped", "lc-plain"):
        pane = re.search(rf'class="lc-gen-text {cls}"[^>]*>(.*?)</div>', static, re.S).group(1)
        chars = re.findall(r'<span class="lc-ch[^"]*" data-pos="\d+">([^<]*(?:<br>)?)</span>',
                           pane)
        shown.append("".join(html.unescape(c).replace("↵<br>", "\n") for c in chars))
    assert shown == [clamped, plain]
    diff = first_difference(clamped, plain)
    assert diff is not None
    assert re.findall(r'class="lc-ch[^"]*lc-diff" data-pos="(\d+)"', static) == [str(diff)] * 2
    assert f"first differ at character {diff + 1} of {len(plain)}" in static
    assert "sharp &lt;b&gt; clamped to 4</p>" in static


def test_before_its_script_runs_every_control_is_labelled_and_disabled(book, sae):
    markup = lc.feature_steering(book, sae, features=FEATURES, peaks=PEAKS, n_new=5)._repr_html_()
    tags = elements(markup.split("<script>")[0])
    ids = [a["id"] for _, a in tags if "id" in a]
    assert len(ids) == len(set(ids))
    fields = [(t, a) for t, a in tags if t in ("input", "select", "textarea", "button")]
    assert len(fields) == 7 and all("disabled" in a for _, a in fields)
    labelled = {a["for"] for t, a in tags if t == "label"}
    assert all(a["id"] in labelled for t, a in fields if t != "button")
    assert "Trust Notebook" in markup


def test_the_page_carries_the_model_and_only_the_chosen_features(book, sae):
    markup = lc.feature_steering(book, sae, features=FEATURES, peaks=PEAKS, n_new=5,
                                 reach=3.0)._repr_html_()
    carried_weights(markup, book.params, "<f2")
    assert data_json(markup, "site") == "blocks.1.resid_post"
    assert data_json(markup, "b-dec") == sae.b_dec.tolist()
    carried = data_json(markup, "features")
    assert [f["index"] for f in carried] == FEATURES
    assert [f["label"] for f in carried] == ["feature 2", "feature 5", "feature 9"]
    for f, j, peak in zip(carried, FEATURES, PEAKS, strict=True):
        assert f["w_enc"] == sae.w_enc[:, j].tolist() and f["w_dec"] == sae.w_dec[j].tolist()
        assert f["b_enc"] == sae.b_enc[j]
        # the slider: 0 to 3 x peak rounded up to a power-of-ten step, 100 to 1000 steps
        assert 3 * peak <= f["max"] < 3 * peak + f["step"]
        assert 100 <= f["max"] / f["step"] <= 1001
        assert np.log10(f["step"]) == pytest.approx(round(np.log10(f["step"])))


def test_default_features_are_the_most_active_on_the_sample(book, sae, monkeypatch):
    monkeypatch.setattr(steering, "PEAK_SAMPLE", 384)  # three windows, not sixteen
    markup = lc.feature_steering(book, sae, n_new=2)._repr_html_()
    ids = book.encode(al.shakespeare_split()[1][:384])
    seen = {}
    windows = ids.reshape(-1, book.config.context)  # (3, 128): the windows the loss reads
    al.gpt_logits(book.params, book.config, windows, hooks=al.capture_hooks(seen, [sae.site]))
    x = seen[sae.site].reshape(-1, book.config.d_model).astype(np.float64)  # (384, d)
    peaks = np.maximum((x - sae.b_dec) @ sae.w_enc + sae.b_enc, 0).max(axis=0)
    carried = data_json(markup, "features")
    assert [f["index"] for f in carried] == list(np.argsort(-peaks)[:4])
    np.testing.assert_allclose([f["peak"] for f in carried], np.sort(peaks)[::-1][:4],
                               rtol=1e-5)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(features=[2, 12]), ValueError, r"features\[1\]=12 is not a feature .* m = 12"),
    (dict(features=[-1]), ValueError, r"features\[0\]=-1 is not a feature"),
    (dict(features=[2, 2]), ValueError, "names a feature twice"),
    (dict(features=[]), ValueError, "features is empty"),
    (dict(features=[1.0]), TypeError, r"features\[0\]=1.0; expected a feature index"),
    (dict(features=3), TypeError, "features=3; expected a sequence"),
    (dict(features=[2], peaks=[0.0]), ValueError, r"peaks\[0\]=0.0; expected .* > 0"),
    (dict(features=[2], peaks=[1.0, 2.0]), ValueError, r"peaks has shape \(2,\)"),
    (dict(features=[2], peaks=[np.nan]), ValueError, "NaN"),
    (dict(features=[2], peaks=[1.0], value=4.5), ValueError,
     r"value=4.5 is outside the slider of 'feature 2': expected a number from 0 to 4.0"),
    (dict(features=[2], peaks=[1.0], value=-0.5), ValueError, r"value=-0.5; expected .* >= 0"),
    (dict(features=[2], peaks=[1.0], reach=0.5), ValueError, r"reach=0.5; expected .* >= 1"),
    (dict(features=[2], labels=["a", "b"]), ValueError, "labels has 2 labels; expected 1"),
    (dict(features=[2, 5], labels=["a", "a"]), ValueError, "has a label twice"),
    (dict(peaks=[1.0]), ValueError, "peaks is given without features"),
    (dict(features=[2], peaks=[1.0], prompt="caf\u00e9"), ValueError, 'not "\u00e9"'),
    (dict(features=[2], peaks=[1.0], temperature=3), ValueError, "^temperature=3"),
])
def test_bad_arguments_are_refused_with_what_was_expected(book, sae, kwargs, error, message):
    with pytest.raises(error, match=message):
        lc.feature_steering(book, sae, **kwargs)


def test_autoencoders_the_page_cannot_use_are_refused(book, sae):
    d, m = 128, 12
    wrong = {
        "w_enc": (sae.w_enc[:64], r"sae.w_enc has shape \(64, 12\).*d = 128"),
        "b_enc": (np.zeros(m + 1), r"sae.b_enc has shape \(13,\).*expected \(12,\)"),
        "w_dec": (sae.w_dec.T, r"sae.w_dec has shape \(128, 12\).*expected \(12, 128\)"),
        "b_dec": (np.zeros(d - 1), r"sae.b_dec has shape \(127,\).*expected \(128,\)"),
    }
    parts = dict(w_enc=sae.w_enc, b_enc=sae.b_enc, w_dec=sae.w_dec, b_dec=sae.b_dec,
                 site=sae.site)
    for name, (array, message) in wrong.items():
        fake = type("Fake", (), {**parts, name: array})()
        with pytest.raises(ValueError, match=message):
            lc.feature_steering(book, fake, features=[1], peaks=[1.0])
    for site in ("blocks.1.attn.out", "blocks.4.resid_post", "embed", 3):
        fake = type("Fake", (), {**parts, "site": site})()
        with pytest.raises(ValueError, match=r"sae.site=.*'blocks.l.resid_post'"):
            lc.feature_steering(book, fake, features=[1], peaks=[1.0])
    with pytest.raises(TypeError, match="sae is dict, without w_enc"):
        lc.feature_steering(book, parts, features=[1], peaks=[1.0])
    with pytest.raises(TypeError, match="model is dict"):
        lc.feature_steering(book.params, sae)


# --- in Chromium -------------------------------------------------------------------------------

@needs_chromium
def test_the_page_writes_what_the_library_writes_clamped_and_unchanged(book, sae):
    from axe_playwright_python.sync_playwright import Axe
    from playwright.sync_api import sync_playwright

    prompt = "ROMEO:\n"
    markup = lc.feature_steering(book, sae, features=FEATURES, labels=LABELS, peaks=PEAKS,
                                 prompt=prompt, n_new=60)._repr_html_()
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

        def key(selector, name, times=1):
            root.locator(selector).focus()
            for _ in range(times):
                page.keyboard.press(name)

        def generate_and_check(j, value, seed, temperature):
            page.evaluate("() => { document.querySelector('.lc-status').textContent = ''; }")
            key(".lc-generate", "Enter")
            page.wait_for_function(
                "() => document.querySelector('.lc-status').textContent.startsWith('Generated')",
                timeout=60_000)
            shown = [page.evaluate(f"""() => [...document.querySelectorAll('.{cls} .lc-ch')]
                .map(e => e.textContent).join('')""").replace("↵", "\n")
                for cls in ("lc-clamped", "lc-plain")]
            clamped = texts(book, prompt, 60, temperature, seed,
                            al.feature_clamp_hooks(sae, j, value))
            plain = texts(book, prompt, 60, temperature, seed)
            what = f"feature {j}, value {value}, seed {seed}, temperature {temperature}"
            assert shown == [clamped, plain], what
            diff = first_difference(clamped, plain)
            marked = [int(e) for e in root.locator(".lc-diff").evaluate_all(
                "els => els.map(e => e.dataset.pos)")]
            note = root.locator(".lc-diff-note").inner_text()
            if diff is None:
                assert marked == [] and note.startswith("The two texts are the same"), what
            else:
                assert marked == [diff, diff], what
                assert f"first differ at character {diff + 1} of {len(plain)}" in note, what
            label = LABELS[FEATURES.index(j)]
            assert root.locator(".lc-clamped-title").inner_text() == \
                f"{label} clamped to {steering._value_text(value)}"
            return diff

        # 1. the first feature clamped to 0 (Home on the slider), seed 3, temperature 0.8
        key(".lc-value", "Home")
        root.locator(".lc-seed").fill("3")
        assert generate_and_check(2, 0.0, 3, 0.8) is not None

        # 2. the second feature at the top of its slider, greedy, seed 7
        key(".lc-feature", "ArrowDown")
        assert root.locator(".lc-range").inner_text().startswith("From 0 to 10, 4 times")
        key(".lc-value", "End")
        top = float(root.locator(".lc-value").input_value())
        assert top == data_json(markup, "features")[1]["max"] == 10.0
        assert root.locator(".lc-value-number").input_value() == "10"
        key(".lc-temp", "Home")
        root.locator(".lc-seed").fill("7")
        assert generate_and_check(5, top, 7, 0.0) is not None

        # 3. the third feature, a value typed (Enter generates), temperature 1.2, seed 11
        key(".lc-feature", "ArrowDown")
        key(".lc-temp", "ArrowRight", 24)
        root.locator(".lc-seed").fill("11")
        root.locator(".lc-value-number").fill("1.35")
        generate_and_check(9, 1.35, 11, 1.2)
        assert root.locator(".lc-value").input_value() == "1.35"

        # values and prompts it cannot use: a message, nothing recomputed
        before = root.locator(".lc-gen-text").all_inner_texts()
        root.locator(".lc-value-number").fill("3.7")  # the third slider ends at 3.6
        key(".lc-generate", "Enter")
        assert root.locator(".lc-error").inner_text() == "the clamp value is a number from 0 to 3.6"
        assert root.locator(".lc-value-number").get_attribute("aria-invalid") == "true"
        root.locator(".lc-value-number").fill("1")
        for text in ("", "caf\u00e9 1", "a" * 128):
            root.locator(".lc-prompt-box").fill(text)
            key(".lc-generate", "Enter")
            with pytest.raises(ValueError) as err:
                lc.feature_steering(book, sae, features=[2], peaks=[1.0], prompt=text)
            assert root.locator(".lc-error").inner_text() == \
                f"Not a prompt the model reads: {str(err.value).split(': ', 1)[1]}."
        assert root.locator(".lc-gen-text").all_inner_texts() == before

        # readable on a phone, and contrast enough in both themes
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
            .filter(e => e.getBoundingClientRect().right > 391)
            .map(e => e.tagName + '.' + e.className)""")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 and not wide
        assert not errors, errors
        browser.close()


def _page(markup: str, theme: str) -> str:
    bg, fg = THEMES[theme]
    return (f'<!doctype html><html lang="en" data-theme="{theme}"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1"><title>'
            f'steering</title><style>body {{ background: {bg}; color: {fg}; margin: 8px; }}'
            f"</style></head><body><main>{markup}</main></body></html>")
