"""The test stages rely on pytest-xdist's ``--dist loadgroup`` keeping a group of tests in one
worker: the JupyterLab tests share one JupyterLab (chapter 4 must run there once), each page's
website tests one page load. Some pytest/xdist pairs drop the groups silently (xdist 3.8 marks
a test's group in its node id, which pytest 9.2 no longer reads), so this runs a small suite
in two workers and checks where each test ran."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import defaultdict

CONFTEST = """
import pytest

@pytest.hookimpl(tryfirst=True)  # as tests/website/conftest.py adds its groups
def pytest_collection_modifyitems(items):
    for item in items:
        page = getattr(getattr(item, "callspec", None), "params", {}).get("page")
        if page is not None:
            item.add_marker(pytest.mark.xdist_group(page))
"""

# The suite run in two workers: each of its tests asserts that one of the two workers runs
# it and logs which; the assertions about the groups are test_a_group_runs_in_one_worker's,
# over that log.
TESTS = """
import json, os, pytest

def _log(group, i):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    with open(os.environ["RAN_LOG"], "a") as f:
        f.write(json.dumps([group, i, worker]) + "\\n")
    return worker
"""

MARKED = TESTS + """
pytestmark = pytest.mark.xdist_group("lab")

@pytest.mark.parametrize("i", range(6))
def test_marked(i):
    assert _log("lab", i) in ("gw0", "gw1"), "not run by one of the two workers"
"""

BY_PAGE = TESTS + """
@pytest.mark.parametrize("i", range(3))
@pytest.mark.parametrize("page", ["a", "b", "c"])
def test_by_page(page, i):
    assert _log(page, i) in ("gw0", "gw1"), "not run by one of the two workers"

@pytest.mark.parametrize("i", range(6))
def test_free(i):
    assert _log("free", i) in ("gw0", "gw1"), "not run by one of the two workers"
"""


def test_a_group_runs_in_one_worker(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "test_marked.py").write_text(textwrap.dedent(MARKED))
    (tmp_path / "test_by_page.py").write_text(textwrap.dedent(BY_PAGE))
    log = tmp_path / "ran.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
         "-p", "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env={"RAN_LOG": str(log),
                                                           "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "21 passed" in result.stdout, result.stdout[-3000:]
    workers = defaultdict(set)
    for line in log.read_text().splitlines():
        group, _, worker = json.loads(line)
        workers[group].add(worker)
    assert set(workers) == {"lab", "a", "b", "c", "free"}
    split = {g: sorted(w) for g, w in workers.items() if g != "free" and len(w) > 1}
    assert not split, f"groups split over workers: {split}"
