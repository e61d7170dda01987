"""Make a reader's environment, as Binder and Colab readers have it, in a folder.

    python tools/reader_env.py DIR      # DIR/repo, DIR/venv; DIR/.ready when done

``DIR/repo`` is a copy of the repository's tracked files (what repo2docker sees in a
clone); ``DIR/venv`` a new virtual environment with ``binder/requirements.txt`` installed
from that copy, and nothing else: no myst-nb, Sphinx, jupyter-book or test tools.
``tests/environments`` runs every chapter in it (``make test`` makes it while the unit
tests run, and passes it on as ``READER_ENV``; alone, the tests make their own).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READY = ".ready"


def clean_env() -> dict[str, str]:
    """This process's environment without what would leak our .venv or test set-up."""
    return {k: v for k, v in os.environ.items()
            if k not in ("VIRTUAL_ENV", "PYTHONPATH", "MPLBACKEND")}


def kernel_env(workers: int) -> dict[str, str]:
    """``clean_env()``, and when ``workers`` notebooks run at once, each kernel's BLAS limited
    to its share of the CPUs (see tools/build_book.py: OpenBLAS's threads spin)."""
    env = clean_env()
    if workers > 1:
        threads = str(max(1, (os.cpu_count() or 1) // workers))
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(name, threads)
    return env


def pinned_versions(path: Path) -> dict[str, str]:
    """``name -> version`` of every ``name==version`` line of a requirements file."""
    return dict(re.findall(r"^([A-Za-z][\w.-]*)==(\S+)", Path(path).read_text(encoding="utf-8"),
                           flags=re.M))


def tracked_files(root: Path = ROOT) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True,
                         capture_output=True).stdout.decode()
    return [f for f in out.split("\0") if f and (root / f).is_file()]


def make(base: Path, root: Path = ROOT) -> tuple[Path, Path]:
    """(python of the new environment, copy of the repository) under ``base``."""
    base = Path(base).resolve()
    if base.exists():
        shutil.rmtree(base)
    repo = base / "repo"
    for name in tracked_files(root):
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    # --no-compile: no .pyc written for every module installed (most never run here); a
    # module compiles when first imported. This environment is made beside the other test
    # stages, and the byte-compiling of a whole JupyterLab took CPU from them.
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--no-compile", "-r", "binder/requirements.txt"], cwd=repo, check=True,
                   env=clean_env())
    (base / READY).write_text("binder/requirements.txt installed\n", encoding="utf-8")
    return python, repo


def ready(base: Path) -> tuple[Path, Path] | None:
    """The environment made in ``base`` if it is complete, else None."""
    base = Path(base).resolve()
    python = base / "venv" / "bin" / "python"
    if (base / READY).exists() and python.exists():
        return python, base / "repo"
    return None


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    made_python, _ = make(Path(sys.argv[1]))
    print(f"reader environment: {made_python}")
