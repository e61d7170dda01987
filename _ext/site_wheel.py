"""The website carries the library's wheel, built from the same sources as the pages.

Colab opens a chapter's plain copy (``colab/``) with nothing around it, so the copy's first
cell installs ``attention_lib`` itself, from ``<site>/wheels/<name>-<version>-py3-none-any.whl``
(``tools/colab_cell.py`` writes the cell): the file this writes when the build finishes. The
wheel is built from a copy of the package's tracked files (``git ls-files``), never from the
working tree's ``build/`` leftovers, with the build tools already installed
(``--no-build-isolation``: nothing is fetched).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

WHEELS = "wheels"
PACKAGE_FILES = ("pyproject.toml", "README.md", "LICENSE")


def package_sources(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--", "attention_lib", *PACKAGE_FILES],
                         cwd=root, check=True, capture_output=True).stdout.decode()
    files = [f for f in out.split("\0") if f and (root / f).is_file()]
    if not any(f.startswith("attention_lib/") for f in files):
        raise RuntimeError(f"git lists no file of attention_lib/ in {root}")
    return files


def build_wheel(root: Path, out: Path) -> Path:
    """Build the wheel of ``root``'s tracked package files into ``out``; returns its path."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        for name in package_sources(root):
            target = Path(tmp) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, target)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                        "--no-build-isolation", "--disable-pip-version-check",
                        "--wheel-dir", str(out), tmp], check=True, capture_output=True)
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"pip wheel wrote {[p.name for p in wheels]}, not one wheel")
    return wheels[0]


def _build(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        wheel = build_wheel(Path(app.srcdir), Path(app.outdir) / WHEELS)
        logger.info(f"library wheel: {WHEELS}/{wheel.name}")


def setup(app: Sphinx) -> dict:
    app.connect("build-finished", _build)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
