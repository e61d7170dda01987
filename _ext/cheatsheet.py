"""The ``equation-from`` directive: a chapter's numbered equation, shown again elsewhere.

In a page (the cheat sheet)::

    ```{equation-from} eq-kv-bytes
    ```

shows the display equation labelled ``eq-kv-bytes`` in the chapters or on the notation
page, copied from its source when the book is built, followed by a link to it (its
number, e.g. "(9.3)"). A formula on the cheat sheet is thus the chapter's own: edit the
chapter and the cheat sheet follows. A label found nowhere, or twice, is an error.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

# A MyST display equation with a label: $$ on a line, the TeX (no $$ inside), $$ (label).
LABELLED = re.compile(r"^\$\$\n((?:(?!\$\$).)*?)\n\$\$ \((eq-[\w-]+)\)", re.S | re.M)


def _sources(root: Path) -> list[tuple[str, str]]:
    """(document, markdown) of the notation page and of every chapter's markdown cells."""
    found = [("notation", (root / "notation.md").read_text(encoding="utf-8"))]
    for path in sorted((root / "chapters").glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        text = "\n\n".join("".join(c["source"]) for c in notebook["cells"]
                           if c["cell_type"] == "markdown")
        found.append((f"chapters/{path.stem}", text))
    return found


@cache
def labelled_equations(root: Path) -> dict[str, list[tuple[str, str]]]:
    """label -> [(document, TeX)] for every labelled display equation of the book."""
    equations: dict[str, list[tuple[str, str]]] = {}
    for doc, text in _sources(root):
        for match in LABELLED.finditer(text):
            equations.setdefault(match.group(2), []).append((doc, match.group(1)))
    return equations


class EquationFrom(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        label = self.arguments[0]
        root = Path(self.env.srcdir)
        found = labelled_equations(root).get(label, [])
        if len(found) != 1:
            where = ", ".join(doc for doc, _ in found) or "no chapter"
            raise self.error(f"equation-from: {label!r} is labelled in {where}; expected "
                             "exactly one labelled display equation")
        doc, tex = found[0]
        self.env.note_dependency(str(root / ("notation.md" if doc == "notation"
                                             else f"{doc}.ipynb")))
        lines = ["$$", *tex.splitlines(), "$$", "", f"{{eq}}`{label}`"]
        container = nodes.container(classes=["equation-from"])
        self.state.nested_parse(StringList(lines, source=self.get_source_info()[0]),
                                self.content_offset, container)
        return [container]


def setup(app: Sphinx) -> dict:
    app.add_directive("equation-from", EquationFrom)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
