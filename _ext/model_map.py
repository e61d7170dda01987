"""The ``model-map`` directive: the whole model drawn by the library, each box a link.

In a page::

    ```{model-map}
    tokens: chapters/13_stack_blocks_into_a_model
    attention: chapters/06_split_into_heads
    ```

Each line names a part of ``attention_lib.plotting.model_map`` (``MODEL_MAP_PARTS``)
and the document that builds it. At build time the library draws the map and the page
gets it as an inline SVG whose boxes link to those documents (relative links that
Sphinx resolves, so the map follows the pages wherever the site is served). The text
stays text (``svg.fonttype: none``): a reader can select it, a screen reader reads the
links, and the SVG's title says in words what is drawn (``model_map_text``). A part
linked to a document that does not exist is a build warning (an error in the strict
build).
"""

from __future__ import annotations

import io
import re
from html import escape

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)


class model_map_node(nodes.General, nodes.Element):  # noqa: N801 (docutils' convention)
    """The map's place in the doctree; ``links`` maps a part to a docname."""


class ModelMap(SphinxDirective):
    has_content = True

    def run(self) -> list[nodes.Node]:
        from attention_lib.plotting import MODEL_MAP_PARTS

        links: dict[str, str] = {}
        for line in self.content:
            if not line.strip():
                continue
            part, sep, doc = (s.strip() for s in line.partition(":"))
            if not sep or part not in MODEL_MAP_PARTS or not doc:
                raise self.error(f"model-map: {line!r} is not '<part>: <document>' with a "
                                 f"part of {list(MODEL_MAP_PARTS)}")
            links[part] = doc
        node = model_map_node(links=links)
        self.set_source_info(node)
        return [node]


def _check(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for node in doctree.findall(model_map_node):
        for part, doc in node["links"].items():
            if doc not in app.env.all_docs:
                logger.warning(f"model-map: the part {part!r} links to {doc!r}, which is not "
                               "a document of the book", location=node)


def svg(links: dict[str, str]) -> str:
    """The map as an inline ``<svg>`` element, its boxes linked to ``links``' URLs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attention_lib.plotting import model_map, model_map_text

    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "model-map"}):
        ax = model_map(links=links, title="")
        out = io.StringIO()
        ax.figure.savefig(out, format="svg", metadata={"Date": None})
        plt.close(ax.figure)
    text = out.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    # Sized by the page (CSS), not in points: drop the fixed width and height.
    text = re.sub(r'(<svg[^>]*?)\s+width="[^"]*"\s+height="[^"]*"', r"\1", text, count=1)
    title = escape(model_map_text())
    return text.replace(
        "<svg", '<svg class="model-map" role="group" aria-labelledby="model-map-title"', 1
    ).replace(">", f'><title id="model-map-title">{title}</title>', 1)


def _visit_html(self, node: model_map_node) -> None:
    here = self.builder.current_docname
    urls = {part: self.builder.get_relative_uri(here, doc) for part, doc in node["links"].items()}
    self.body.append(f'<figure class="model-map-figure">{svg(urls)}</figure>')
    raise nodes.SkipNode


def _skip(self, node: model_map_node) -> None:
    raise nodes.SkipNode


def setup(app: Sphinx) -> dict:
    app.add_node(model_map_node, html=(_visit_html, None), latex=(_skip, None),
                 text=(_skip, None), man=(_skip, None), texinfo=(_skip, None))
    app.add_directive("model-map", ModelMap)
    app.connect("doctree-resolved", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
