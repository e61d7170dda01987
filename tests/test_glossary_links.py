"""Linking each glossary term where a chapter first uses it (``_ext/glossary_links.py``)."""

from __future__ import annotations

from docutils import nodes
from docutils.core import publish_doctree
from repo_scripts import load_script


def _module():
    return load_script("glossary_links", "_ext")


TERMS = {"attention": "g.html#term-attention", "attention weight": "g.html#term-aw",
         "residual stream": "g.html#term-rs", "key": "g.html#term-key",
         "rotary position embedding (rope)": "g.html#term-rope", "logit": "g.html#term-logit"}

TEXT = """\
Attention and the residual stream
=================================

The key idea: ``attention weights`` in code are not text. Each row of attention weights
sums to one, and attention weights again.

.. note::
   :class: dropdown

   A residual stream in a fold is skipped.

The residual stream carries the logits; a **key** is defined here, and RoPE turns pairs.
`a residual stream link <https://example.org>`_ stays as it is.
"""


def _links(doctree) -> list[tuple[str, str]]:
    return [(ref.astext(), ref["refuri"]) for ref in doctree.findall(nodes.reference)
            if "glossary-link" in ref.get("classes", [])]


def test_each_term_is_linked_once_where_the_main_text_first_uses_it():
    doctree = publish_doctree(TEXT)
    linked = _module().link_terms(doctree, dict(TERMS))
    assert _links(doctree) == [
        ("attention weights", "g.html#term-aw"),    # the longest term at a place wins
        ("attention", "g.html#term-attention"),     # "attention" alone, later
        ("residual stream", "g.html#term-rs"),      # not the title's, not the fold's
        ("logits", "g.html#term-logit"),            # a plural is the term
        ("key", "g.html#term-key"),                 # an everyday word: only where bold
        ("RoPE", "g.html#term-rope"),               # the short form alone
    ]
    assert sorted(linked) == sorted(TERMS)
    # Nothing else changed: the text reads the same.
    assert "attention weights again" in doctree.astext()
    title = next(iter(doctree.findall(nodes.title)))
    assert not list(title.findall(nodes.reference))


def test_a_term_that_is_never_used_is_not_linked():
    doctree = publish_doctree("Nothing here but a query.\n")
    assert _module().link_terms(doctree, {"logit": "g.html#term-logit"}) == []
    assert not _links(doctree)
