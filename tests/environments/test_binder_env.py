"""The notebooks as Binder and Colab run them: a fresh environment, no book tools.

A new virtual environment is created from ``binder/requirements.txt`` alone, in
a copy of the repository's tracked files (as repo2docker sees a clone). Then

* every chapter runs top to bottom with ``chapters/`` as its working directory
  (Binder), and
* every chapter, copied alone into an empty folder, runs top to bottom (Colab
  opens one notebook with nothing around it);

and the environment is checked to hold none of the build and test tools, so a
notebook that imported myst-nb, Sphinx or pytest would fail here.

Slow (installing takes a minute or two); ``make test`` runs it as its own stage.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
BUILD_AND_TEST_TOOLS = ["myst_nb", "jupyter_book", "sphinx", "playwright", "pytest", "ruff",
                        "nbval", "hypothesis"]

RUNNER = textwrap.dedent("""
    import sys
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    path = Path(sys.argv[1])
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors, errors
    print("ran", path.name, len(nb.cells), "cells")
""")


def _clean_env() -> dict[str, str]:
    """This process's environment without what would leak our .venv or test set-up."""
    return {k: v for k, v in os.environ.items()
            if k not in ("VIRTUAL_ENV", "PYTHONPATH", "MPLBACKEND")}


def _tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                         capture_output=True).stdout.decode()
    return [f for f in out.split("\0") if f]


@pytest.fixture(scope="module")
def binder_env(tmp_path_factory) -> tuple[Path, Path]:
    """(python of the new environment, copy of the repository)."""
    base = tmp_path_factory.mktemp("binder")
    repo = base / "repo"
    for name in _tracked_files():
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = _clean_env()
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "-r", "binder/requirements.txt"], cwd=repo, check=True, env=env)
    return python, repo


def test_binder_environment_has_no_build_or_test_tools(binder_env):
    python, _ = binder_env
    probe = ("import importlib.util, json; print(json.dumps({m: importlib.util.find_spec(m) "
             f"is not None for m in {BUILD_AND_TEST_TOOLS!r}}}))")
    found = json.loads(subprocess.run([str(python), "-c", probe], check=True,
                                      capture_output=True, text=True).stdout)
    assert not any(found.values()), f"installed by binder/requirements.txt: {found}"
    for module in ("attention_lib", "jupyterlab_myst", "ipywidgets", "matplotlib"):
        subprocess.run([str(python), "-c", f"import {module}"], check=True)


def _run(python: Path, notebook: Path) -> str:
    env = _clean_env()
    result = subprocess.run([str(python), "-c", RUNNER, str(notebook)], capture_output=True,
                            text=True, cwd=notebook.parent, env=env)
    assert result.returncode == 0, f"{notebook.name} failed:\n{result.stderr[-4000:]}"
    return result.stdout


@pytest.mark.parametrize("name", [p.name for p in CHAPTERS])
def test_chapter_runs_in_the_binder_environment(binder_env, name):
    python, repo = binder_env
    assert f"ran {name}" in _run(python, repo / "chapters" / name)


@pytest.mark.parametrize("name", [p.name for p in CHAPTERS])
def test_chapter_runs_alone_in_an_empty_folder(binder_env, tmp_path, name):
    python, _ = binder_env
    shutil.copy2(ROOT / "chapters" / name, tmp_path / name)
    assert f"ran {name}" in _run(python, tmp_path / name)
