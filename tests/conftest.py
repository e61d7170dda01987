"""Shared test configuration.

matplotlib must use the non-interactive Agg backend in the tests; the
environment variable is set before anything imports ``matplotlib.pyplot``
(``attention_lib.plotting`` imports it at import time).

The independent reference implementations live in the test modules
themselves (``test_softmax.py``, ``test_attention.py``), not here, so that a
reader sees the reference next to the tests that use it.
"""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

from hypothesis import settings  # noqa: E402

# Modest example counts and no per-example deadline: the slow reference is
# pure Python, and the suite must stay well under a minute on 2 cores.
settings.register_profile("attention", max_examples=60, deadline=None)
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "attention"))
