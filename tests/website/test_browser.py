"""The built website as a reader meets it, in headless Chromium (Playwright).

Every page of the table of contents is loaded from a server on 127.0.0.1 and
checked: no console error, no request to another host, every formula arriving
typeset (rendered at build time, no TeX parser in the browser), no error output,
alt text on every image, launch and download buttons on the chapters.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from chromium import ARGS, CHROMIUM, needs_chromium

from .conftest import toc_pages

pytestmark = needs_chromium

# The next frame drawn, then 20 ms (a page's observers run in between); at most a second,
# so that a page the browser does not draw cannot hold a test.
NEXT_FRAME = ("new Promise(r => { requestAnimationFrame(() => setTimeout(r, 20));"
              " setTimeout(r, 1000); })")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def base_url(html_root: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(html_root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def playwright():
    """One Playwright driver for the module (two at once cannot share a thread)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright, tmp_path_factory):
    profile = tmp_path_factory.mktemp("chromium-profile")
    context = playwright.chromium.launch_persistent_context(
        str(profile), executable_path=CHROMIUM, headless=True, args=ARGS)
    yield context
    context.close()


class PageVisit:
    """One page load with everything a reader's browser did on the way."""

    def __init__(self, context, url: str) -> None:
        self.page = context.new_page()
        self.requests: list[str] = []
        self.failed: list[str] = []
        self.console_errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("requestfailed", lambda r: self.failed.append(r.url))
        self.page.on("response",
                     lambda r: r.status >= 400 and self.failed.append(f"{r.status} {r.url}"))
        self.page.on("console", lambda m: m.type == "error" and self.console_errors.append(m.text))
        self.page.on("pageerror", lambda e: self.console_errors.append(str(e)))
        self.page.goto(url, wait_until="networkidle")


def _visits(context, base_url: str, name: str) -> Iterator[PageVisit]:
    """One page of the book, loaded in ``context`` and named for the messages."""
    v = PageVisit(context, f"{base_url}/{name}.html")
    v.name = name
    yield v
    v.page.close()


@pytest.fixture(scope="module", params=toc_pages())
def visit(request, browser, base_url) -> Iterator[PageVisit]:
    yield from _visits(browser, base_url, request.param)


def test_no_console_error_and_nothing_fails_to_load(visit):
    assert not visit.console_errors, f"{visit.name}: console errors {visit.console_errors}"
    assert not visit.failed, f"{visit.name}: failed requests {visit.failed}"


def test_no_request_leaves_localhost(visit):
    outside = [u for u in visit.requests
               if not re.match(r"(https?://127\.0\.0\.1[:/]|data:|blob:|about:)", u)]
    assert not outside, f"{visit.name}: requests to other hosts {outside}"


def test_every_equation_is_typeset(visit):
    text = visit.page.inner_text("article")
    for raw in (r"\(", r"\[", "$$", r"\frac", r"\begin{"):
        assert raw not in text, f"{visit.name}: raw TeX {raw!r} left in the page text"
    has_math = visit.page.locator("div.math, span.math").count()
    typeset = visit.page.locator("div.math mjx-container, span.math mjx-container").count()
    assert typeset >= has_math, f"{visit.name}: {has_math} formulas but {typeset} typeset"
    assert not visit.page.locator("mjx-merror").count(), f"{visit.name}: a TeX error"
    # Typeset when the book was built: the browser parses no TeX.
    assert visit.page.evaluate("() => typeof window.MathJax") == "undefined", (
        f"{visit.name}: a client-side MathJax is loaded")
    if has_math:
        # The glyphs are drawn with MathJax's fonts, served by the site itself.
        # Fonts load when a formula is drawn: bring the first one on screen.
        loaded = visit.page.evaluate(
            """async () => {
                 document.querySelector('span.math, div.math').scrollIntoView();
                 await new Promise(r => { requestAnimationFrame(() => setTimeout(r, 300));
                                          setTimeout(r, 2000); });
                 await Promise.race([document.fonts.ready,
                                     new Promise(r => setTimeout(r, 10000))]);
                 return [...document.fonts].filter(f => f.family.startsWith('MJXTEX')
                                                       && f.status === 'loaded').length; }""")
        assert loaded, f"{visit.name}: no MathJax font loaded"


