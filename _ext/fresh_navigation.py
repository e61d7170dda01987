"""Sphinx extension: when any page is re-read, write every page again.

Each page's sidebar lists every title of the book. Sphinx rewrites only the
pages it re-read, so after a title changes the other pages would show the old
one. Re-reading every page (``--all``) would fix that, but notebooks execute
while they are read (``execute_notebooks: inline``, which the ``{eval}`` role
needs), so it would run every notebook again. Writing is cheap: this asks
Sphinx to write all pages whenever at least one was read, and nothing when the
build had nothing to do.
"""

from __future__ import annotations


def _remember_read(app, env, docnames) -> None:
    app._pages_read_this_build = set(docnames)


def _all_pages_if_any_was_read(app, env):
    if getattr(app, "_pages_read_this_build", None):
        return sorted(env.found_docs)
    return []


def setup(app):
    app.connect("env-before-read-docs", _remember_read)
    app.connect("env-get-updated", _all_pages_if_any_was_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
