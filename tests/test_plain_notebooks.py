"""The plain-Markdown copies in colab/ (tools/plain_notebooks.py): current, free of MyST,
and what the Colab button opens."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


plain = load_script("plain_notebooks")
CHAPTERS = plain.chapters()


STORED = sorted((ROOT / "chapters").glob("*.ipynb")) + sorted((ROOT / "colab").glob("*.ipynb"))
PROGRESS = re.compile(r"training:\s+(?P<percent>\d+)%\|[^|]*\|\s*(?P<done>\d+)/(?P<total>\d+)")


@pytest.fixture(scope="module")
def book():
    return plain.load_book()


# ------------------------------------------------------------------ the committed copies


def test_there_is_one_plain_copy_per_chapter():
    wanted = {plain.target_path(d).name for d, _ in CHAPTERS}
    have = {p.name for p in (ROOT / plain.OUT_DIR).glob("*.ipynb")}
    assert wanted, "no chapters in _toc.yml"
    assert have == wanted, f"missing: {wanted - have}; without a chapter: {have - wanted}"


@pytest.mark.parametrize(("docname", "path"), CHAPTERS, ids=lambda x: str(x).split("/")[-1])
def test_plain_copy_is_current(docname, path, book):
    target = plain.target_path(docname)
    values = plain.recorded_values(target)
    try:
        text = plain.render(docname, path, values, book)
    except plain.PlainError as error:
        pytest.fail(f"{error} (run python tools/plain_notebooks.py)")
    assert text == target.read_text(encoding="utf-8"), (
        f"{target.name} is stale: run python tools/plain_notebooks.py {path.relative_to(ROOT)}")


def myst_left(markdown: str) -> list[str]:
    """MyST syntax in a markdown text, as CommonMark (markdown-it-py) parses it."""
    found = []
    tokens = MarkdownIt("commonmark").parse(markdown)
    for token in tokens:
        if token.type in ("fence", "code_block"):
            if token.type == "fence" and token.info.strip().startswith("{"):
                found.append(f"directive fence {token.info.strip()}")
            continue  # code is code
        if token.type != "inline":
            continue
        children = token.children or []
        for before, after in zip(children, children[1:], strict=False):
            if (before.type == "text" and after.type == "code_inline"
                    and re.search(r"\{[A-Za-z][\w:-]*\}$", before.content)):
                found.append(f"role {before.content.split()[-1]}`{after.content}`")
        for line in token.content.splitlines():
            if re.match(r"^\s*:{3,}", line):
                found.append(f"colon fence {line.strip()}")
            if re.match(r"^\s*\([\w:-]+\)=\s*$", line):
                found.append(f"target {line.strip()}")
            if re.search(r"\$\$\s*\([\w:-]+\)\s*$", line):
                found.append(f"equation label {line.strip()}")
            if re.search(r"\[\^[^\]\s]+\]", line):  # a footnote: not CommonMark
                found.append(f"footnote {line.strip()}")
    # anything a renderer could still take for a role, even where the tokens split it
    found += [f"role text {m.group(0)}" for m in re.finditer(r"\{[a-z][\w:-]*\}`", markdown)
              if not _inside_code(markdown, m.start())]
    return found


def _inside_code(markdown: str, at: int) -> bool:
    """True when position ``at`` is inside a fenced code block."""
    return markdown[:at].count("\n```") % 2 == 1


def test_the_myst_finder_finds_myst():
    sample = ("See {eq}`eq-a` and {cite:p}`x`.\n\n:::{admonition} T\nbody\n:::\n\n"
              "A note[^n].\n\n[^n]: Its text.\n\n(sec-a)=\n## A\n\n$$\nx\n$$ (eq-a)\n\n"
              "```{exercise}\n:label: e\nDo it.\n```\n")
    found = " | ".join(myst_left(sample))
    for kind in ("role {eq}`eq-a`", "role {cite:p}`x`", "colon fence", "target (sec-a)=",
                 "equation label", "directive fence {exercise}", "footnote"):
        assert kind in found, f"{kind!r} not found in {found!r}"
    assert myst_left("Plain $x$ and `code` and [a link](b.ipynb).\n\n```python\nx = 1\n```\n") == []


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_stored_notebook_carries_no_widget_and_its_progress_bars_ended(path):
    """No widget state and no widget view (a widget needs the kernel that made it; a stored
    state would show a widget's first state, a stored view "model not found" in JupyterLab
    before its cell runs): a training bar is text, in its final state."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert "widgets" not in nb["metadata"], f"{path.name} stores widget state"
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            assert not [k for k in data if "widget" in k], f"{path.name}: a widget output"
            text = "".join(data.get("text/plain", "")) + "".join(out.get("text", ""))
            for bar in PROGRESS.finditer(text):
                assert bar["percent"] == "100" and bar["done"] == bar["total"], (
                    f"{path.name}: a progress bar left at {bar.group(0)!r}")


