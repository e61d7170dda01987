"""Execute chapter notebooks in place and store their outputs.

    python tools/execute_notebooks.py chapters/04_*.ipynb   # some
    python tools/execute_notebooks.py                       # all

Each notebook runs with chapters/ as its working directory, as on the website
and under nbval; the stored outputs are what GitHub, Colab and Binder show
before a reader runs anything, and what nbval compares against.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def execute(path: Path, timeout: int = 600) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(nb, path)


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "chapters").glob("*.ipynb"))
    for path in paths:
        print(f"executing {path}", flush=True)
        execute(path.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
