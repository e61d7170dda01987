"""The notebooks as Binder and Colab readers run them: a fresh environment, no book tools.

A new virtual environment is made from ``binder/requirements.txt`` alone, in a copy of the
repository's tracked files (as repo2docker sees a clone; ``tools/reader_env.py``). Then
every chapter, copied alone into an empty folder, runs top to bottom in it: Colab opens one
notebook with nothing around it, and a chapter that runs there runs in Binder's
``chapters/`` too (a folder with more in it); the environment is checked to hold none of the
build and test tools, so a notebook that imported myst-nb, Sphinx or pytest would fail here.

This is each chapter's one run outside the book's environment (the other is the strict
build's, which ``tests/book`` compares with the stored outputs); chapter 4's is in this
environment's JupyterLab, as a Binder reader runs it (``test_jupyterlab.py``), and chapter
13's is its plain copy's in an environment like Colab's (``test_colab_install.py``). ``make test``
makes the environment while the unit tests run and passes its folder as ``READER_ENV``;
without it, the tests make their own (a minute or two).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from .conftest import reader_env

ROOT = Path(__file__).resolve().parents[2]
# Chapter 4's run in a reader's environment is JupyterLab's (test_jupyterlab.py), chapter
# 14's its plain copy's, installed as on Colab (test_colab_install.py).
RUN_ELSEWHERE = {"04_scale_scores_by_sqrt_dk.ipynb", "13_stack_blocks_into_a_model.ipynb"}
CHAPTERS = [p for p in sorted((ROOT / "chapters").glob("*.ipynb")) if p.name not in RUN_ELSEWHERE]
BUILD_AND_TEST_TOOLS = ["myst_nb", "jupyter_book", "sphinx", "playwright", "pytest", "ruff",
                        "nbval", "hypothesis"]

RUNNER = textwrap.dedent("""
    import json
    import sys
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    sys.path.insert(0, sys.argv[2])  # the book's tools/
    from kernel_replies import wait_in_slices

    wait_in_slices()  # a slider cell's reply could otherwise wait out the 600 s
    path = Path(sys.argv[1])
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors, errors
    colab = [c for c in nb.cells if c.get("id") == "colab-install"]
    print(json.dumps({"ran": path.name, "cells": len(nb.cells),
                      "colab_cell_outputs": [c.outputs for c in colab]}))
""")


def test_binder_environment_has_no_build_or_test_tools(binder_env):
    python, _ = binder_env
    probe = ("import importlib.util, json; print(json.dumps({m: importlib.util.find_spec(m) "
             f"is not None for m in {BUILD_AND_TEST_TOOLS!r}}}))")
    found = json.loads(subprocess.run([str(python), "-c", probe], check=True,
                                      capture_output=True, text=True).stdout)
    assert not any(found.values()), f"installed by binder/requirements.txt: {found}"
    for module in ("attention_lib", "jupyterlab_myst", "ipywidgets", "matplotlib"):
        subprocess.run([str(python), "-c", f"import {module}"], check=True)


def test_the_reader_environment_has_todays_library(binder_env):
    # The library is installed from the copy, not found in this checkout or its .venv.
    python, _ = binder_env
    probe = "import attention_lib; print(attention_lib.__file__)"
    where = subprocess.run([str(python), "-c", probe], check=True, capture_output=True,
                           text=True, cwd="/", env=reader_env.clean_env()).stdout.strip()
    assert Path(where).is_relative_to(python.parents[1]), where
    installed = Path(where).parent
    package = ROOT / "attention_lib"
    shipped = [p for pattern in ("**/*.py", "data/*", "controls/assets/*")
               for p in package.glob(pattern) if "__pycache__" not in p.parts]
    assert len(shipped) > 20
    for source in sorted(shipped):
        copy = installed / source.relative_to(package)
        assert copy.read_bytes() == source.read_bytes(), f"{copy} is not today's {source.name}"


def _run(python: Path, notebook: Path, workers: int) -> dict:
    result = subprocess.run([str(python), "-c", RUNNER, str(notebook), str(ROOT / "tools")],
                            capture_output=True, text=True, cwd=notebook.parent,
                            env=reader_env.kernel_env(workers))
    assert result.returncode == 0, f"{notebook.name} failed:\n{result.stderr[-4000:]}"
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", [p.name for p in CHAPTERS])
def test_chapter_runs_alone_in_an_empty_folder(binder_env, tmp_path, name, request):
    python, _ = binder_env
    shutil.copy2(ROOT / "chapters" / name, tmp_path / name)
    workers = getattr(request.config, "workerinput", {}).get("workercount", 1)  # xdist
    report = _run(python, tmp_path / name, workers)
    assert report["ran"] == name
    # The first cell installs the library on Colab only: here it does nothing.
    assert report["colab_cell_outputs"] == [[]], report["colab_cell_outputs"]