def test_storing_outputs_drops_widget_views():
    # A slider cell's view (its model id changes with every run) is left out of the file.
    tool = load_script("execute_notebooks")
    view = {"output_type": "execute_result", "metadata": {}, "execution_count": 3,
            "data": {"text/plain": "interactive(children=(FloatSlider(...),))",
                     tool.WIDGET_VIEW: {"version_major": 2, "model_id": "ab12"}}}
    figure = {"output_type": "display_data", "metadata": {},
              "data": {"text/plain": "<Figure size 560x240 with 1 Axes>", "image/png": "AAAA"}}
    cells = [{"cell_type": "code", "outputs": [figure, view]},
             {"cell_type": "markdown", "source": "text"}]
    assert tool.drop_widget_views(cells) == 1
    assert cells[0]["outputs"] == [figure]


def test_the_progress_bar_check_sees_the_training_bar():
    chapter = ROOT / "chapters" / "13_stack_blocks_into_a_model.ipynb"
    outputs = [o for c in json.loads(chapter.read_text(encoding="utf-8"))["cells"]
               for o in c.get("outputs", [])]
    assert [o for o in outputs if PROGRESS.search("".join(o.get("data", {}).get("text/plain", "")))]


@pytest.mark.parametrize(("docname", "path"), CHAPTERS, ids=lambda x: str(x).split("/")[-1])
def test_plain_copy_has_no_myst_left(docname, path):
    nb = json.loads(plain.target_path(docname).read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            left = myst_left("".join(cell["source"]))
            assert not left, f"{docname}: markdown cell {i} still has MyST: {left}"


@pytest.mark.parametrize(("docname", "path"), CHAPTERS, ids=lambda x: str(x).split("/")[-1])
def test_plain_copy_keeps_the_colab_cell_first_and_every_code_cell(docname, path):
    colab = load_script("colab_cell")
    chapter = json.loads(path.read_text(encoding="utf-8"))
    copy = json.loads(plain.target_path(docname).read_text(encoding="utf-8"))
    first = colab.first_code_cell(copy)
    assert first["id"] == colab.CELL_ID and "".join(first["source"]) == colab.cell_source()
    kept = {c["id"]: c for c in copy["cells"] if c["cell_type"] == "code"}
    for cell in chapter["cells"]:
        if cell["cell_type"] != "code":
            continue
        if cell["id"] not in kept:  # only a cell that formats prose numbers may go
            assert plain.is_prose_formatting(cell), f"{docname}: code cell {cell['id']} lost"
            continue
        assert kept[cell["id"]]["source"] == cell["source"]
        assert kept[cell["id"]]["outputs"] == cell["outputs"]
    # every quoted number is filled in, from a recorded str
    for cell in copy["cells"]:
        assert "_txt`" not in "".join(cell["source"]) or cell["cell_type"] == "code"


# ------------------------------------------------------------------ the conversion itself


def _book(tmp_labels=None) -> object:
    b = plain.Book(root=ROOT, site="https://example.org/book/")
    b.labels = {"eq-a": ("notation", "eq", "3"), "eq-local": ("chapters/04_x", "eq", "4.1"),
                "sec-cost": ("chapters/04_x", "section", "Cost: the matrix"),
                "ex-one": ("chapters/04_x", "exercise", "4.2"),
                "para-x": ("chapters/04_x", "section", "")}  # a target on no heading
    b.citations = {"vaswani2017attention": "Vaswani et al., 2017",
                   "jain2019attention": "Jain and Wallace, 2019"}
    b.titles = {"notation": "Notation"}
    return b


def _md(text: str, values=None) -> str:
    page = plain.Page(book=_book(), docname="chapters/04_x", values=values or {})
    return plain.convert_markdown(text, page)


def test_roles_become_values_and_links():
    out = _md("t = {eval}`t_txt`; by {eq}`eq-a` and {eq}`eq-local`, see {ref}`sec-cost` "
              "and {ref}`the cost <sec-cost>`, {cite}`vaswani2017attention`, "
              "{cite:t}`jain2019attention`, {doc}`the notation <../notation>`.",
              {"t_txt": "0.80"})
    assert out == (
        "t = 0.80; by [(3)](https://example.org/book/notation.html#equation-eq-a) and "
        "[(4.1)](https://example.org/book/chapters/04_x.html#equation-eq-local), see "
        "[Cost: the matrix](https://example.org/book/chapters/04_x.html#sec-cost) and "
        "[the cost](https://example.org/book/chapters/04_x.html#sec-cost), "
        "([Vaswani et al., 2017](https://example.org/book/references.html"
        "#cite-vaswani2017attention)), "
        "[Jain and Wallace (2019)](https://example.org/book/references.html"
        "#cite-jain2019attention), [the notation](https://example.org/book/notation.html).")


def test_labelled_equation_gets_its_number_and_targets_go():
    out = _md("(sec-x)=\n## Title\n\n  $$\n  a = b\n  $$ (eq-local)\n")
    assert out == "## Title\n\n  $$\n  a = b\n  \\tag{4.1}\n  $$"


def test_footnotes_become_numbered_superscripts():
    page = plain.Page(book=_book(), docname="chapters/04_x", values={"m_txt": "AMD EPYC"})
    first = plain.convert_markdown("Fast[^bench] and small[^size].\n\n[^bench]: On {eval}`m_txt`."
                                   "\n[^size]: In bytes.", page)
    assert first == ("Fast<sup>1</sup> and small<sup>2</sup>.\n\n<sup>1</sup> On AMD EPYC.\n"
                     "<sup>2</sup> In bytes.")
    # numbered per chapter: a label seen before keeps its number
    assert plain.convert_markdown("Again[^bench].", page) == "Again<sup>1</sup>."


def test_asides_exercises_and_solutions():
    out = _md(":::{admonition} Going deeper: x\n:class: dropdown tip\nBody $y$.\n:::\n\n"
              ":::{admonition} What you will learn\n:class: tip\n- one\n- two\n:::")
    assert out == ("<details>\n<summary><strong>Going deeper: x</strong></summary>\n\n"
                   "Body $y$.\n\n</details>\n\n> **What you will learn**\n>\n> - one\n> - two")
    out = _md("```{exercise}\n:label: ex-one\nDo it.\n```")
    assert out == "### Exercise 4.2\n\nDo it."
    out = _md("```{solution-start} ex-one\n:class: dropdown\n```\nBecause $x$.")
    assert out == ("<details>\n<summary><strong>Solution to Exercise 4.2</strong></summary>"
                   "\n\nBecause $x$.\n\n</details>")
    assert _md("```{solution-end}\n```") == ""
    # a blockquote would break multi-line maths: such an aside is a <details> block
    out = _md(":::{admonition} Note\n:class: note\n$$\nx\n$$\n:::")
    assert out.startswith("<details>") and "\n$$\nx\n$$\n" in out


def test_unknown_myst_fails_naming_the_chapter_and_the_text():
    for text in ("a {glue:text}`x` b", "```{margin}\nx\n```", "{eval}`not_recorded`",
                 "{eq}`eq-nowhere`", "{cite}`nobody2020`", "  :::{note}\n  x\n  :::",
                 "{ref}`para-x`", ":::{admonition} x\nnever closed"):
        with pytest.raises(plain.PlainError, match=r"chapters/04_x: .*"):
            _md(text)


def test_links_to_pages_go_to_the_website_and_chapters_stay_beside():
    out = _md("[intro](../intro.md), [ch 6](06_split_into_heads.ipynb), [w](https://x.org)")
    assert out == ("[intro](https://example.org/book/intro.html), "
                   "[ch 6](06_split_into_heads.ipynb), [w](https://x.org)")


def _code(source, tags=()):
    return {"cell_type": "code", "source": source, "metadata": {"tags": list(tags)},
            "outputs": []}


FORMAT = ("remove-input", "remove-output")


def test_formatting_cells_are_dropped_only_when_nothing_later_needs_them():
    cells = [
        _code("import numpy as np\nrng = np.random.default_rng(0)\nx = rng.normal()"),
        _code("x_txt = format(x, '.2f')", FORMAT),                # nothing needs it: dropped
        _code("y = 2 * x\ny_txt = str(y)", FORMAT),               # y read below: kept
        _code("draw_txt = str(rng.normal())", FORMAT),            # moves rng, used below: kept
        _code("z_txt = str(np.sqrt(y))", FORMAT),                 # a module's function: dropped
        _code("print(y, rng.normal())"),
    ]
    assert plain.droppable_cells(cells) == {1, 4}
    # a formatting cell that a kept formatting cell needs is kept too
    cells = [_code("a = 1"), _code("b = a + 1\nb_txt = str(b)", FORMAT),
             _code("c = b * 2\nc_txt = str(c)", FORMAT), _code("print(c)")]
    assert plain.droppable_cells(cells) == set()


def test_eval_values_are_read_where_the_cell_quotes_them(tmp_path):
    nb = {"cells": [
        _code("v_txt = 'first'\nn_txt = str(3)"),
        {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": "{eval}`v_txt`"},
        _code("v_txt = 'second'"),
        {"cell_type": "markdown", "id": "m2", "metadata": {},
         "source": "{eval}`v_txt` {eval}`n_txt`"},
    ], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                   "language": "python"}},
          "nbformat": 4, "nbformat_minor": 5}
    for i, cell in enumerate(nb["cells"]):
        cell.setdefault("id", f"c{i}")
        if cell["cell_type"] == "code":
            cell["execution_count"] = None
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb))
    assert plain.execute_values(path) == {"m1": {"v_txt": "first"},
                                          "m2": {"v_txt": "second", "n_txt": "3"}}
    nb["cells"][2]["source"] = "import numpy as np\nv_txt = np.float64(0.5)"
    path.write_text(json.dumps(nb))
    with pytest.raises(plain.PlainError, match="v_txt.*float64"):
        plain.execute_values(path)
    nb["cells"][2]["source"] = "del v_txt"  # quoted by m2 after it is gone
    path.write_text(json.dumps(nb))
    with pytest.raises(plain.PlainError, match="x.ipynb does not run"):
        plain.execute_values(path)


