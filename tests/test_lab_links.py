"""Cross-page references in the chapters as links JupyterLab can show (tools/lab_links.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


lab_links = load_script("lab_links")
plain = lab_links.plain


@pytest.fixture(scope="module")
def book():
    b = plain.Book(root=ROOT, site="https://example.org/book/")
    b.labels = {"eq-a": ("notation", "eq", "3"), "eq-here": ("chapters/04_x", "eq", "4.1"),
                "sec-there": ("chapters/07_y", "section", "Cost"),
                "sec-here": ("chapters/04_x", "section", "Here")}
    b.citations = {"vaswani2017attention": "Vaswani et al., 2017"}
    b.titles = {"notation": "Notation"}
    return b


def test_cross_page_roles_become_website_links_and_local_ones_stay(book, monkeypatch):
    monkeypatch.setattr(plain, "toc_entries",
                        lambda root=None: [("intro", False), ("notation", False),
                                           ("chapters/04_x", True), ("chapters/07_y", True)])
    text = ("By {eq}`eq-a` and {eq}`eq-here`, see {ref}`sec-there` and {ref}`sec-here`, "
            "{doc}`../notation` {cite}`vaswani2017attention`.")
    assert lab_links.cross_page_roles(text, "chapters/04_x", book) == [
        "{eq}`eq-a`", "{ref}`sec-there`", "{doc}`../notation`",
        "{cite}`vaswani2017attention`"]
    assert lab_links.convert_text(text, "chapters/04_x", book) == (
        "By [(3)](https://example.org/book/notation.html#equation-eq-a) and {eq}`eq-here`, "
        "see [Cost](https://example.org/book/chapters/07_y.html#sec-there) and "
        "{ref}`sec-here`, [Notation](https://example.org/book/notation.html) "
        "([Vaswani et al., 2017](https://example.org/book/references.html"
        "#cite-vaswani2017attention)).")
    converted = lab_links.convert_text(text, "chapters/04_x", book)
    assert lab_links.cross_page_roles(converted, "chapters/04_x", book) == []


def test_the_rewrite_keeps_cell_ids_and_the_other_cells(book, tmp_path):
    nb = {"cells": [
        {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["See {eq}`eq-a`.\n",
                                                                         "Next line."]},
        {"cell_type": "code", "id": "c1", "metadata": {}, "source": ["x = 1"],
         "outputs": [], "execution_count": 1},
        {"cell_type": "markdown", "id": "m2", "metadata": {}, "source": ["{eq}`eq-here`"]},
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "04_x.ipynb"
    path.write_text(json.dumps(nb))
    assert lab_links.apply(path, "chapters/04_x", book)
    out = json.loads(path.read_text())
    assert [c["id"] for c in out["cells"]] == ["m1", "c1", "m2"]
    assert out["cells"][0]["source"] == [
        "See [(3)](https://example.org/book/notation.html#equation-eq-a).\n", "Next line."]
    assert out["cells"][1:] == nb["cells"][1:]
    assert not lab_links.apply(path, "chapters/04_x", book)  # nothing left to do


def _texts_for(book) -> dict[str, set[str]]:
    """For every address a role can be rewritten to, the texts it may show there."""
    from docutils.nodes import make_id

    shown: dict[str, set[str]] = {}
    for label, (docname, kind, info) in book.labels.items():
        anchor = f"equation-{make_id(label)}" if kind == "eq" else make_id(label)
        texts = {"eq": {f"({info})", f"Equation {info}"},
                 "exercise": {f"Exercise {info}"}}.get(kind, {info})
        shown.setdefault(book.page(docname, anchor), set()).update(texts)
    for key, who in book.citations.items():
        shown[book.page("references", make_id(f"cite-{key}"))] = {who, plain._textual(who)}
    for docname, title in book.titles.items():
        shown[book.page(docname)] = {title}
    return shown


def test_the_chapters_links_to_the_website_point_to_what_exists_and_say_what_it_is():
    """A link that tools/lab_links.py wrote still names today's equation number, the
    entry's authors and year, the page's title; its page and anchor exist. (Text chosen
    by the author, as in "the cost section", only needs an address that exists.)"""
    book = plain.load_book(ROOT)
    shown = _texts_for(book)
    wrong = []
    for docname, path in plain.chapters(ROOT):
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            for m in plain.LINK.finditer("".join(cell["source"])):
                text, url = m.group("text"), m.group("url")
                if not url.startswith(book.site):
                    continue
                if url not in shown:
                    wrong.append(f"{docname}: {url} is not a page or label of the book")
                elif (text.startswith("(") or "cite-" in url or "#" not in url) \
                        and text not in shown[url] and not text.startswith("the "):
                    wrong.append(f"{docname}: [{text}]({url}) should say {shown[url]}")
    assert not wrong, "\n".join(wrong)
