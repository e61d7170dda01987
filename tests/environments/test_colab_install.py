"""A plain notebook installs the library as Colab runs it, from the website, and passes nbval.

Colab opens a chapter's plain copy (``colab/``) with nothing around it; the copy's first
cell installs ``attention_lib`` from the wheel the website carries (``_ext/site_wheel.py``,
``tools/colab_cell.py``). Here the built site (``_build/html``) is served on 127.0.0.1, and
the cell is pointed at it with ``ATTENTION_BOOK_SITE``. The environment is new and holds
what Colab's runtime has preinstalled, at Colab's versions (numpy, matplotlib, ipywidgets
7, tqdm), plus the kernel and nbval; no attention_lib. Chapter 13's plain copy, alone in an
empty folder, then runs under strict nbval (every stored output must come back, except the
cells tagged ``nbval-ignore-output``): its first cell installs the wheel, the rest trains,
plots and reads the book's stored model from the installed package. Afterwards Colab's
packages must be the versions they were: the library's ranges upgrade none of them.

This is chapter 13's one run in a reader's environment (``test_binder_env.py`` runs the
others, ``test_jupyterlab.py`` chapter 4).
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import reader_env

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
CHAPTER = "13_stack_blocks_into_a_model.ipynb"
# What Colab's runtime comes with (its Python is 3.12; it had numpy 2.0.2, matplotlib
# 3.10.0, ipywidgets 7.7.1 and tqdm 4.67.1 preinstalled).
COLAB_PACKAGES = {"numpy": "2.0.2", "matplotlib": "3.10.0", "ipywidgets": "7.7.1",
                  "tqdm": "4.67.1"}
# The kernel and the test runner, at the versions the book pins (requirements.txt).
TOOLS = ("ipykernel", "nbval", "pytest")

pytestmark = pytest.mark.xdist_group("colab")


def pinned(names: tuple[str, ...]) -> list[str]:
    pins = reader_env.pinned_versions(ROOT / "requirements.txt")
    return [f"{name}=={pins[name]}" for name in names]


def colab_python() -> str:
    """Python 3.12, as on Colab, if this machine has it; else the Python running the tests."""
    found = shutil.which("python3.12")
    if found and subprocess.run([found, "-c", "import venv"], capture_output=True).returncode == 0:
        return found
    return sys.executable


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    """The built website, served on 127.0.0.1 as a static host serves it."""
    if not (SITE / "index.html").exists():
        pytest.fail(f"{SITE} has no built site; run `make book` first")
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    requested: list[str] = []

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        _QuietHandler.requested.append(self.path)


@pytest.fixture(scope="module")
def colab_env(tmp_path_factory) -> Path:
    """A new environment with Colab's preinstalled packages, the kernel and nbval."""
    venv = tmp_path_factory.mktemp("colab") / "venv"
    subprocess.run([colab_python(), "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    *[f"{k}=={v}" for k, v in COLAB_PACKAGES.items()], *pinned(TOOLS)],
                   check=True, env=reader_env.clean_env())
    probe = subprocess.run([str(python), "-c", "import attention_lib"], capture_output=True)
    assert probe.returncode != 0, "attention_lib is in the new environment before the cell ran"
    return python


def installed(python: Path) -> dict[str, str]:
    out = subprocess.run([str(python), "-m", "pip", "list", "--format", "json",
                          "--disable-pip-version-check"], check=True, capture_output=True,
                         text=True).stdout
    return {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(out)}


def test_the_site_carries_the_wheel_the_notebooks_install(site_url):
    cell = json.loads((ROOT / "colab" / CHAPTER).read_text(encoding="utf-8"))["cells"]
    source = "".join(next(c for c in cell if c["cell_type"] == "code")["source"])
    wheel = re.search(r'"/wheels/([^"]+\.whl)"', source).group(1)
    with open(ROOT / "pyproject.toml", "rb") as f:
        version = tomllib.load(f)["project"]["version"]
    assert wheel == f"attention_lib-{version}-py3-none-any.whl"
    assert (SITE / "wheels" / wheel).is_file(), f"the built site has no wheels/{wheel}"


def test_a_plain_notebook_installs_the_wheel_and_passes_nbval(colab_env, site_url, tmp_path,
                                                              request):
    before = installed(colab_env)
    for name, version in COLAB_PACKAGES.items():
        assert before[name] == version
    shutil.copy2(ROOT / "colab" / CHAPTER, tmp_path / CHAPTER)
    workers = getattr(request.config, "workerinput", {}).get("workercount", 1)  # xdist
    env = dict(reader_env.kernel_env(workers), ATTENTION_BOOK_SITE=site_url)
    _QuietHandler.requested.clear()
    result = subprocess.run([str(colab_env), "-m", "pytest", "--nbval", "-p", "no:cacheprovider",
                             "-q", CHAPTER], cwd=tmp_path, env=env, capture_output=True,
                            text=True)
    assert result.returncode == 0, f"{CHAPTER} under nbval:\n{result.stdout[-6000:]}"
    assert re.search(r"\b\d+ passed\b", result.stdout) and " failed" not in result.stdout

    after = installed(colab_env)
    with open(ROOT / "pyproject.toml", "rb") as f:
        assert after["attention-lib"] == tomllib.load(f)["project"]["version"]
    # The notebook's own cell fetched the wheel from the served site...
    assert [p for p in _QuietHandler.requested if p.startswith("/wheels/")], (
        f"the site served no wheel: {_QuietHandler.requested}")
    probe = ("import importlib.metadata as m, json; "
             "print(json.loads(m.distribution('attention_lib').read_text('direct_url.json'))"
             "['url'])")
    url = subprocess.run([str(colab_env), "-c", probe], check=True, capture_output=True,
                         text=True, cwd=tmp_path).stdout.strip()
    assert url.startswith(site_url + "wheels/attention_lib-"), url
    # ...and upgraded none of Colab's packages.
    changed = {n: (v, after.get(n)) for n, v in COLAB_PACKAGES.items() if after.get(n) != v}
    assert not changed, f"installing the library changed Colab's packages: {changed}"
