"""Each glossary term is linked to its entry where a chapter first uses it.

After references are resolved, every chapter page is read in document order, and the first
occurrence of each term of ``glossary.md`` in its main text (paragraphs and lists; not in a
heading, a link, code, maths or a fold the reader may skip: a dropdown, a solution) becomes
a link to the term's entry. A plural ("heads", "logits") counts as the term. A term whose
everyday meaning is common ("key", "value", "memory", ...) is linked only where the chapter
sets it in bold, which is where the book defines a term. A term written with its short form,
"rotary position embedding (RoPE)", also matches either part alone.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx

GLOSSARY = "glossary"
# Words whose first appearance is often not the term: linked only where set in bold.
EVERYDAY = {"context", "embedding", "gradient", "head", "key", "loss", "memory",
            "projection", "query", "score", "token", "value", "transformer", "language model",
            "encoder", "decoder", "alignment", "saturation", "temperature", "tiling",
            "vocabulary", "memory traffic", "path length", "parameter count", "gpt"}
SKIP_PARENTS = (nodes.title, nodes.reference, nodes.literal, nodes.literal_block, nodes.math,
                nodes.math_block, nodes.raw, nodes.term, nodes.caption, nodes.rubric)


def _forms(term: str) -> list[str]:
    """The strings that name ``term`` in running text."""
    forms = [term]
    short = re.fullmatch(r"(.+?) \(([^)]+)\)", term)
    if short:
        forms += [short.group(1), short.group(2)]
    return forms


def _pattern(forms: list[str]) -> re.Pattern:
    alternatives = sorted({re.escape(f) for f in forms}, key=len, reverse=True)
    return re.compile(r"(?<![\w-])(" + "|".join(alternatives) + r")(?:e?s)?(?![\w-])",
                      re.IGNORECASE)


def _skipped(node: nodes.Node) -> bool:
    """Inside a heading, link, code, maths, or a fold (dropdown, solution)."""
    parent = node.parent
    while parent is not None:
        if isinstance(parent, SKIP_PARENTS):
            return True
        classes = parent.get("classes", []) if isinstance(parent, nodes.Element) else []
        if any("dropdown" in c or c.startswith("solution") for c in classes):
            return True
        parent = parent.parent
    return False


def _in_bold(node: nodes.Node) -> bool:
    return isinstance(node.parent, nodes.strong)


def link_terms(doctree: nodes.document, terms: dict[str, str]) -> list[str]:
    """Link the first use of each term (``term -> URL``) in ``doctree``; the terms linked."""
    todo = {term: (_pattern(_forms(term)), term.lower() in EVERYDAY) for term in terms}
    linked: list[str] = []
    for text in list(doctree.findall(nodes.Text)):
        if not todo or _skipped(text):
            continue
        value = str(text)
        hits = []
        for term, (pattern, bold_only) in todo.items():
            if bold_only and not _in_bold(text):
                continue
            hits += [(match.start(), -len(match.group(0)), term, match)
                     for match in pattern.finditer(value)]
        if not hits:
            continue
        # Left to right, the longest at a place first, no two overlapping.
        pieces: list[nodes.Node] = []
        cursor = 0
        for start, _, term, match in sorted(hits):
            if start < cursor or term not in todo:
                continue
            pieces.append(nodes.Text(value[cursor:start]))
            link = nodes.reference("", "", internal=True, refuri=terms[term],
                                   classes=["glossary-link"], reftitle=f"glossary: {term}")
            link += nodes.Text(match.group(0))
            pieces.append(link)
            cursor = match.end()
            del todo[term]
            linked.append(term)
        if pieces:
            pieces.append(nodes.Text(value[cursor:]))
            text.parent.replace(text, pieces)
    return linked


def _link(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if not docname.startswith("chapters/") or GLOSSARY not in app.env.all_docs:
        return
    objects = app.env.get_domain("std").objects
    terms = {name: app.builder.get_relative_uri(docname, doc) + "#" + anchor
             for (kind, name), (doc, anchor) in objects.items()
             if kind == "term" and doc == GLOSSARY}
    link_terms(doctree, terms)


def setup(app: Sphinx) -> dict:
    app.connect("doctree-resolved", _link)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