def test_citations_are_author_year_from_the_bibliography(book):
    assert book.citations["vaswani2017attention"] == "Vaswani et al., 2017"
    assert book.citations["jain2019attention"] == "Jain and Wallace, 2019"
    assert all(re.search(r"\w", who) for who in book.citations.values())


def test_equations_are_numbered_as_the_website_numbers_them(book):
    # per chapter, "chapter.k" in order; the notation page counts 1, 2, ...
    assert book.labels["eq-projections"][1:] == ("eq", "1")
    chapter_17 = sorted((v[2] for v in book.labels.values()
                         if v[0] == "chapters/17_tile_attention_exactly" and v[1] == "eq"),
                        key=lambda n: int(n.split(".")[1]))
    assert chapter_17[:2] == ["17.1", "17.2"]
    assert len(set(chapter_17)) == len(chapter_17)


def test_site_address_follows_the_repository(tmp_path):
    (tmp_path / "_config.yml").write_text(
        "title: x\nrepository:\n  url: https://github.com/Fork/book\n")
    assert plain.site_url(tmp_path) == "https://fork.github.io/book/"
    (tmp_path / "_config.yml").write_text(
        "title: x\nhtml:\n  baseurl: https://docs.example.org/b\n")
    assert plain.site_url(tmp_path) == "https://docs.example.org/b/"


