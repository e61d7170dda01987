"""Links to the book's own website become links within the built site.

A chapter names an equation, section or reference of another page as a Markdown link to
the published website (``tools/lab_links.py`` writes them), because JupyterLab renders
one notebook on its own and would show a role to another page as its bare key. On the
website itself such a link should stay on the site the reader is browsing (a local build,
a fork's site): each reference whose address starts with the website's address
(``tools/plain_notebooks.site_url``) is rewritten as a relative link to that page, and a
link to a page the book does not have is a build warning (an error under ``-W``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)
TOOLS = Path(__file__).resolve().parents[1] / "tools"


def _site_url(srcdir: Path) -> str:
    name = "plain_notebooks"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name].site_url(srcdir)


def _localise(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    site = _site_url(Path(app.srcdir))
    for ref in doctree.findall(nodes.reference):
        uri = ref.get("refuri", "")
        if not uri.startswith(site):
            continue
        path, _, anchor = uri[len(site):].partition("#")
        target = path.removesuffix(".html") or app.config.root_doc
        if target not in app.env.found_docs:
            logger.warning("a link to %s, a page the book does not have", uri,
                           location=(docname, ref.line))
            continue
        local = app.builder.get_relative_uri(docname, target)
        ref["refuri"] = local + (f"#{anchor}" if anchor else "")
        ref["internal"] = True
        ref["classes"] = [c for c in ref.get("classes", []) if c != "external"]


def setup(app: Sphinx) -> dict:
    app.connect("doctree-resolved", _localise)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
