"""Repository-wide pytest hooks: under nbval, print how long each notebook took."""

from __future__ import annotations

from collections import defaultdict

_NOTEBOOK_SECONDS: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    if report.nodeid.endswith(".ipynb") or ".ipynb::" in report.nodeid:
        _NOTEBOOK_SECONDS[report.nodeid.split("::")[0]] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _NOTEBOOK_SECONDS:
        return
    terminalreporter.section("time per notebook (all cells, slowest first)")
    for path, seconds in sorted(_NOTEBOOK_SECONDS.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{seconds:7.1f} s  {path}")
    terminalreporter.write_line(f"{sum(_NOTEBOOK_SECONDS.values()):7.1f} s  in all")
