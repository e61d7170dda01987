"""The first code cell of every chapter: on Colab it installs attention_lib.

Colab opens one notebook with nothing around it, so the notebook installs the
library itself, from the repository named in ``_config.yml`` (the one place the
URL lives) at the release tag ``v<version>`` of ``pyproject.toml``. Anywhere
else the cell does nothing. It is removed from the website (``remove-cell``).

    python tools/colab_cell.py          # rewrite the cell in every chapter
    python tools/colab_cell.py --check  # exit 1 if a chapter's cell is stale

After a release (a new version in pyproject.toml, tagged ``v<version>``), run it
and commit the notebooks.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CELL_ID = "colab-install"
TAGS = ["remove-cell"]


def repository_url(root: Path = ROOT) -> str:
    """``repository: url:`` from ``_config.yml`` (read without a YAML parser)."""
    text = (root / "_config.yml").read_text(encoding="utf-8")
    match = re.search(r"^repository:\s*\n(?:[ \t]+.*\n)*?[ \t]+url:\s*(\S+)", text, re.M)
    if not match:
        raise SystemExit("_config.yml has no repository: url:")
    return match.group(1).rstrip("/")


def release_tag(root: Path = ROOT) -> str:
    with open(root / "pyproject.toml", "rb") as f:
        return "v" + tomllib.load(f)["project"]["version"]


def cell_source(root: Path = ROOT) -> str:
    return (
        "# On Colab, install the book's library first (elsewhere this cell does nothing).\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        "    import subprocess\n"
        "\n"
        f"    repository = {json.dumps(repository_url(root))}\n"
        f"    release = {json.dumps(release_tag(root))}\n"
        "    subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", \"--quiet\",\n"
        "                    f\"attention_lib[plots] @ git+{repository}.git@{release}\"],\n"
        "                   check=True)"
    )


def cell(root: Path = ROOT) -> dict:
    return {"cell_type": "code", "execution_count": None, "id": CELL_ID,
            "metadata": {"tags": list(TAGS)}, "outputs": [],
            "source": cell_source(root).splitlines(keepends=True)}


def first_code_cell(nb: dict) -> dict | None:
    return next((c for c in nb["cells"] if c["cell_type"] == "code"), None)


def is_current(nb: dict, root: Path = ROOT) -> bool:
    first = first_code_cell(nb)
    return (first is not None and first.get("id") == CELL_ID
            and "".join(first["source"]) == cell_source(root)
            and first.get("metadata", {}).get("tags") == TAGS)


def write(path: Path, root: Path = ROOT) -> bool:
    nb = json.loads(path.read_text(encoding="utf-8"))
    if is_current(nb, root):
        return False
    nb["cells"] = [c for c in nb["cells"] if c.get("id") != CELL_ID]
    index = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code")
    nb["cells"].insert(index, cell(root))
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return True


def main(argv: list[str]) -> int:
    chapters = sorted((ROOT / "chapters").glob("*.ipynb"))
    if "--check" in argv:
        stale = [p.name for p in chapters
                 if not is_current(json.loads(p.read_text(encoding="utf-8")))]
        for name in stale:
            print(f"{name}: the Colab cell is missing or stale (python tools/colab_cell.py)")
        return 1 if stale else 0
    for path in chapters:
        if write(path):
            print(f"updated {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
