"""Shared test configuration.

matplotlib must use the non-interactive Agg backend in the tests; the
environment variable is set before anything imports ``matplotlib.pyplot``
(``attention_lib.plotting`` imports it at import time).

Shared here: the autouse fixture that closes every matplotlib figure after
a test. The independent loop references live in ``tests/reference.py``.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# Modest example counts and no per-example deadline: the slow reference is
# pure Python, and the suite must stay well under a minute on 2 cores.
settings.register_profile("attention", max_examples=60, deadline=None)
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "attention"))


@pytest.fixture(autouse=True)
def close_figures():
    """Close the figures a test left open (only if it used matplotlib at all)."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
