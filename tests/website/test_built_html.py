"""Checks of the built website (run after `jupyter-book build`)."""

from __future__ import annotations

import gzip
import re
import zipfile
from pathlib import Path

import pytest

from .conftest import toc_pages

PAGES = toc_pages()

# Attributes that make the browser fetch something (links a reader may click are fine).
FETCHING = re.compile(
    r"<(script|img|link|iframe|source|video|audio)\b[^>]*?\b(src|href)=\"([^\"]+)\"", re.I)


def page(html_root: Path, name: str) -> str:
    path = html_root / f"{name}.html"
    assert path.exists(), f"{path} was not built"
    return path.read_text()


@pytest.mark.parametrize("name", PAGES)
def test_page_fetches_nothing_from_another_host(html_root, name):
    html = page(html_root, name)
    remote = [m.group(3) for m in FETCHING.finditer(html)
              if re.match(r"(https?:)?//", m.group(3)) and m.group(1).lower() != "a"]
    assert not remote, f"{name}.html loads {remote}"


MATH_ELEMENT = re.compile(r'<(span|div) class="math[^"]*"[^>]*>(.*?)</\1>', re.S)
TEX_PARSERS = re.compile(r"mathjax|katex|tex-(chtml|svg|mml)", re.I)


@pytest.mark.parametrize("name", PAGES)
def test_math_is_rendered_at_build_time(html_root, name):
    """Every formula arrives typeset, with its assistive MathML; no TeX parser is loaded."""
    html = page(html_root, name)
    scripts = re.findall(r"<script\b[^>]*>", html, flags=re.I)
    parsers = [s for s in scripts if TEX_PARSERS.search(s)]
    assert not parsers, f"{name}.html loads a TeX parser: {parsers}"
    assert "window.MathJax" not in html, f"{name}.html configures a client-side MathJax"
    formulas = MATH_ELEMENT.findall(html)
    raw = [inner[:60] for _, inner in formulas
           if re.search(r"\\\(|\\\[", inner) or "<mjx-container" not in inner]
    assert not raw, f"{name}.html: formulas left as TeX: {raw[:3]}"
    assert "<mjx-merror" not in html, f"{name}.html: a TeX error"
    if formulas:
        assert html.count("<mjx-assistive-mml") >= len(formulas), (
            f"{name}.html: a formula without MathML for screen readers")
        fonts = re.findall(r'url\("?([^")]+\.woff2?)"?\)', html)
        assert fonts, f"{name}.html: typeset maths but no MathJax fonts"
        for font in set(fonts):
            assert (html_root / name).parent.joinpath(font).resolve().exists(), (
                f"{name}.html: MathJax font {font} is not in the built site")


@pytest.mark.parametrize("name", PAGES)
def test_no_render_blocking_script(html_root, name):
    """Every script file is deferred (or async); inline scripts only."""
    html = page(html_root, name)
    blocking = [m.group(0) for m in re.finditer(r"<script\b[^>]*?\ssrc=[^>]*>", html)
                if not re.search(r"\b(defer|async)\b|type=\"module\"", m.group(0))]
    assert not blocking, f"{name}.html: render-blocking scripts {blocking}"


@pytest.mark.parametrize("name", PAGES)
def test_icons_are_inline_svg_without_the_icon_script(html_root, name):
    html = page(html_root, name)
    assert "fontawesome" not in " ".join(re.findall(r"<script\b[^>]*>", html)).lower(), (
        f"{name}.html loads the Font Awesome script")
    left = re.findall(r'<i class="[^"]*\bfa-[^"]*"', html)
    assert not left, f"{name}.html: icons that only the script would draw: {left[:3]}"
    assert 'class="svg-inline--fa' in html, f"{name}.html: no icons at all"


@pytest.mark.parametrize("name", PAGES)
def test_search_index_only_on_the_search_page(html_root, name):
    html = page(html_root, name)
    assert "searchindex.js" not in html and "searchtools.js" not in html, (
        f"{name}.html loads the search index")
    search = (html_root / "search.html").read_text()
    assert "searchindex.js" in search and "searchtools.js" in search


@pytest.mark.parametrize("name", PAGES)
def test_figures_are_sized_and_lazy(html_root, name):
    html = page(html_root, name)
    figures = [t for t in re.findall(r"<img\b[^>]*>", html) if "_images/" in t]
    for i, tag in enumerate(figures):
        assert re.search(r'\bwidth="\d+"', tag) and re.search(r'\bheight="\d+"', tag), (
            f"{name}.html: figure without width/height: {tag[-120:]}")
        assert 'loading="lazy"' in tag, f"{name}.html: figure {i} not lazy: {tag[-120:]}"