def test_no_error_output(visit):
    # A docstring's example may show the exception it expects (a doctest block on the API
    # page): that is documentation, not an error of the page.
    text = visit.page.evaluate("""() => {
        const article = document.querySelector("article").cloneNode(true);
        article.querySelectorAll("div.doctest").forEach(el => el.remove());
        document.body.appendChild(article);
        const text = article.innerText;
        article.remove();
        return text;
    }""")
    for marker in ("Traceback (most recent call last)", "Error displaying widget"):
        assert marker not in text, f"{visit.name}: {marker!r} on the page"
    assert not visit.page.locator(".output.traceback, .output.error").count()


def _load_every_image(page) -> None:
    """Figures below the first load lazily, as the reader scrolls: load them all now."""
    page.evaluate(
        """() => Promise.race([
             Promise.all([...document.images].map(img => {
               img.loading = 'eager';
               return img.complete ? null : new Promise(done => {
                   img.addEventListener('load', done); img.addEventListener('error', done); });
             })),
             new Promise(r => setTimeout(r, 20000))])""")


def test_every_image_has_alt_text_and_loads(visit):
    _load_every_image(visit.page)
    images = visit.page.locator("article img")
    for i in range(images.count()):
        img = images.nth(i)
        alt = (img.get_attribute("alt") or "").strip()
        src = img.get_attribute("src")
        assert alt and not re.search(r"\.(png|svg|jpe?g)$", alt), \
            f"{visit.name}: image {src} has no alt text (alt={alt!r})"
        width = img.evaluate("el => el.complete ? el.naturalWidth : -1")
        assert width > 0, f"{visit.name}: image {src} did not load"


def test_chapters_have_launch_and_download_buttons(visit):
    if not visit.name.startswith("chapters/"):
        pytest.skip("only chapters are notebooks")
    links = visit.page.eval_on_selector_all("a", "els => els.map(e => e.href)")
    stem = visit.name.split("/")[-1]
    assert any("mybinder.org" in h and stem in h for h in links), "no Binder button"
    assert any("colab.research.google.com" in h and stem in h for h in links), "no Colab button"
    assert any(h.endswith(f"{stem}.ipynb") for h in links), "no notebook download"


LIVE_CONTROL = re.compile(r'class="lc-root\b')


def test_live_controls_work_without_a_kernel(browser, base_url, html_root):
    """Every browser-side control on the site runs its script and answers the keyboard.

    What each control computes is compared with attention_lib in
    tests/test_controls_browser.py; here the built pages are checked: at least
    four pages carry one, every control's script ran (its note for script-less viewers
    is gone), and a key press on its first control changes what it shows.
    """
    pages = [p for p in toc_pages() if LIVE_CONTROL.search((html_root / f"{p}.html").read_text())]
    assert len(pages) >= 4, f"pages with a kernel-free live control: {pages}"
    for name in pages:
        v = PageVisit(browser, f"{base_url}/{name}.html")
        roots = v.page.locator(".lc-root")
        assert roots.count(), f"{name}: no control found"
        for i in range(roots.count()):
            root = roots.nth(i)
            root.scroll_into_view_if_needed()
            assert root.locator(".lc-static-note").count() == 0, (
                f"{name}: control {i}'s script did not run")
            # the first control of the first kind present: a slider, a list, a text box
            kinds = (("input[type=range]", ["ArrowRight"] * 5), ("select", ["ArrowDown"]),
                     ("textarea", ["End", "x"]),
                     ("button:not([aria-disabled=true])", ["Enter"]))
            selector, keys = next(k for k in kinds if root.locator(k[0]).count())
            control = root.locator(selector).first
            before = root.inner_text()
            control.focus()
            for key in keys:
                v.page.keyboard.press(key)
            assert root.inner_text() != before, f"{name}: control {i} did not respond to {keys}"
        assert not v.console_errors, v.console_errors
        v.page.close()


