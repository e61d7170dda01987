"""The package's names: every submodule's ``__all__``, re-exported once, and nothing else."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import attention_lib as al

ROOT = Path(__file__).resolve().parents[1]
NAMESPACES = {"examples", "training", "plotting"}


def eagerly_imported_modules() -> list[str]:
    """The public submodules a fresh ``import attention_lib`` loads, and whether it loads
    matplotlib or ipywidgets (it should not: those parts are imported on first use)."""
    code = ("import sys, json, attention_lib; print(json.dumps("
            "[sorted(sys.modules), 'matplotlib' in sys.modules or 'ipywidgets' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=ROOT).stdout
    modules, heavy = json.loads(out)
    assert not heavy, "import attention_lib imported matplotlib or ipywidgets"
    return [m for m in modules if re.fullmatch(r"attention_lib\.[a-z]\w*", m)]


def test_all_is_the_union_of_the_submodules_lists():
    modules = [sys.modules[m] for m in eagerly_imported_modules() if m != "attention_lib.examples"]
    assert len(modules) >= 10  # softmax, attention, ..., block: the numpy core
    lacking = [m.__name__ for m in modules if not isinstance(getattr(m, "__all__", None), list)]
    assert not lacking, f"public modules without an __all__ list: {lacking}"
    union = [n for m in modules for n in m.__all__]
    assert len(union) == len(set(union)), "two submodules export the same name"
    assert set(al.__all__) - NAMESPACES == set(union)
    assert len(al.__all__) == len(set(al.__all__))
    for module in modules:
        for name in module.__all__:
            assert getattr(al, name) is getattr(module, name), f"al.{name} is not {module}.{name}"


def test_every_name_resolves_and_star_import_gives_them():
    scope: dict = {}
    exec("from attention_lib import *", scope)  # noqa: S102 - the import a reader may write
    for name in al.__all__:
        assert name in scope and scope[name] is getattr(al, name)
    assert al.examples.cat_sat_on().tokens[0] == "The"
    assert callable(al.plotting.use_book_style)  # a namespace imported on first use


def test_every_name_the_chapters_use_exists():
    used = set()
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                used |= set(re.findall(r"\bal\.([A-Za-z_]\w*)", "".join(cell["source"])))
    assert len(used) > 40
    missing = sorted(n for n in used if not hasattr(al, n))
    assert not missing, f"the chapters use al.{missing}, which attention_lib does not have"


def test_an_unknown_name_is_an_attribute_error():
    try:
        al.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("al.no_such_name did not raise")


def test_every_data_file_is_package_data_of_the_wheel():
    """A file the library reads through importlib.resources must be listed in pyproject's
    package-data, or an installed (non-editable) copy, as Binder and Colab have, lacks it."""
    import fnmatch
    import tomllib

    root = Path(__file__).resolve().parents[1]
    listed = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]
    tracked = subprocess.run(["git", "ls-files", "attention_lib"], cwd=root, text=True,
                             capture_output=True, check=True).stdout.split()
    missing = []
    for path in tracked:
        if path.endswith(".py") or "/data/" not in path and "/assets/" not in path:
            continue
        parts = Path(path).parts
        found = False
        for package, patterns in listed.items():
            depth = len(package.split("."))
            if ".".join(parts[:depth]) != package:
                continue
            inside = "/".join(parts[depth:])
            found |= any(fnmatch.fnmatch(inside, p) for p in patterns)
        if not found:
            missing.append(path)
    assert not missing, f"not in pyproject's package-data: {missing}"
