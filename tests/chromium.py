"""The system Chromium that every browser test drives, found once.

Playwright drives Debian's ``/usr/bin/chromium`` (it downloads no browser of
its own). Without Chromium the browser tests skip and say how to install it;
with ``REQUIRE_BROWSER=1`` (set by ``.ci/run``) a missing Chromium is an error,
so in CI they cannot skip.
"""

from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]

if CHROMIUM is None and os.environ.get("REQUIRE_BROWSER"):
    raise RuntimeError("REQUIRE_BROWSER is set but no Chromium was found "
                       "(apt-get install -y chromium)")

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium found: install it with `apt-get install -y chromium` "
    "(.ci/run does) to run the browser tests",
)