BLOB_SRC = re.compile(r'<script type="application/octet-stream" class="lc-blob"[^>]*'
                      r'data-src="([^"]+)"></script>')


def test_the_generator_fetches_its_weights_only_when_started(browser, base_url, html_root):
    """The text generator's weights are a file of their own, not part of the page: the page
    loads without them, and pressing Generate fetches them and writes text."""
    pages = [p for p in toc_pages() if 'class="lc-root lc-generator"'
             in (html_root / f"{p}.html").read_text()]
    assert pages, "no page carries the text generator"
    for name in pages:
        text = (html_root / f"{name}.html").read_text()
        srcs = BLOB_SRC.findall(text)
        assert srcs and len(text) < 400_000, f"{name}: weights inline ({len(text)} bytes)"
        blob = (html_root / name).parent / srcs[0]
        assert blob.is_file() and blob.stat().st_size > 1_000_000
        v = PageVisit(browser, f"{base_url}/{name}.html")
        assert not [r for r in v.requests if r.endswith(".bin")], "weights fetched on load"
        root = v.page.locator(".lc-generator").first
        root.scroll_into_view_if_needed()
        root.locator(".lc-generate").focus()
        v.page.keyboard.press("Enter")
        v.page.wait_for_function("(r) => r.querySelector('.lc-status').textContent"
                                 ".startsWith('Generated')", arg=root.element_handle(),
                                 timeout=120_000)
        assert [r for r in v.requests if r.endswith(".bin")], "the weights were not fetched"
        assert root.locator(".lc-ch:not(.lc-prompt)").count() > 0
        assert not v.console_errors and not v.failed, (v.console_errors, v.failed)
        v.page.close()


