from __future__ import annotations

import re
from pathlib import Path

import pytest

HTML = Path(__file__).resolve().parents[2] / "_build" / "html"


@pytest.fixture(scope="session")
def html_root() -> Path:
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML} has no built site; run `make book` first")
    return HTML


def toc_pages() -> list[str]:
    """The root page and every file of _toc.yml, as paths without suffix."""
    toc = (HTML.parents[1] / "_toc.yml").read_text()
    root = re.search(r"^root:\s*(\S+)", toc, flags=re.M).group(1)
    return [root] + re.findall(r"^\s*-?\s*file:\s*(\S+)\s*$", toc, flags=re.M)


# Pages whose tests take longest (the API page's whole-page accessibility check alone takes
# about a minute and a half on 2 cores): their tests go first, so that they run beside the
# other pages' instead of finishing alone at the end while the other worker waits.
FIRST_PAGES = ("api", "api_models")


def _page(item) -> str | None:
    params = getattr(getattr(item, "callspec", None), "params", {})
    page = params.get("visit") or params.get("phone_visit") or params.get("name")
    return None if page is None else str(page)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups from the marks
def pytest_collection_modifyitems(items) -> None:
    """With pytest-xdist's --dist loadgroup, every test of one page (on the desktop and on
    the phone) runs in the same worker, so each worker loads a page once per browser.
    xdist hands the groups out in the order of the items: the longest pages come first."""
    for item in items:
        page = _page(item)
        if page is not None:
            item.add_marker(pytest.mark.xdist_group(page))
    items.sort(key=lambda item: _page(item) not in FIRST_PAGES)  # stable: the rest keep order
