"""The first code cell of every chapter: on Colab it installs attention_lib.

Colab opens one notebook with nothing around it, so the notebook installs the library
itself: the wheel that the website carries (``<site>/wheels/<wheel>``, built by
``_ext/site_wheel.py`` from the same commit as the pages, so a notebook and the library it
installs always agree). The site is the one of ``_config.yml`` (``html: baseurl:``, or the
GitHub Pages site of ``repository: url:``: the one place the URL lives); the environment
variable ``ATTENTION_BOOK_SITE`` points the cell at another copy of the website (a mirror,
or the built site served on 127.0.0.1 by a test) and makes it install anywhere. Without it,
and outside Colab, the cell does nothing. It is removed from the website (``remove-cell``).

    python tools/colab_cell.py          # rewrite the cell in every chapter
    python tools/colab_cell.py --check  # exit 1 if a chapter's cell is stale

After a change of the version in pyproject.toml (the wheel's name), run it, then
``python tools/plain_notebooks.py``, and commit the notebooks.
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


def _config(root: Path) -> dict:
    import yaml

    return yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))


def site_url(root: Path = ROOT) -> str:
    """The website's address, ending in ``/``.

    ``html: baseurl:`` of ``_config.yml`` if it is set, else the GitHub Pages site of
    ``repository: url:`` (``https://github.com/org/repo`` is published at
    ``https://org.github.io/repo/``), so that a fork's notebooks use the fork's site.
    """
    config = _config(root)
    url = (config.get("html") or {}).get("baseurl")
    if not url:
        repo = (config.get("repository") or {}).get("url", "")
        found = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+?)(\.git)?/?", repo)
        if not found:
            raise ValueError("_config.yml has neither html: baseurl: nor a GitHub "
                             f"repository: url: to derive the website from (got {repo!r})")
        url = f"https://{found.group(1).lower()}.github.io/{found.group(2)}/"
    return url.rstrip("/") + "/"


def wheel_name(root: Path = ROOT) -> str:
    """The library's wheel as the website carries it (``_ext/site_wheel.py``)."""
    with open(root / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    return f"{project['name'].replace('-', '_')}-{project['version']}-py3-none-any.whl"


def cell_source(root: Path = ROOT) -> str:
    return (
        "# On Colab, install the book's library first: the wheel the website carries, built\n"
        "# from the same commit as this notebook. Elsewhere this cell does nothing, unless\n"
        "# ATTENTION_BOOK_SITE names another copy of the website to install from.\n"
        "import os\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules or "ATTENTION_BOOK_SITE" in os.environ:\n'
        "    import subprocess\n"
        "\n"
        "    site = os.environ.get(\"ATTENTION_BOOK_SITE\",\n"
        f"                          {json.dumps(site_url(root))})\n"
        f"    wheel = site.rstrip(\"/\") + \"/wheels/{wheel_name(root)}\"\n"
        "    installed = subprocess.run([sys.executable, \"-m\", \"pip\", \"install\",\n"
        "                                \"--quiet\", \"--disable-pip-version-check\",\n"
        "                                f\"attention_lib[plots] @ {wheel}\"],\n"
        "                               capture_output=True, text=True)\n"
        "    if installed.returncode:\n"
        "        raise RuntimeError(f\"pip could not install {wheel}:\\n{installed.stderr}\")"
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
    first = first_code_cell(nb)
    if first is not None and first.get("id") == CELL_ID:
        # Only the source and the tags change: its other metadata (JupyterLab's collapsed
        # state, the last run) stays.
        first["source"] = cell(root)["source"]
        first.setdefault("metadata", {})["tags"] = list(TAGS)
    else:
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