# --- On a phone: a 390 px wide viewport on a 2x screen --------------------------------------

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def phone_browser(playwright, tmp_path_factory):
    profile = tmp_path_factory.mktemp("chromium-phone-profile")
    context = playwright.chromium.launch_persistent_context(
        str(profile), executable_path=CHROMIUM, headless=True, args=ARGS,
        viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
    yield context
    context.close()


@pytest.fixture(scope="module", params=toc_pages())
def phone_visit(request, phone_browser, base_url) -> Iterator[PageVisit]:
    yield from _visits(phone_browser, base_url, request.param)


def test_page_fits_a_phone(phone_visit):
    wide = phone_visit.page.evaluate(
        """() => [...document.querySelectorAll('article *')]
            .filter(e => { const r = e.getBoundingClientRect();
                           return r.width > 0 && r.right > window.innerWidth + 1
                                  && !e.closest('pre, .highlight, mjx-container, table')
                                  && getComputedStyle(e).position !== 'fixed'; })
            .slice(0, 5).map(e => e.tagName + '.' + e.className + ': '
                             + (e.textContent || '').trim().slice(0, 60))""")
    width = phone_visit.page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE["width"] + 1, (
        f"{phone_visit.name}: the page is {width} px wide at {PHONE['width']} px; "
        f"sticking out: {wide}")


# The boxes the theme gives a tab stop when their content scrolls (its selectors).
SCROLL_BOXES = ("pre, .nboutput > .output_area, .cell_output > .output, .jp-RenderedHTMLCommon, "
                ".pst-scrollable-table-container")


@pytest.mark.parametrize("name", [p for p in toc_pages() if p.startswith("chapters/")])
def test_code_boxes_are_measured_as_they_near_the_screen(phone_browser, base_url, name):
    """A box whose content scrolls keeps a tab stop (a keyboard can scroll it), one that does
    not loses it; each is measured when it nears the screen, not all at load (which laid
    out the whole chapter before the first paint). A box in a closed solution is measured
    when the solution opens."""
    v = PageVisit(phone_browser, f"{base_url}/{name}.html")
    page = v.page
    # Read before anything here lays the page out: which boxes the page measured at load.
    at_load = page.evaluate("(sel) => [...document.querySelectorAll(sel)].map(b => b.tabIndex)",
                            SCROLL_BOXES)
    assert at_load and all(t in (0, -1) for t in at_load), f"{name}: {at_load[:10]}"
    far = page.evaluate(
        """(sel) => [...document.querySelectorAll(sel)]
             .map((b, i) => [i, b.getBoundingClientRect().top > 4 * innerHeight])""", SCROLL_BOXES)
    far = [i for i, below in far if below]
    assert far, f"{name}: no box four screens down"
    assert all(at_load[i] == 0 for i in far), (
        f"{name}: boxes four screens down were measured at load: "
        f"{[i for i in far if at_load[i] != 0][:5]}")
    page.evaluate("""async () => {
        for (let y = 0; y < document.documentElement.scrollHeight; y += innerHeight / 2) {
          window.scrollTo(0, y);
          await """ + NEXT_FRAME + """;
        } }""")
    page.wait_for_timeout(200)
    wrong = page.evaluate(
        """(sel) => [...document.querySelectorAll(sel)]
             .filter(b => b.checkVisibility({visibilityProperty: true}))
             .filter(b => b.tabIndex !== (b.scrollWidth > b.clientWidth
                                          || b.scrollHeight > b.clientHeight ? 0 : -1))
             .map(b => `${b.tagName}.${b.className} tabIndex ${b.tabIndex}: `
                       + b.textContent.trim().slice(0, 40))""", SCROLL_BOXES)
    assert not wrong, f"{name}: boxes with the wrong tab stop after scrolling: {wrong[:5]}"
    measured = page.evaluate("(sel) => [...document.querySelectorAll(sel)].map(b => b.tabIndex)",
                             SCROLL_BOXES)
    assert any(measured[i] == -1 for i in far), f"{name}: no box below was measured on the way"
    assert not v.console_errors, v.console_errors
    page.close()


# Every fold opened, as _fitted() and a whole-page check open them (not by clicking).
OPEN_FOLDS = """() => {
    document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
    document.querySelectorAll('details').forEach(d => { d.open = true; }); }"""

# _static/fit_math.js has marked, from the widths the build wrote, every display equation
# it has not measured that may be wider than its column (the whole page, at its start).
ALL_FITTED = "() => document.documentElement.dataset.mathFitted"


def _checked_whole(context, base_url: str, name: str) -> PageVisit:
    """A fresh load of a page as an accessibility checker or a keyboard user meets it:
    every fold opened by a script, nothing scrolled, once the fit script has started
    (it measures only what comes near the screen; the rest it has marked)."""
    v = PageVisit(context, f"{base_url}/{name}.html")
    v.name = name
    v.page.evaluate(OPEN_FOLDS)
    v.page.wait_for_function(ALL_FITTED, timeout=20000)
    # An opened hidden cell fades in (sphinx-togglebutton's 300 ms "collapsed-fade-in"):
    # text measured while still translucent fails the contrast rule, which the reader, who
    # sees it after the fade, never meets.
    v.page.evaluate(SETTLED)
    return v


# Every finite animation and CSS transition of the page has ended.
# A wait in the page never outlasts a few seconds: an animation that cannot run (a page the
# browser does not draw) would otherwise hold the test, as a promise has no timeout of its own.
SETTLED = """() => Promise.race([
    Promise.all(document.getAnimations()
      .filter(a => a.effect && a.effect.getComputedTiming().endTime !== Infinity)
      .map(a => a.finished.catch(() => null))),
    new Promise(r => setTimeout(r, 5000))])"""


def _fitted(visit) -> None:
    """Open every dropdown and scroll through the page as a reader does, then wait until
    _static/fit_math.js has fitted every display equation that is shown (it fits each
    as it comes near the screen). Once per page load: the fitted page stays fitted."""
    if getattr(visit, "fitted", False):
        return
    visit.fitted = True
    if visit.page.locator('mjx-container[display="true"]').count():
        visit.page.evaluate(
            """async () => {
                 (""" + OPEN_FOLDS + """)();
                 for (let y = 0; y < document.documentElement.scrollHeight; y += innerHeight / 2) {
                   window.scrollTo(0, y);
                   await """ + NEXT_FRAME + """;
                 }
                 window.scrollTo(0, 0); }""")
        visit.page.wait_for_function(
            """() => [...document.querySelectorAll('mjx-container[display="true"]')]
                       .every(m => m.dataset.fitted
                                   || !m.checkVisibility({visibilityProperty: true}))""",
            timeout=20000)


# The display equations wider than their box that neither scroll with a cue nor stay
# on the screen. A cue: a box that scrolls sideways, with a tab stop, and either the fit
# script's hint (measured) or the shadow of an equation marked wide (not measured yet).
CUT_EQUATIONS = """() => [...document.querySelectorAll('mjx-container[display="true"]')]
    .filter(m => {
        const wide = m.scrollWidth > m.clientWidth + 1
                     || m.scrollWidth > m.parentElement.clientWidth + 1;
        const style = getComputedStyle(m);
        const box = style.overflowX === 'auto' && m.tabIndex === 0;
        const hinted = m.classList.contains('math-scroll')
                       && !!document.querySelector('.math-scroll-hint');
        const shadowed = m.classList.contains('math-wide')
                         && style.backgroundImage.includes('radial-gradient');
        return (wide && !(box && (hinted || shadowed)))
               || m.getBoundingClientRect().right > window.innerWidth + 1; })
    .map(m => (m.querySelector('mjx-assistive-mml') || m).textContent.slice(0, 50))"""


def test_no_display_equation_is_cut_on_a_phone(phone_visit):
    """Each display equation fits its column, or scrolls inside its box with a visible cue."""
    _fitted(phone_visit)
    cut = phone_visit.page.evaluate(CUT_EQUATIONS)
    assert not cut, f"{phone_visit.name}: display equations cut without a cue: {cut}"
    # Every shown equation has been measured: none is left marked wide, and only one that
    # scrolls keeps a tab stop.
    left = phone_visit.page.evaluate(
        """() => [...document.querySelectorAll('mjx-container[display="true"]')]
            .filter(m => m.checkVisibility({visibilityProperty: true})
                         && (m.classList.contains('math-wide')
                             || (m.tabIndex === 0) !== m.classList.contains('math-scroll')))
            .map(m => (m.querySelector('mjx-assistive-mml') || m).textContent.slice(0, 50))""")
    assert not left, f"{phone_visit.name}: equations still marked or with a stray tab stop: {left}"


def test_no_display_equation_is_cut_on_a_phone_checked_whole(phone_visit, phone_browser,
                                                             base_url):
    """The same on a fresh load with every fold open and nothing scrolled: an equation far
    below the screen, not measured yet, that is wider than its column scrolls with a cue."""
    v = _checked_whole(phone_browser, base_url, phone_visit.name)
    cut = v.page.evaluate(CUT_EQUATIONS)
    assert not v.console_errors, v.console_errors
    v.page.close()
    assert not cut, f"{phone_visit.name} (checked whole): equations cut without a cue: {cut}"


def test_display_equations_stay_legible_on_a_phone(phone_visit):
    """Shrinking to fit stops at a legible size (the fit script's floor)."""
    _fitted(phone_visit)
    small = phone_visit.page.evaluate(
        """() => [...document.querySelectorAll('mjx-container[display="true"]')]
            .filter(m => parseFloat(getComputedStyle(m).fontSize) < 11.5)
            .map(m => getComputedStyle(m).fontSize + ': '
                      + (m.querySelector('mjx-assistive-mml') || m).textContent.slice(0, 40))""")
    assert not small, f"{phone_visit.name}: display equations below 11.5 px: {small}"


def test_no_equation_needs_to_scroll(phone_visit):
    """The book's own equations are broken over lines where they are long, so none scrolls
    on a phone (the API page's docstring formulas may, with the cue)."""
    if phone_visit.name in ("api", "api_models"):
        pytest.skip("docstring formulas")
    _fitted(phone_visit)
    scrolling = phone_visit.page.evaluate(
        """() => [...document.querySelectorAll('mjx-container.math-scroll')]
            .map(m => (m.querySelector('mjx-assistive-mml') || m).textContent.slice(0, 50))""")
    assert not scrolling, f"{phone_visit.name}: equations that scroll on a phone: {scrolling}"


def test_figures_are_sharp_on_a_2x_screen(phone_visit):
    _load_every_image(phone_visit.page)
    blurry = phone_visit.page.evaluate(
        """() => [...document.querySelectorAll('article img')]
            .filter(i => !/\\.svg($|\\?)/.test(i.currentSrc || i.src) && i.clientWidth > 0
                         && i.naturalWidth < 1.5 * i.clientWidth)
            .map(i => `${i.src.split('/').pop()}: ${i.naturalWidth} px for ${i.clientWidth}`)""")
    assert not blurry, f"{phone_visit.name}: images below 1.5x their displayed width: {blurry}"


# --- Accessibility: axe-core (bundled with axe-playwright-python, nothing from a CDN) --------

# A theme changes colours and nothing else: the light page gets every rule, the dark page
# the rules that read colours.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]

# A code block's colours (code cells, their outputs, the API page's examples) come from its
# kind (the classes of its box) and the class of each token the highlighter marked, and
# from nothing else on the page: the same kind of token in the same kind of box has the
# same colours on every page. Checking the contrast of every token of every code block of
# every page, twice, was most of the website tests' time; the colour rules check instead,
# besides everything else, a set of code blocks that holds every (box, token class) pair
# the site has, each on its own page.
CODE_BLOCK = re.compile(r'<div class="([^"]*)"><div class="highlight"><pre>(.*?)</pre>', re.S)
TOKEN_CLASS = re.compile(r'<span class="([^"]+)"')


def _code_kinds(text: str) -> list[set[tuple[str, str]]]:
    """Each code block of a built page, in document order: its (box, token class) pairs
    (the empty class for text outside any token)."""
    blocks = [{(" ".join(sorted(m.group(1).split())), c)
               for c in set(TOKEN_CLASS.findall(m.group(2))) | {""}}
              for m in CODE_BLOCK.finditer(text)]
    every = text.count('<div class="highlight">')
    assert len(blocks) == every, (f"{len(blocks)} of {every} code blocks read: the builder's "
                                  "markup changed, update CODE_BLOCK")
    return blocks


@functools.cache
def _code_blocks_to_check(html_root: Path) -> dict[str, tuple[int, ...]]:
    """Per page, the indices (document order) of the code blocks whose colours are checked:
    chosen greedily until every (box, token class) pair of the site is in one of them."""
    blocks = {name: _code_kinds((html_root / f"{name}.html").read_text())
              for name in toc_pages()}
    left = set().union(*(kinds for page in blocks.values() for kinds in page))
    chosen: dict[str, list[int]] = {}
    while left:
        name, i = max(((n, i) for n, page in blocks.items() for i in range(len(page))),
                      key=lambda ni: len(blocks[ni[0]][ni[1]] & left))
        chosen.setdefault(name, []).append(i)
        left -= blocks[name][i]
    return {name: tuple(sorted(ii)) for name, ii in chosen.items()}


def test_the_code_blocks_checked_for_contrast_hold_every_kind_of_token(html_root):
    """The blocks the colour rules read hold every (box, token class) pair of the site."""
    chosen = _code_blocks_to_check(html_root)
    seen, every = set(), set()
    for name in toc_pages():
        kinds = _code_kinds((html_root / f"{name}.html").read_text())
        every |= set().union(*kinds) if kinds else set()
        for i in chosen.get(name, ()):
            seen |= kinds[i]
    assert every and seen == every
    assert {"highlight-ipython3 notranslate", "doctest highlight-default notranslate"} <= {
        box for box, _ in every}  # code cells and the API page's examples were read


# Marks the code blocks whose colours the checks below leave out (all but the page's chosen
# ones); the colour rules' context excludes them.
MARK_CODE = """keep => document.querySelectorAll('div.highlight').forEach((d, i) => {
    if (!keep.includes(i)) d.dataset.colourSeen = 'elsewhere'; })"""
EXCEPT_MARKED_CODE = {"exclude": [['div.highlight[data-colour-seen="elsewhere"]']]}


def _serious_violations(page, options: dict, context: dict | None = None) -> list:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, context=context,
                        options={"resultTypes": ["violations"], **options})
    return [(v["id"], v["impact"], len(v["nodes"]), v["nodes"][0]["target"])
            for v in results.response["violations"] if v["impact"] in ("serious", "critical")]