# ------------------------------------------------------------------------- Colab button


def test_colab_button_opens_the_plain_copy(tmp_path):
    ext = load_script("colab_plain", "_ext")
    (tmp_path / "colab").mkdir()
    (tmp_path / "colab" / "04_x.ipynb").write_text("{}")
    url = "https://colab.research.google.com/github/o/r/blob/main/chapters/04_x.ipynb"
    assert ext.plain_url(url, "chapters/04_x", tmp_path) == (
        "https://colab.research.google.com/github/o/r/blob/main/colab/04_x.ipynb")
    assert ext.plain_url(url.replace("04_x", "05_y"), "chapters/05_y", tmp_path) == \
        url.replace("04_x", "05_y")  # no plain copy: unchanged

    class App:
        srcdir = str(tmp_path)

    context = {"header_buttons": [{"label": "launch-buttons", "buttons": [
        {"text": "Binderhub", "url": "https://mybinder.org/x/chapters/04_x.ipynb"},
        {"text": "Colab", "url": url}]}]}
    ext._rewrite(App(), "chapters/04_x", "page.html", context, None)
    buttons = context["header_buttons"][0]["buttons"]
    assert buttons[1]["url"].endswith("/blob/main/colab/04_x.ipynb")
    assert buttons[0]["url"].endswith("/chapters/04_x.ipynb")


def test_the_book_loads_the_colab_extension():
    config = (ROOT / "_config.yml").read_text()
    assert re.search(r"^\s+colab_plain: _ext\s*$", config, re.M)