def test_the_theme_script_measures_no_box_at_load(html_root):
    """The theme's script asks lazy_tab_stops.js about each box (it measured them all at
    load), and no longer points to a source map that does not match it."""
    script = (html_root / "_static" / "scripts" / "pydata-sphinx-theme.js").read_text()
    assert "scrollWidth" not in script.split("function lcTabStop(")[0], (
        "the theme's script measures boxes itself")
    assert script.count("lcTabStop(") >= 2 and "sourceMappingURL" not in script


def test_the_stylesheet_keeps_what_the_site_uses_and_little_else(html_root):
    """The pages' one stylesheet without the rules of what no page or script has (tabs,
    floating form labels, dark tables, outline buttons), with the rules the reader's
    actions need (an open dropdown, a tooltip, the dark theme, a hidden toggle)."""
    pages = [page(html_root, name) for name in PAGES]
    names = {n for text in pages
             for n in re.findall(r'href="[./]*_static/(bundle-\w+\.css)"', text)}
    assert len(names) == 1, names
    css = (html_root / "_static" / names.pop()).read_text()
    scripts = [p.read_text(errors="replace") for p in (html_root / "_static").rglob("*.js")]
    for unused in ("sd-tab-set", "form-floating", "table-dark", "btn-outline-success"):
        assert not any(unused in text for text in pages + scripts), unused
        assert f".{unused}" not in css, f"the stylesheet keeps .{unused}"
    # ... and the rules of what the build writes into the pages after Sphinx (the maths).
    for needed in (".dropdown-menu.show", "[data-bs-popper]", ".bs-tooltip-auto",
                   "html[data-theme=dark]", ".toggle-hidden", ".pst-squeeze", ".search-button",
                   "mjx-container mjx-assistive-mml"):
        assert needed in css, f"the stylesheet lost {needed}"
    assert _gzip_size_of(css.encode()) <= 40 * 1024


# What a phone downloads before it can show a page, gzip-compressed as a static host
# serves it: the HTML and every stylesheet, script and figure it loads at once (lazy
# figures and the maths fonts, fetched as needed, are not counted).
PAGE_BUDGET_KIB = 280  # the API reference, the heaviest, is on two pages (it needed 290 KiB on
# one, once the neurons, the sparse autoencoder and three controls joined it)


def _gzip_size_of(data: bytes) -> int:
    return len(gzip.compress(data, compresslevel=6, mtime=0))


def _gzip_size(path: Path) -> int:
    return _gzip_size_of(path.read_bytes())


@pytest.mark.parametrize("name", PAGES)
def test_page_weight_is_within_budget(html_root, name):
    html = page(html_root, name)
    here = (html_root / name).parent
    total, seen = _gzip_size(html_root / f"{name}.html"), set()
    for tag in re.findall(r"<(?:script|img|link)\b[^>]*>", html):
        # src and href only: a control's data-src is fetched when the reader starts it
        url = re.search(r'(?<![\w-])(?:src|href)="([^"]+)"', tag)
        if (not url or re.match(r"(https?:)?//|data:", url.group(1))
                or (tag.startswith("<link") and not re.search(r'rel="(stylesheet|preload)"', tag))
                or 'loading="lazy"' in tag):
            continue
        target = here.joinpath(url.group(1).split("?")[0].split("#")[0]).resolve()
        if target in seen or not target.is_file():
            continue
        seen.add(target)
        total += _gzip_size(target)
    assert total <= PAGE_BUDGET_KIB * 1024, (
        f"{name}.html needs {total / 1024:.0f} KiB (gzip) before it shows, "
        f"over the {PAGE_BUDGET_KIB} KiB budget")


@pytest.mark.parametrize("name", [p for p in PAGES if p.startswith("chapters/")])
def test_chapter_has_figures_with_alt_text_and_launch_buttons(html_root, name):
    html = page(html_root, name)
    images = re.findall(r"<img\b[^>]*>", html)
    assert images, f"{name}.html has no figure"
    for tag in images:
        src = re.search(r'src="([^"]+)"', tag).group(1)
        assert (html_root / name).parent.joinpath(src).exists(), f"missing image {src}"
    assert "mybinder.org" in html and "colab.research.google.com" in html, "launch buttons missing"
    assert "Traceback" not in html and 'class="output traceback' not in html


@pytest.mark.parametrize("name", PAGES)
def test_page_titles_are_plain_text(html_root, name):
    """Titles appear in the sidebar and navigation of every page, where no math is typeset."""
    html = page(html_root, name)
    title = re.search(r"<title>(.*?)</title>", html, flags=re.S).group(1)
    assert "\\(" not in title and "$" not in title, f"{name}: TeX in the page title {title!r}"


