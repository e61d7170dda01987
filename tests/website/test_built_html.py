"""Checks of the built website (run after `jupyter-book build`)."""

from __future__ import annotations

import re
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


@pytest.mark.parametrize("name", PAGES)
def test_math_is_typeset_by_the_local_mathjax(html_root, name):
    html = page(html_root, name)
    scripts = re.findall(r"<script[^>]*src=\"([^\"]*mathjax[^\"]*)\"", html, flags=re.I)
    if 'class="math' not in html:
        assert not scripts, f"{name}.html has no math but loads MathJax"
        return
    assert scripts, f"{name}.html has math but loads no MathJax"
    for src in scripts:
        target = (html_root / name).parent / src.split("?")[0]
        assert target.exists(), f"{name}.html loads {src}, which is not in the built site"


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
