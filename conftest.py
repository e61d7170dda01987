"""Repository-wide pytest hooks.

* ``tests/book`` checks what the build executed (``_build/jupyter_execute``), so it runs after
  the build, when asked for by path (``pytest tests/book``, as ``make test`` does), never as
  part of the unit tests that a bare ``pytest`` runs before anything is built.
* A test marked ``retrains`` trains or measures again what a stored artefact holds (the
  book's model, the induction survey, the benchmarks): it runs with ``--retrain``, as the
  make target that produces the artefact runs it (``make train-model``, ``make
  induction-seeds``, ``make bench-store``), and is deselected otherwise; the unit tests keep
  a cheap replay of each.
* Under nbval, and for the tests that run one chapter each in a reader's environment
  (``tests/environments/...[NN_name.ipynb]``), print how long each notebook took (and write
  it to ``$NOTEBOOK_SECONDS_JSON`` when that is set, for ``make test``'s summary).
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from pathlib import Path

_AFTER_THE_BUILD = Path(__file__).resolve().parent / "tests" / "book"
_NOTEBOOK_SECONDS: dict[str, float] = defaultdict(float)
_PARAMETRIZED = re.compile(
    r"^tests/environments/(?P<test>[^\[]+)\[(?:[^\]]*-)?(?P<notebook>[\w.-]+\.ipynb)\]$")


def pytest_addoption(parser):
    parser.addoption("--retrain", action="store_true", default=False,
                     help="also run the tests marked retrains (they train or measure again "
                          "what a stored artefact holds)")


def pytest_configure(config):
    config.addinivalue_line("markers", "retrains: trains or measures again what a stored "
                                       "artefact holds; runs only with --retrain")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--retrain"):
        return
    kept = [item for item in items if item.get_closest_marker("retrains") is None]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept


def pytest_ignore_collect(collection_path: Path, config):
    if collection_path != _AFTER_THE_BUILD:
        return None
    asked = [Path(config.invocation_params.dir, a.split("::")[0]).resolve()
             for a in config.invocation_params.args if not a.startswith("-")]
    return True if not any(a == _AFTER_THE_BUILD or _AFTER_THE_BUILD in a.parents
                           for a in asked) else None


def _notebook_of(nodeid: str) -> str | None:
    """The notebook a test item runs: nbval's ``path.ipynb::Cell 3``, or a reader's
    environment test parametrized by one, ``tests/environments/x.py::test_runs[01_a.ipynb]``
    (keyed by its test)."""
    if nodeid.endswith(".ipynb") or ".ipynb::" in nodeid:
        return nodeid.split("::")[0]
    found = _PARAMETRIZED.match(nodeid)
    if found:
        return f"{found.group('notebook')}  ({found.group('test').split('::')[-1]})"
    return None


def pytest_runtest_logreport(report):
    notebook = _notebook_of(report.nodeid)
    if notebook:
        _NOTEBOOK_SECONDS[notebook] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _NOTEBOOK_SECONDS:
        return
    terminalreporter.section("time per notebook (all cells, slowest first)")
    for path, seconds in sorted(_NOTEBOOK_SECONDS.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{seconds:7.1f} s  {path}")
    terminalreporter.write_line(f"{sum(_NOTEBOOK_SECONDS.values()):7.1f} s  in all")
    record = os.environ.get("NOTEBOOK_SECONDS_JSON")  # make test's summary reads it
    if record:
        Path(record).parent.mkdir(parents=True, exist_ok=True)
        Path(record).write_text(json.dumps(_NOTEBOOK_SECONDS, indent=1) + "\n",
                                encoding="utf-8")
