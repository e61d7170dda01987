"""The chapters as the strict build executed them, checked without running anything again.

Each chapter runs once in the book's environment: while the strict build reads it
(``execute_notebooks: inline``). myst-nb writes the notebook it executed to
``_build/jupyter_execute/chapters/``, and ``_ext/execution_record.py`` writes beside it what
each ``{eval}`` role of the prose showed (``<chapter>.eval.json``). This compares that
execution with

* the outputs stored in ``chapters/``, under nbval's strict rules (``pytest --nbval``, with
  nbval's own comparison): every stored text output comes back identical, the streams of a
  cell merged as nbval merges them; a cell tagged ``nbval-ignore-output`` is run but not
  compared; PNG and JPEG images and widget views are not compared; an error fails, and a
  stored cell that was never run is not compared (it must have no outputs);
* the plain copies in ``colab/`` (``tools/plain_notebooks.py``), which are not executed:
  each of their code cells shows the executed cell's outputs (same rules), and every number
  written into their prose (``plain_notebook.eval``, recorded when the copy was made) is the
  value the build's kernel gave the same ``{eval}`` role of the chapter.

Run after the build: ``make book`` then ``pytest tests/book`` (``make test`` does both).
"""

from __future__ import annotations

import ast
import copy
import difflib
import json
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbval.plugin import (
    IPyNbCell,
    coalesce_streams,
    find_comment_markers,
    find_metadata_tags,
    nocolors,
)
from repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
EXECUTED = ROOT / "_build" / "jupyter_execute"


plain = load_script("plain_notebooks")
CHAPTERS = plain.chapters()
IDS = [path.name for _, path in CHAPTERS]

# What nbval 0.11 (pinned) never compares: IPyNbFile.skip_compare without --nbdime.
SKIP_COMPARE = ("metadata", "traceback", "prompt_number", "output_type", "name",
                "execution_count", "application/vnd.jupyter.widget-view+json",
                "image/png", "image/jpeg")


class _NbvalCell:
    """Just what nbval's cell item needs to run its own comparison, ``compare_outputs``."""

    colors = nocolors
    compare_outputs = IPyNbCell.compare_outputs
    sanitize = IPyNbCell.sanitize

    def __init__(self) -> None:
        self.parent = SimpleNamespace(skip_compare=SKIP_COMPARE, sanitize_patterns={})
        self.comparison_traceback: list[str] = []

    def format_output_compare(self, key, stored, executed) -> None:
        """nbval's report of a differing output, as a diff (nbval's asks pytest for one)."""
        diff = difflib.unified_diff(str(stored).splitlines(), str(executed).splitlines(),
                                    "stored", "executed", lineterm="", n=1)
        self.comparison_traceback.append(f"mismatch {key!r}:\n" + "\n".join(diff))


def nbval_options(cell) -> dict:
    """The options nbval gives a stored code cell: its tags, then its comment markers."""
    options = defaultdict(bool, find_metadata_tags(cell.metadata))
    options.update(dict(find_comment_markers(cell.source)))
    options.setdefault("check", True)
    return options


def cell_difference(executed, stored) -> str | None:
    """Why ``pytest --nbval`` would fail the stored code cell had it produced the executed
    cell's outputs, or None when it would pass."""
    options = nbval_options(stored)
    if options["skip"]:
        return None  # nbval neither runs nor compares it
    outputs = executed.get("outputs", [])
    errors = [o for o in outputs if o.get("output_type") == "error"]
    if errors and not options["check_exception"]:
        return f"the cell raised {errors[0].get('ename')}: {errors[0].get('evalue')}"
    if stored.get("execution_count") is None:
        return "a cell stored unrun has outputs" if stored.get("outputs") else None
    if executed.get("execution_count") is None:
        return "the build did not execute the cell"
    if not options["check"]:
        return None
    cell = _NbvalCell()
    same = cell.compare_outputs(coalesce_streams(copy.deepcopy(outputs)),
                                coalesce_streams(copy.deepcopy(stored.get("outputs", []))))
    return None if same else "\n".join(map(str, cell.comparison_traceback))


def _read(path: Path):
    return nbformat.read(path, as_version=4)


def executed_notebook(docname: str):
    path = EXECUTED / f"{docname}.ipynb"
    if not path.exists():
        pytest.fail(f"{path.relative_to(ROOT)} is missing: run `make book` first")
    return _read(path)


def _shape(nb) -> list[tuple[str, str | None, str]]:
    return [(c.cell_type, c.get("id"), c.source) for c in nb.cells]


@pytest.mark.parametrize(("docname", "path"), CHAPTERS, ids=IDS)
def test_the_build_executed_todays_chapter(docname, path):
    executed = executed_notebook(docname)
    assert _shape(executed) == _shape(_read(path)), (
        f"{path.name} changed since the build executed it: run `make book`")


@pytest.mark.parametrize(("docname", "path"), CHAPTERS, ids=IDS)
def test_the_executed_outputs_are_the_stored_ones(docname, path):
    stored = _read(path)
    executed = executed_notebook(docname)
    failures = []
    number = 0  # nbval's "Cell N": code cells counted from 0
    for ran, kept in zip(executed.cells, stored.cells, strict=True):
        if kept.cell_type != "code":
            continue
        why = cell_difference(ran, kept)
        if why:
            failures.append(f"{path.name}::Cell {number} ({kept.get('id')}):\n{why}")
        number += 1
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize(("docname", "path"), CHAPTERS, ids=IDS)
def test_the_plain_copy_shows_the_executed_outputs(docname, path):
    executed = {c.get("id"): c for c in executed_notebook(docname).cells
                if c.cell_type == "code"}
    target = plain.target_path(docname)
    copy_cells = [c for c in _read(target).cells if c.cell_type == "code"]
    assert copy_cells, f"{target.name} has no code cell"
    failures = []
    for cell in copy_cells:
        assert cell.get("id") in executed, f"{target.name}: cell {cell.get('id')} is no chapter's"
        why = cell_difference(executed[cell.get("id")], cell)
        if why:
            failures.append(f"{target.name}, cell {cell.get('id')}:\n{why}")
    assert not failures, "\n\n".join(failures)


