"""The book's structure: every chapter notebook is in the table of contents and vice versa,
and every notebook is stored with outputs, so nbval over chapters/ checks the whole book."""

from __future__ import annotations

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
