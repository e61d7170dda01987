"""Cross-page references that read the same in JupyterLab as on the website.

    python tools/lab_links.py            # rewrite every chapter
    python tools/lab_links.py chapters/04_*.ipynb
    python tools/lab_links.py --check    # list what is left, exit 1 if anything

jupyterlab-myst renders a notebook on its own: a role that points to another page
(``{eq}`` of an equation of notation.md, ``{ref}`` of another page's label, ``{doc}``) and
a citation (the bibliography is another page) show as bare keys there. This rewrites them
as Markdown links to the website (the address of ``tools/plain_notebooks.site_url``), with
the text the website shows, which read the same in JupyterLab, on the website, on GitHub
and in the plain copies:

- ``{eq}`eq-attention``` (notation.md)  ->  ``[(3)](<site>notation.html#equation-eq-attention)``
- ``{ref}`sec-x``` of another chapter  ->  ``[<section title>](<site>chapters/...html#sec-x)``
- ``{doc}`../notation```  ->  ``[Notation](<site>notation.html)``
- ``{cite}`vaswani2017attention```  ->
  ``([Vaswani et al., 2017](<site>references.html#cite-vaswani2017attention))``; the
  references page lists every entry (``:all:``), so no entry is lost.

References within a chapter (``{eq}`` and ``{ref}`` of its own labels) stay roles: the
website numbers and links them, and they never leave the page.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _plain():
    spec = importlib.util.spec_from_file_location(
        "plain_notebooks", Path(__file__).with_name("plain_notebooks.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("plain_notebooks", module)
    spec.loader.exec_module(module)
    return sys.modules["plain_notebooks"]


plain = _plain()
CROSS_PAGE_ROLES = ("eq", "ref", "numref", "doc", "cite", "cite:p", "cite:t")


def _target_doc(name: str, text: str, page) -> str | None:
    """The page a role points to (None for a citation, which always leaves the page)."""
    if name.startswith("cite"):
        return None
    if name == "doc":
        return plain._resolve_doc(plain._split_ref(text)[1], page)
    label = plain._split_ref(text)[1]
    if label not in page.book.labels:
        raise page.fail(f"a {{{name}}} to a label that no page defines", label)
    return page.book.labels[label][0]


def cross_page_roles(text: str, docname: str, book) -> list[str]:
    """The roles of a markdown text that point to another page, or cite."""
    page = plain.Page(book=book, docname=docname, values={})
    found = []
    for match in plain.ROLE.finditer(text):
        name, body = match.group(1), match.group(2)
        if name in CROSS_PAGE_ROLES and _target_doc(name, body, page) != docname:
            found.append(match.group(0))
    return found


def convert_text(text: str, docname: str, book) -> str:
    """``text`` with every cross-page role and citation replaced by a website link."""
    page = plain.Page(book=book, docname=docname, values={})

    def replace(match: re.Match) -> str:
        name, body = match.group(1), match.group(2)
        if name not in CROSS_PAGE_ROLES or _target_doc(name, body, page) == docname:
            return match.group(0)
        return plain._role(name, body, page)

    return plain.ROLE.sub(replace, text)


def _split_source(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def apply(path: Path, docname: str, book) -> bool:
    """Rewrite one chapter's markdown cells; True if it changed."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    changed = False
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        new = convert_text(text, docname, book)
        if new != text:
            cell["source"] = _split_source(new)
            changed = True
    if changed:
        path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    return changed


def main(argv: list[str], root: Path = ROOT) -> int:
    book = plain.load_book(root)
    wanted = {Path(a).resolve() for a in argv if not a.startswith("--")}
    left = 0
    for docname, path in plain.chapters(root):
        if wanted and path.resolve() not in wanted:
            continue
        if "--check" in argv:
            nb = json.loads(path.read_text(encoding="utf-8"))
            roles = [r for c in nb["cells"] if c["cell_type"] == "markdown"
                     for r in cross_page_roles("".join(c["source"]), docname, book)]
            if roles:
                left += len(roles)
                print(f"{path.relative_to(root)}: {len(roles)} cross-page roles, "
                      f"e.g. {roles[0]}")
        elif apply(path, docname, book):
            print(f"updated {path.relative_to(root)}")
    return 1 if left else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except plain.PlainError as error:
        sys.exit(f"lab_links: {error}")