def _published_site() -> str:
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[2] / "tools" / "plain_notebooks.py"
    if "plain_notebooks" not in sys.modules:
        spec = importlib.util.spec_from_file_location("plain_notebooks", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["plain_notebooks"] = module
        spec.loader.exec_module(module)
    return sys.modules["plain_notebooks"].site_url()


@pytest.mark.parametrize("name", PAGES)
def test_links_within_the_site_reach_their_page_and_anchor(html_root, name):
    """Every link into the site (a chapter's links to another page's equation, section or
    reference among them) leads to a page that exists and to an element with its id; none
    leaves for the published copy of the book."""
    html = page(html_root, name)
    here = (html_root / name).parent
    site, broken, ids = _published_site(), [], {}
    for url in re.findall(r'<a\b[^>]*?\shref="([^"]+)"', html):
        url = url.replace("&amp;", "&")
        if url.startswith(site):
            broken.append(f"{url} (the published site, not this one)")
            continue
        if re.match(r"[a-z][a-z0-9+.-]*:|//", url):
            continue
        path, _, anchor = url.partition("#")
        target = here.joinpath(path).resolve() if path else html_root / f"{name}.html"
        if not target.is_file():
            broken.append(url)
            continue
        if anchor and target.suffix == ".html":
            if target not in ids:
                ids[target] = set(re.findall(r'\sid="([^"]+)"', target.read_text()))
            if anchor not in ids[target]:
                broken.append(url)
    assert not broken, f"{name}.html links to what is not there: {broken}"


@pytest.mark.parametrize("name", PAGES)
def test_footer_names_the_licences_and_the_citation(html_root, name):
    footer = re.search(r'<footer class="bd-footer-content">.*?</footer>', page(html_root, name),
                       re.S)
    assert footer, f"{name}.html has no footer"
    text = footer.group(0)
    assert '<a href="https://creativecommons.org/licenses/by/4.0/">CC BY 4.0</a>' in text
    assert re.search(r'<a href="https://github\.com/[^"]+/blob/[^"]+/LICENSE">MIT</a>', text)
    assert re.search(r'<a href="https://github\.com/[^"]+/blob/[^"]+/CITATION\.cff">', text)


def test_the_site_carries_the_library_wheel(html_root):
    """The wheel the plain notebooks' first cell installs (tests/environments installs it)."""
    wheels = sorted(p.name for p in (html_root / "wheels").glob("*"))
    assert len(wheels) == 1 and wheels[0].endswith("-py3-none-any.whl"), wheels
    names = zipfile.ZipFile(html_root / "wheels" / wheels[0]).namelist()
    root = Path(__file__).resolve().parents[2]
    for wanted in ("attention_lib/__init__.py", "attention_lib/data/book_gpt.npz",
                   "attention_lib/controls/assets/model.js"):
        assert wanted in names and (root / wanted).exists(), wanted
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")]


def test_the_landing_page_maps_the_whole_model_with_a_link_per_part(html_root):
    """The map of the whole model (the model-map directive): drawn inline, titled in words,
    each of its parts linked to a chapter page that exists."""
    from attention_lib.plotting import MODEL_MAP_PARTS, model_map_text

    html = page(html_root, "intro")
    maps = re.findall(r'<svg class="model-map".*?</svg>', html, flags=re.S)
    assert len(maps) == 1, f"{len(maps)} maps on the landing page"
    svg = maps[0]
    title = re.search(r'<title id="model-map-title">(.*?)</title>', svg)
    assert title and title.group(1) == model_map_text()
    hrefs = re.findall(r'<a xlink:href="([^"]+)"', svg)
    # Each part is a box with a label and a shape (three links), the addition a circle.
    assert len(set(hrefs)) >= 6 and len(hrefs) >= 3 * (len(MODEL_MAP_PARTS) - 1)
    for url in set(hrefs):
        assert url.startswith("chapters/") and (html_root / url).is_file(), url


def _assistive_mml(fragment: str) -> str:
    """The MathML that MathJax wrote beside a typeset formula (what a screen reader reads)."""
    match = re.search(r"<mjx-assistive-mml[^>]*>(.*?)</mjx-assistive-mml>", fragment, re.S)
    assert match, fragment[:200]
    return match.group(1)


def test_the_cheat_sheets_formulas_are_the_chapters(html_root):
    """Each formula of the cheat sheet is the equation it links to, as typeset in its chapter
    (or on the notation page), and the sheet has every part it promises."""
    html = page(html_root, "cheatsheet")
    blocks = re.findall(r'<div class="equation-from docutils container">(.*?)</p>\s*</div>',
                        html, flags=re.S)
    assert len(blocks) >= 18, len(blocks)
    linked = set()
    for block in blocks:
        href = re.search(r'<a class="reference internal" href="([^"#]+)#(equation-[\w-]+)"',
                         block)
        assert href, block[:200]
        target = (html_root / href.group(1)).read_text()
        original = re.search(rf'<div class="math[^"]*" id="{href.group(2)}">(.*?)</div>',
                             target, flags=re.S)
        assert original, f"{href.group(1)} has no {href.group(2)}"
        assert _assistive_mml(block) == _assistive_mml(original.group(1)), href.groups()
        linked.add(href.group(2))
    for label in ("attention", "causal-mask", "multihead", "block-pre-post", "block-count",
                  "kv-bytes", "layer-flops", "online-max", "online-sum", "online-acc",
                  "gpt-forward", "softmax-jacobian"):
        assert f"equation-eq-{label}" in linked, label


def test_the_glossary_defines_its_terms_in_order(html_root):
    """At least 60 terms, each an anchor other pages can link to, in alphabetical order, each
    with a link to the chapter (or the notation page) where it is built."""
    html = page(html_root, "glossary")
    entries = re.findall(r'<dt id="(term-[^"]+)">(.*?)</dt>\s*<dd>(.*?)</dd>', html, re.S)
    assert len(entries) >= 60, len(entries)
    terms = [re.sub(r"<[^>]+>", "", re.sub(r'<a class="headerlink".*?</a>', "", term)).strip()
             for _, term, _ in entries]
    assert terms == sorted(terms, key=str.lower), "the glossary is not in alphabetical order"
    for _, term, definition in entries:
        assert re.search(r'href="(chapters/\d\d_\w+|notation)\.html', definition), term


@pytest.mark.parametrize("name", [p for p in PAGES if p.startswith("chapters/")])
def test_a_chapter_links_glossary_terms_where_it_first_uses_them(html_root, name):
    """Terms of the glossary are linked to their entries in every chapter, each once."""
    html = page(html_root, name)
    links = re.findall(r'<a class="glossary-link reference internal" href="[./]*glossary\.html'
                       r'#(term-[^"]+)"', html)
    assert len(links) >= 5, f"{name}: {len(links)} glossary links"
    assert len(links) == len(set(links)), f"{name} links a term twice"
    anchors = set(re.findall(r'<dt id="(term-[^"]+)"', page(html_root, "glossary")))
    assert set(links) <= anchors


def _text(html: str) -> str:
    """What a reader reads: the text of the page, without its styles and scripts."""
    import html as html_lib
    html = re.sub(r"<(style|script)\b.*?</\1>", " ", html, flags=re.S | re.I)
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", html)))


def test_the_source_audit_lists_each_claim_with_its_status_and_the_computed_value(html_root):
    """Every row of the appendix has a status (✓, ✗ or open) and a link to the place a chapter
    computes it; its value ("—", or the value and what it measures in brackets) is one that
    chapter's built page shows."""
    audit = page(html_root, "source_audit")
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", audit, re.S)[1:]
    rows = [r for r in rows if "<td" in r]
    assert len(rows) >= 60
    pages: dict[str, str] = {}
    statuses = set()
    for row in rows:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        assert len(cells) == 4, row[:200]
        assert re.match(r"(Tutorial|Textbook):", _text(cells[0]).strip()), cells[0][:80]
        status, value = _text(cells[1]).strip(), _text(cells[2]).strip()
        statuses.add(status)
        assert status in {"✓", "✗", "open"}, status
        link = re.search(r'href="(chapters/[^"#]+\.html)#([^"]+)"', cells[3])
        assert link, f"a row without a link to its chapter: {_text(row)[:120]}"
        target, anchor = link.groups()
        if target not in pages:
            pages[target] = (html_root / target).read_text()
        assert f'id="{anchor}"' in pages[target], f"{target} has no #{anchor}"
        if value != "—":
            shown = value.split(" (")[0]
            assert shown in _text(pages[target]), f"{target} does not show {shown!r}"
    assert statuses == {"✓", "✗", "open"}


def test_chapters_link_to_the_source_audit_instead_of_auditing(html_root):
    linking = [name for name in PAGES if name.startswith("chapters/")
               and 'href="../source_audit.html#audit-' in page(html_root, name)]
    assert len(linking) >= 10


WIDGET_TRACE = re.compile(r"application/vnd\.jupyter\.widget|jupyter-widgets|widget-view|"
                          r"Loading widget", re.I)


@pytest.mark.parametrize("name", [p for p in PAGES if p.startswith("chapters/")])
def test_no_dead_widget_on_the_website(html_root, name):
    """The ipywidgets sliders need a kernel: the website shows no trace of their views
    (the page's own controls stand for them there). Code shown on the page may name them,
    so the check reads the page outside code blocks."""
    html = re.sub(r'<div class="highlight[^"]*">.*?</div>', "", page(html_root, name),
                  flags=re.S)
    html = re.sub(r"<code[^>]*>.*?</code>", "", html, flags=re.S)
    found = WIDGET_TRACE.findall(html)
    assert not found, f"{name}.html carries widget traces: {sorted(set(found))}"
