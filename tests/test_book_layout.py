"""The book's structure: every chapter notebook is in the table of contents and vice versa,
and every notebook is stored with outputs, so nbval over chapters/ checks the whole book."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def toc_files() -> list[str]:
    text = (ROOT / "_toc.yml").read_text()
    return re.findall(r"^\s*-?\s*file:\s*(\S+)\s*$", text, flags=re.M)


def chapter_notebooks() -> list[Path]:
    return sorted((ROOT / "chapters").glob("*.ipynb"))


def test_toc_lists_exactly_the_chapter_notebooks():
    listed = {f for f in toc_files() if f.startswith("chapters/")}
    on_disk = {f"chapters/{p.stem}" for p in chapter_notebooks()}
    assert on_disk, "no chapter notebooks found"
    assert listed == on_disk, (
        f"only in _toc.yml: {listed - on_disk}; only on disk: {on_disk - listed}")


def test_every_toc_entry_exists():
    for entry in toc_files():
        matches = list(ROOT.glob(f"{entry}.*"))
        assert matches, f"_toc.yml lists {entry!r}, which does not exist"


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_notebook_is_stored_executed_without_errors(path: Path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    unexecuted = [i for i, c in enumerate(code) if c.get("execution_count") is None]
    assert not unexecuted, f"{path.name}: code cells {unexecuted} are stored without being run"
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name}: stored error outputs {[e.get('ename') for e in errors]}"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_notebook_follows_the_page_skeleton(path: Path):
    nb = json.loads(path.read_text())
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert markdown.lstrip().startswith("# "), f"{path.name} must start with a title"
    for heading in ("What you will learn", "Key takeaways", "Exercises"):
        assert heading in markdown, f"{path.name} has no '{heading}' section"
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "sys.path" not in code, f"{path.name} edits sys.path; attention_lib is installed"
    assert re.search(r"default_rng\(\d+\)", code), f"{path.name} has no fixed seed"
    assert re.match(r"\d\d_[a-z0-9_]+\.ipynb$", path.name), f"{path.name} is not NN_verb_phrase"


def _load_tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_first_code_cell_installs_the_library_on_colab(path: Path):
    colab = _load_tool("colab_cell")
    nb = json.loads(path.read_text())
    assert colab.is_current(nb), (
        f"{path.name}: the first code cell is not the current Colab cell "
        "(run `python tools/colab_cell.py`)")
    source = "".join(colab.first_code_cell(nb)["source"])
    assert colab.repository_url() in source and 'if "google.colab" in sys.modules:' in source


def test_colab_cell_follows_the_configured_repository(tmp_path: Path):
    colab = _load_tool("colab_cell")
    (tmp_path / "_config.yml").write_text(
        "title: x\nrepository:\n  url: https://example.org/fork/book\n  branch: main\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "9.8.7"\n')
    source = colab.cell_source(tmp_path)
    assert '"https://example.org/fork/book"' in source and '"v9.8.7"' in source
    compile(source, "colab-cell", "exec")  # plain Python, no IPython magics


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_notebook_runs_without_the_book_build_tools(path: Path):
    nb = json.loads(path.read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    for tool in ("myst_nb", "sphinx", "jupyter_book", "nbval", "pytest"):
        assert not re.search(rf"^\s*(import|from)\s+{tool}\b", code, re.M), (
            f"{path.name} imports {tool}, which Colab and Binder do not have")
    assert "__file__" not in code, (
        f"{path.name} finds files through __file__; read data through a library function")


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_prose_numbers_are_eval_of_names_the_code_assigns(path: Path):
    nb = json.loads(path.read_text())
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "{glue" not in markdown, f"{path.name} still uses glue roles"
    for expr in re.findall(r"\{eval\}`([^`]*)`", markdown):
        # myst-nb evaluates only bare names on the website; jupyterlab-myst shows a str as is.
        assert re.fullmatch(r"[A-Za-z_]\w*", expr), f"{path.name}: {{eval}}`{expr}` is not a name"
        assert re.search(rf"^\s*{expr}\s*=", code, re.M), (
            f"{path.name}: {{eval}}`{expr}` is quoted but never assigned")
    # The role is evaluated when its markdown cell is reached (Run All, or the website's
    # inline execution), so the name must be assigned in an earlier code cell.
    assigned: set[str] = set()
    for i, cell in enumerate(nb["cells"]):
        text = "".join(cell["source"])
        if cell["cell_type"] == "code":
            assigned.update(re.findall(r"^\s*(\w+)\s*=", text, re.M))
        else:
            early = set(re.findall(r"\{eval\}`(\w+)`", text)) - assigned
            assert not early, f"{path.name}: cell {i} quotes {early} before a code cell assigns it"


@pytest.mark.parametrize("path", chapter_notebooks(), ids=lambda p: p.name)
def test_hidden_cells_still_run_on_the_website(path: Path):
    # The website executes notebooks inline and never runs a `remove-cell` cell, so a
    # cell that computes prose numbers is hidden with remove-input + remove-output.
    nb = json.loads(path.read_text())
    removed = [c.get("id") for c in nb["cells"] if c["cell_type"] == "code"
               and "remove-cell" in c.get("metadata", {}).get("tags", [])]
    assert removed == ["colab-install"], f"{path.name}: cells tagged remove-cell: {removed}"
