"""Every page's footer names the licences and links to them and to the citation file.

The text and figures are CC BY 4.0, the code MIT (``LICENSE`` says which files each
covers). The links to ``LICENSE`` and ``CITATION.cff`` point into the repository of
``repository: url:`` in ``_config.yml`` (at ``branch:``), the one place the URL is set.
"""

from __future__ import annotations

from html import escape

from sphinx.application import Sphinx
from sphinx.config import Config

CC_BY = "https://creativecommons.org/licenses/by/4.0/"


def footer(repository: str, branch: str) -> str:
    """The footer's HTML for the repository at ``repository`` (on ``branch``)."""
    blob = f"{repository.rstrip('/')}/blob/{branch}"
    return (f'<p class="licence">Text and figures: <a href="{CC_BY}">CC BY 4.0</a>. '
            f'Code: <a href="{escape(blob)}/LICENSE">MIT</a>. '
            f'To cite the book: <a href="{escape(blob)}/CITATION.cff">CITATION.cff</a>.</p>')


def _set_footer(app: Sphinx, config: Config) -> None:
    options = config.html_theme_options
    repository = options.get("repository_url")
    if not repository:
        raise ValueError("_config.yml has no repository: url:, which the footer links to")
    options["extra_footer"] = footer(repository, options.get("repository_branch") or "main")


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _set_footer)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
