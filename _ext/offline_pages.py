"""Sphinx extension: keep every built page free of remote scripts and styles.

Jupyter Book 1 loads sphinx-thebe on every page: an inline script naming a CDN
copy of thebe, added twice (a console error: "Identifier 'THEBE_JS_URL' has
already been declared"), and a loader. The book runs live code on Binder, Colab
or locally, never through thebe, so both are dropped here. Any other script or
stylesheet that would come from another host is dropped with a warning, so the
strict build (-W) fails instead of shipping a page that needs the network.
"""

from __future__ import annotations

import re

from sphinx.util import logging

logger = logging.getLogger(__name__)
REMOTE = re.compile(r"^(https?:)?//")


def _is_thebe(asset) -> bool:
    body = getattr(asset, "attributes", {}).get("body", "") or ""
    filename = getattr(asset, "filename", None) or str(asset)
    return "THEBE_JS_URL" in body or filename.endswith("sphinx-thebe.js")


def _filter(app, pagename, templatename, context, doctree) -> None:
    for key in ("script_files", "css_files"):
        kept = []
        for asset in context.get(key, []):
            filename = getattr(asset, "filename", None) or str(asset)
            if _is_thebe(asset):
                continue
            if filename and REMOTE.match(str(filename)):
                logger.warning("%s: dropped remote asset %s (the site must work offline)",
                               pagename, filename)
                continue
            kept.append(asset)
        context[key] = kept


def setup(app):
    app.connect("html-page-context", _filter, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
