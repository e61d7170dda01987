"""The Colab launch button opens the chapter's plain-Markdown copy (``colab/``).

sphinx-book-theme builds the Colab link from ``repository.url``, ``path_to_book`` and the
page's path: ``.../blob/<branch>/<book>/chapters/04_x.ipynb``. Colab renders plain
Markdown only, so a chapter's MyST would show raw there; ``tools/plain_notebooks.py``
writes a plain copy of every chapter to ``colab/<same name>.ipynb``, and this rewrites
the button to open that copy when it exists. Binder and the download button keep the
chapter itself.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx

PLAIN_DIR = "colab"


def plain_url(url: str, pagename: str, srcdir: Path) -> str:
    """The Colab URL of ``pagename``'s plain copy, or ``url`` unchanged if it has none."""
    stem = pagename.rsplit("/", 1)[-1]
    if not (srcdir / PLAIN_DIR / f"{stem}.ipynb").exists():
        return url
    new, count = re.subn(rf"{re.escape(pagename)}\.ipynb$", f"{PLAIN_DIR}/{stem}.ipynb", url)
    return new if count == 1 else url


def _rewrite(app: Sphinx, pagename: str, templatename, context: dict, doctree) -> None:
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            if button.get("text") == "Colab" and button.get("url"):
                button["url"] = plain_url(button["url"], pagename, Path(app.srcdir))


def setup(app: Sphinx) -> dict:
    # after sphinx-book-theme's add_launch_buttons (priority 501)
    app.connect("html-page-context", _rewrite, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
