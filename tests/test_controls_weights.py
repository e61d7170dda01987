"""What a control that runs a model does when its weights cannot be used, in Chromium.

On the website the build moves a control's weights into a file of their own
(``_ext/fast_pages.py``, ``_static/blobs/<hash>.bin``), which the page fetches when the reader
first starts the control. Here each such control is published as the build publishes it and
served from 127.0.0.1, and its file is taken away (404), made unreachable, cut short, or
replaced by other bytes of the same length: the control must say so in its message area, in
the words of ``WEIGHT_MESSAGES``, compute nothing, and try again when moved again. The
induction playground carries its weights in the element; bytes cut short or altered there
are refused the same way.
"""

from __future__ import annotations

import base64
import functools
import http.server
import importlib.util
import json
import re
import sys
import threading
import zlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from chromium import ARGS, CHROMIUM, needs_chromium
from controls_helpers import data_json, induction_model, trained_models

import attention_lib as al
from attention_lib import controls as lc
from attention_lib.controls.element import WEIGHT_MESSAGES, fill

pytestmark = needs_chromium

ROOT = Path(__file__).resolve().parents[1]


def _fast_pages():
    """The build's page rewriter, ``_ext/fast_pages.py`` (it imports its neighbours)."""
    sys.path.insert(0, str(ROOT / "_ext"))
    try:
        spec = importlib.util.spec_from_file_location("fast_pages", ROOT / "_ext" / "fast_pages.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "_ext"))
    return module


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def end_headers(self) -> None:  # every request reaches the files as they are now
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A folder served on 127.0.0.1, and a Chromium."""
    from playwright.sync_api import sync_playwright

    folder = tmp_path_factory.mktemp("site")
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield SimpleNamespace(folder=folder, url=f"http://127.0.0.1:{server.server_address[1]}",
                              browser=browser, move_blobs=_fast_pages()._move_blobs)
        browser.close()
    server.shutdown()
    server.server_close()


@functools.cache
def markups() -> dict[str, str]:
    coref, translator = trained_models()
    return {"generator": lc.text_generator(n_new=12)._repr_html_(),
            "coreference": lc.coreference_explorer(coref)._repr_html_(),
            "translation": lc.translation_explorer(translator)._repr_html_()}


def page_html(markup: str) -> str:
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>control</title>'
            f"</head><body><main>{markup}</main></body></html>")


class Visit:
    """A control published as the website publishes it, in a folder of its own, and open."""

    def __init__(self, served, kind: str, case: str) -> None:
        folder = served.folder / f"{kind}-{case}"
        folder.mkdir()
        page = folder / "index.html"
        text = served.move_blobs(page_html(markups()[kind]), page, folder)
        page.write_text(text, encoding="utf-8")
        # the build keeps what identifies the weights beside their address
        tag = re.search(r'<script type="application/octet-stream" class="lc-blob"[^>]*>', text)
        self.src = re.search(r'data-src="([^"]+)"', tag.group(0)).group(1)
        self.blob = folder / self.src
        self.good = self.blob.read_bytes()
        assert (f'data-bytes="{len(self.good)}" data-crc32="{zlib.crc32(self.good):08x}"'
                in tag.group(0))
        self.page_file, self.text = page, text
        self.served, self.url = served, f"{served.url}/{kind}-{case}/index.html"

    def open(self):
        self.page = self.served.browser.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: m.type == "error"
                     and not m.text.startswith("Failed to load resource")
                     and self.errors.append(m.text))
        self.page.goto(self.url)
        self.root = self.page.locator(".lc-root")
        assert self.root.count() == 1
        assert self.root.locator(".lc-static-note").count() == 0, "the script did not run"
        return self

    def wait_for_message(self) -> str:
        self.page.wait_for_function(
            "(r) => r.querySelector('.lc-error').textContent !== ''",
            arg=self.root.element_handle(), timeout=60_000)
        return self.root.locator(".lc-error").inner_text()

    def close(self) -> None:
        assert not self.errors, self.errors
        self.page.close()


def spoil(visit: Visit, case: str) -> str:
    """Do ``case`` to the weights file; the message the page must show."""
    good, want = visit.good, len(visit.good)
    if case == "missing":
        visit.blob.unlink()
        return fill(WEIGHT_MESSAGES["weights_status"], status=404, src=visit.src)
    if case == "unreachable":  # a port nothing listens on
        with http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler) as s:
            port = s.server_address[1]
        src = f"http://127.0.0.1:{port}/weights.bin"
        visit.page_file.write_text(visit.text.replace(f'data-src="{visit.src}"',
                                                      f'data-src="{src}"'))
        return fill(WEIGHT_MESSAGES["weights_unreachable"], src=src)
    if case == "cut short":
        visit.blob.write_bytes(good[: want // 2])
        return fill(WEIGHT_MESSAGES["weights_size"], got=want // 2, want=want)
    if case == "another file":  # the right length, one byte different
        other = bytearray(good)
        other[want // 3] ^= 0x40
        visit.blob.write_bytes(bytes(other))
        return fill(WEIGHT_MESSAGES["weights_checksum"], want=want,
                    got=f"{zlib.crc32(bytes(other)):08x}", crc32=f"{zlib.crc32(good):08x}")
    raise AssertionError(case)


CASES = ["missing", "unreachable", "cut short", "another file"]


@pytest.mark.parametrize("case", CASES)
def test_the_generator_says_why_when_generate_finds_no_weights(served, case):
    visit = Visit(served, "generator", "button-" + case)
    message = spoil(visit, case)
    v = visit.open()
    before = v.root.locator(".lc-gen-text").inner_text()
    v.root.locator(".lc-generate").focus()
    v.page.keyboard.press("Enter")
    assert v.wait_for_message() == message
    assert v.root.locator(".lc-status").inner_text() == ""  # not "Loading..." for ever
    assert v.root.locator(".lc-generate").is_enabled()
    assert v.root.locator(".lc-gen-text").inner_text() == before
    v.close()


@pytest.mark.parametrize("case", CASES)
def test_the_generators_position_slider_says_why_too(served, case):
    visit = Visit(served, "generator", "slider-" + case)
    message = spoil(visit, case)
    v = visit.open()
    slider = v.root.locator(".lc-pos")
    last = slider.input_value()
    heads = v.root.locator(".lc-heads tbody").inner_html()
    slider.focus()
    v.page.keyboard.press("Home")
    assert v.wait_for_message() == message
    assert v.root.locator(".lc-status").inner_text() == ""  # it used to wait for ever here
    assert slider.input_value() == last  # back where the heads shown are
    assert v.root.locator(".lc-heads tbody").inner_html() == heads
    v.close()


def test_after_a_failed_load_the_generator_tries_again(served):
    visit = Visit(served, "generator", "retry")
    message = spoil(visit, "missing")
    v = visit.open()
    slider = v.root.locator(".lc-pos")
    slider.focus()
    v.page.keyboard.press("Home")
    assert v.wait_for_message() == message
    visit.blob.write_bytes(visit.good)  # the file is back
    v.page.keyboard.press("Home")
    v.page.keyboard.press("ArrowRight")
    v.page.wait_for_function("(r) => r.querySelector('.lc-ch.lc-sel').dataset.pos === '1'",
                             arg=v.root.element_handle(), timeout=60_000)
    book = al.book_language_model()
    text = v.page.evaluate("(r) => JSON.parse(r.dataset.generated)", v.root.element_handle())
    w = al.gpt_attention_weights(book.params, book.config, book.encode(text)[None])[:, 0]
    rows = v.root.locator(".lc-heads tbody tr")
    assert rows.count() == book.config.n_layers * book.config.n_heads
    for r in range(rows.count()):
        cells = rows.nth(r).locator(".lc-hw")
        exact = [float(cells.nth(i).get_attribute("data-exact")) for i in range(cells.count())]
        layer, head = divmod(r, book.config.n_heads)
        np.testing.assert_allclose(exact, w[layer, head, 1, :2], rtol=0, atol=1e-5)
    assert v.root.locator(".lc-error").inner_text() == ""
    v.root.locator(".lc-generate").focus()
    v.page.keyboard.press("Enter")
    v.page.wait_for_function("(r) => r.querySelector('.lc-status').textContent"
                             ".startsWith('Generated')", arg=v.root.element_handle(),
                             timeout=60_000)
    assert v.root.locator(".lc-error").inner_text() == ""
    v.close()


def pick(v: Visit, selector: str) -> None:
    """Move a list by keyboard: its next entry."""
    v.root.locator(selector).focus()
    v.page.keyboard.press("ArrowDown")


@pytest.mark.parametrize("kind, selector", [("coreference", ".lc-adjective"),
                                            ("translation", ".lc-verb")])
@pytest.mark.parametrize("case", CASES)
def test_the_explorers_say_why_and_show_nothing_they_did_not_compute(served, kind, selector,
                                                                      case):
    visit = Visit(served, kind, case)
    message = spoil(visit, case)
    v = visit.open()
    assert v.root.locator(".lc-result").is_visible()  # the library's numbers, first
    pick(v, selector)
    assert v.wait_for_message() == message
    assert v.root.locator(".lc-status").inner_text() == ""
    assert not v.root.locator(".lc-result").is_visible()
    if case == "missing":  # the file comes back: the next pick loads it
        visit.blob.write_bytes(visit.good)
        pick(v, selector)
        v.page.wait_for_function("(r) => !r.querySelector('.lc-result').hidden && "
                                 "r.querySelector('.lc-error').textContent === ''",
                                 arg=v.root.element_handle(), timeout=60_000)
    v.close()


def test_with_the_right_file_each_explorer_computes(served):
    coref, translator = trained_models()
    v = Visit(served, "coreference", "good").open()
    pick(v, ".lc-adjective")  # tired -> scared
    v.page.wait_for_function("(r) => r.dataset.shown !== undefined", arg=v.root.element_handle(),
                             timeout=60_000)
    sentence = v.root.locator(".lc-sentence").inner_text()
    assert sentence.endswith("scared")
    shown = json.loads(v.root.locator(".lc-result").get_attribute("data-probabilities"))
    np.testing.assert_allclose(shown, coref.probabilities([sentence])[0], rtol=0, atol=1e-10)
    assert v.root.locator(".lc-error").inner_text() == ""
    v.close()
    v = Visit(served, "translation", "good").open()
    pick(v, ".lc-verb")
    v.page.wait_for_function("(r) => r.dataset.translation !== undefined",
                             arg=v.root.element_handle(), timeout=60_000)
    source = v.root.locator(".lc-source").inner_text()
    assert v.root.get_attribute("data-translation") == translator.translate(source)
    v.close()


# --- the induction playground: weights in the element ------------------------------------------

def test_the_induction_playground_refuses_weights_cut_short_or_altered(served):
    params, config = induction_model()
    markup = lc.induction_playground(params, config)._repr_html_()
    text = data_json(markup, "weights")  # base64 in a JSON string in the attribute
    raw = base64.b64decode(text)
    other = bytearray(raw)
    other[len(raw) // 2] ^= 1
    for bad, message in (
            (raw[:-8], fill(WEIGHT_MESSAGES["weights_size"], got=len(raw) - 8, want=len(raw))),
            (bytes(other), fill(WEIGHT_MESSAGES["weights_checksum"], want=len(raw),
                                got=f"{zlib.crc32(bytes(other)):08x}",
                                crc32=f"{zlib.crc32(raw):08x}"))):
        page = served.browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        spoilt = markup.replace(text, base64.b64encode(bad).decode())
        page.set_content(page_html(spoilt))
        root = page.locator(".lc-root")
        assert root.locator(".lc-error").inner_text() == message
        assert not root.locator(".lc-result").is_visible()
        root.locator(".lc-seq").fill("ABAB")  # typing does not compute either
        assert root.locator(".lc-error").inner_text() == message
        assert root.locator(".lc-seq").get_attribute("aria-invalid") is None
        root.locator(".lc-seq").fill("A-B")  # a sequence it could not read anyway
        assert root.locator(".lc-error").inner_text().startswith("Not a sequence")
        assert not errors, errors
        page.close()