def recorded_value(text_plain: str | None) -> str:
    """What the plain copy records for an {eval} value shown with this text/plain: a str as
    it is, an int or a float as its repr (``plain_notebooks.execute_values``)."""
    if text_plain is None:
        raise ValueError("the value has no text/plain form")
    value = ast.literal_eval(text_plain)
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    raise ValueError(f"{text_plain!r} is a {type(value).__name__}, not a str")


def build_eval_values(docname: str, executed) -> dict[str, dict[str, str]]:
    """``{cell id: {name: value}}`` of the {eval} roles the build evaluated in a chapter."""
    path = EXECUTED / f"{docname}.eval.json"
    if not path.exists():
        pytest.fail(f"{path.relative_to(ROOT)} is missing: run `make book` first")
    values: dict[str, dict[str, str]] = {}
    for entry in json.loads(path.read_text(encoding="utf-8")):
        cell = executed.cells[entry["cell"]]
        name = entry["name"]
        assert cell.cell_type == "markdown" and name in plain.eval_names(cell.source), (
            f"{docname}: the build evaluated {name} in cell {entry['cell']}, which does not "
            "quote it")
        value = recorded_value(entry["text/plain"])
        seen = values.setdefault(cell.get("id"), {})
        assert seen.get(name, value) == value, (
            f"{docname}: {name} showed {seen[name]!r} and {value!r} in one cell")
        seen[name] = value
    return values


@pytest.mark.parametrize(("docname", "path"), CHAPTERS, ids=IDS)
def test_the_plain_copys_numbers_are_the_ones_the_build_showed(docname, path):
    executed = executed_notebook(docname)
    built = build_eval_values(docname, executed)
    quoted = {c.get("id"): set(plain.eval_names(c.source)) for c in executed.cells
              if c.cell_type == "markdown" and plain.eval_names(c.source)}
    assert {k: set(v) for k, v in built.items()} == quoted, (
        f"{docname}: the build did not evaluate every quoted name once per cell")
    target = plain.target_path(docname)
    recorded = plain.recorded_values(target)
    stale = {(cell, name): (recorded.get(cell, {}).get(name), value)
             for cell, names in built.items() for name, value in names.items()
             if recorded.get(cell, {}).get(name) != value}
    assert not stale, (f"{target.name} quotes numbers the build did not show, "
                       f"(copy, build): {stale}; run python tools/plain_notebooks.py "
                       f"{path.relative_to(ROOT)}")
    assert recorded == built


# ------------------------------------------------------------- the comparison itself


def _cell(outputs, *, tags=(), source="x = 1", count=1):
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": list(tags)} if tags else {})
    cell.outputs = [nbformat.from_dict(o) for o in outputs]
    cell.execution_count = count
    return cell


def _stream(text, name="stdout"):
    return {"output_type": "stream", "name": name, "text": text}


def _display(data):
    return {"output_type": "display_data", "data": data, "metadata": {}}


def test_the_comparison_is_nbvals_strict_one():
    stored = _cell([_stream("a = 0.80\n"), _display({"text/plain": "<Figure>",
                                                     "image/png": "AAAA"})])
    same = _cell([_stream("a = "), _stream("0.80\n"),  # streams merged as nbval merges them
                  _display({"text/plain": "<Figure>", "image/png": "BBBB"})])  # images not
    assert cell_difference(same, stored) is None
    digit = _cell([_stream("a = 0.81\n"), _display({"text/plain": "<Figure>"})])
    assert "0.81" in cell_difference(digit, stored)
    missing = _cell([_stream("a = 0.80\n")])
    assert cell_difference(missing, stored)
    extra = _cell([_stream("a = 0.80\n"), _stream("warning\n", "stderr"),
                   _display({"text/plain": "<Figure>"})])
    assert cell_difference(extra, stored)
    html = _cell([_display({"text/plain": "x", "text/html": "<b>1</b>"})])
    assert cell_difference(_cell([_display({"text/plain": "x", "text/html": "<b>2</b>"})]),
                           html)


def test_the_comparison_follows_nbvals_markers():
    stored = _cell([_stream("took 1.2 s\n")], tags=["nbval-ignore-output"])
    assert cell_difference(_cell([_stream("took 3.4 s\n")]), stored) is None
    error = {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": []}
    assert "ValueError" in cell_difference(_cell([error]), stored)
    assert cell_difference(_cell([], count=None), _cell([])) == (
        "the build did not execute the cell")
    assert cell_difference(_cell([_stream("x\n")]), _cell([], count=None)) is None
    assert "unrun" in cell_difference(_cell([]), _cell([_stream("x\n")], count=None))
    marked = _cell([_stream("x\n")], source="# NBVAL_IGNORE_OUTPUT\nprint(1)")
    assert cell_difference(_cell([_stream("y\n")]), marked) is None


def test_recorded_values_are_read_as_the_plain_copy_records_them():
    assert recorded_value("'0.80'") == "0.80"
    assert recorded_value("('a long line '\n 'continued')") == "a long line continued"
    assert recorded_value("3") == "3" and recorded_value("0.5") == "0.5"
    for bad in ("np.float64(0.5)", "[1, 2]", "True", None):
        with pytest.raises(ValueError):
            recorded_value(bad)