def test_no_serious_accessibility_violation(visit, browser, base_url, html_root):
    """Every rule, on the light page checked whole as an accessibility checker or a keyboard
    user meets it: a fresh load, every fold open, nothing scrolled (an equation far below,
    not measured yet, that may be wider than its column has a tab stop); the colour rules
    leave out the code blocks but the page's share of a set that holds every kind of
    token of the site (see above). Then the same page, every fold still open, scrolled
    through, in the dark theme, with the rules that read colours (a theme changes nothing
    else), code blocks as in the light theme."""
    v = _checked_whole(browser, base_url, visit.name)
    colour_off = {rule: {"enabled": False} for rule in COLOUR_RULES}
    serious = _serious_violations(v.page, {"rules": colour_off})
    v.page.evaluate(MARK_CODE, list(_code_blocks_to_check(html_root).get(visit.name, ())))
    only_colour = {"runOnly": {"type": "rule", "values": COLOUR_RULES}}
    serious += _serious_violations(v.page, only_colour, EXCEPT_MARKED_CODE)
    # Laid out as a reader who has scrolled through sees it: fitting an equation as it comes
    # near the screen moves what is below it, which would move text under axe's feet.
    _fitted(v)
    v.page.evaluate(
        "() => { document.documentElement.dataset.theme = 'dark';"
        " document.documentElement.dataset.mode = 'dark'; }")
    v.page.evaluate(SETTLED)  # the theme's colour transitions end
    dark = _serious_violations(v.page, only_colour, EXCEPT_MARKED_CODE)
    v.page.close()
    assert not serious, f"{visit.name} (light, checked whole): {serious}"
    assert not dark, f"{visit.name} (dark, checked whole): {dark}"


def test_the_cheat_sheet_prints_on_two_pages(browser, base_url):
    """Printed from the browser, on A4 and on Letter: two pages, the site's navigation left
    out, every formula typeset."""
    v = PageVisit(browser, f"{base_url}/cheatsheet.html")
    for paper in ("A4", "Letter"):
        pdf = v.page.pdf(format=paper)
        pages = len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf))
        assert 1 <= pages <= 2, f"the cheat sheet prints on {pages} {paper} pages"
    v.page.emulate_media(media="print")
    hidden = v.page.evaluate("""() => ['.bd-sidebar-primary', '.bd-header', '#jb-print-docs-body']
        .filter(s => document.querySelector(s)
                     && document.querySelector(s).checkVisibility())""")
    assert not hidden, f"printed with the page: {hidden}"
    assert v.page.locator("#cheat-sheet > h1").is_visible()
    v.page.close()
