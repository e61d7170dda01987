from __future__ import annotations

from pathlib import Path

import pytest

HTML = Path(__file__).resolve().parents[2] / "_build" / "html"


@pytest.fixture(scope="session")
def html_root() -> Path:
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML} has no built site; run `make book` first")
    return HTML
