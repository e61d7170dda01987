"""Collapse in JupyterLab what the website hides: write cell metadata from cell tags.

    python tools/lab_visibility.py            # every chapter
    python tools/lab_visibility.py chapters/04_*.ipynb

The website reads the cell tags (``remove-input``, ``hide-input``, ``hide-cell``) and
sphinx-exercise's gated solutions; JupyterLab reads neither, but it collapses a cell's
code or output when ``metadata.jupyter.source_hidden`` / ``outputs_hidden`` is set. This
writes those two flags so that a reader in JupyterLab, on Binder or after a download meets
the same page: bookkeeping and plotting code collapsed, "going deeper"
code collapsed with its output, and an exercise's worked solution (code and output)
collapsed until the reader clicks it open. ``tests/test_book_layout.py`` checks that every
chapter is up to date.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def in_solutions(cells: list[dict]) -> list[bool]:
    """For each cell, whether it lies between a ``{solution-start}`` cell and its
    ``{solution-end}`` cell (a worked solution the website hides behind a click)."""
    inside: list[bool] = []
    in_solution = False
    for cell in cells:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            if "{solution-start}" in text:
                in_solution = True
            elif "{solution-end}" in text:
                in_solution = False
        inside.append(in_solution)
    return inside


def expected_flags(cells: list[dict]) -> list[dict[str, bool]]:
    """For each cell, the ``metadata.jupyter`` flags it should carry (empty: none)."""
    flags: list[dict[str, bool]] = []
    for cell, in_solution in zip(cells, in_solutions(cells), strict=True):
        if cell["cell_type"] == "markdown":
            flags.append({})
            continue
        tags = set(cell.get("metadata", {}).get("tags", []))
        want: dict[str, bool] = {}
        if tags & {"remove-input", "hide-input", "hide-cell", "remove-cell"}:
            want["source_hidden"] = True
        if in_solution or "hide-cell" in tags:
            want["source_hidden"] = True
            want["outputs_hidden"] = True
        flags.append(want)
    return flags


def apply(path: Path) -> bool:
    """Write the flags into one notebook; True if it changed."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    changed = False
    for cell, want in zip(nb["cells"], expected_flags(nb["cells"]), strict=True):
        meta = cell.setdefault("metadata", {})
        have = {k: v for k, v in meta.get("jupyter", {}).items()
                if k in ("source_hidden", "outputs_hidden")}
        if have != want:
            jupyter = {k: v for k, v in meta.get("jupyter", {}).items()
                       if k not in ("source_hidden", "outputs_hidden")}
            jupyter.update(want)
            if jupyter:
                meta["jupyter"] = jupyter
            else:
                meta.pop("jupyter", None)
            changed = True
    if changed:
        path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    return changed


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "chapters").glob("*.ipynb"))
    for path in paths:
        if apply(path):
            print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
