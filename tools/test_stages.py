"""``make test``: every stage in order, timed, with a count of each chapter's runs.

    python tools/test_stages.py        # what `make test` runs

The stages are make targets (see the Makefile): lint, unit, book (the strict build, which
is each chapter's one run in the book's environment), executed (that run compared with the
stored outputs and the plain copies, tests/book), site, reader (each chapter alone in an
empty folder, in a fresh environment made from binder/requirements.txt; chapter 4 in that
environment's JupyterLab, as a reader runs it). The reader's environment is made in the
background from the start (``make reader-env``), while the other stages run. The first
stage that fails stops the run; the times so far are printed all the same.

Counting the runs: every IPython kernel that any stage starts (the build's, JupyterLab's,
the reader environment's) reads the startup file written here into the IPYTHONDIR this run
sets, which appends the kernel's start and a hash of each cell it runs to a log. A kernel
that ran every code cell of a chapter ran that chapter. At the end the runs of each chapter
are printed by stage, and the run fails if a chapter ran more than once in a stage (or if
the count missed a chapter's run in the reader stage, which runs every chapter).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_DIR = ROOT / "_build" / "test-run"
IPYTHONDIR = RUN_DIR / "ipython"
RUN_LOG = RUN_DIR / "kernels.jsonl"
READER_ENV = ROOT / "_build" / "reader-env"
STAGES = [("lint", "lint"), ("unit", "unit"), ("book", "book"), ("executed", "executed-tests"),
          ("site", "site-tests"), ("reader", "env-tests")]
MOST_RUNS_PER_STAGE = 1

STARTUP = '''\
# Written by tools/test_stages.py: logs this kernel's start and each cell it runs.
def _log_notebook_runs():
    import hashlib, json, os, sys, time
    path = os.environ.get("NOTEBOOK_RUN_LOG")
    shell = get_ipython()
    if not path or shell is None:
        return
    base = {"pid": os.getpid(), "stage": os.environ.get("BOOK_TEST_STAGE", ""),
            "python": sys.prefix}

    def write(record):
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps(dict(base, **record)) + "\\n")

    def cell(info):
        source = info.raw_cell or ""
        if source.strip():
            write({"event": "cell", "sha": hashlib.sha1(source.encode()).hexdigest()})

    write({"event": "start", "time": time.time()})
    shell.events.register("pre_run_cell", cell)


_log_notebook_runs()
del _log_notebook_runs
'''


def cell_hash(source: str) -> str:
    return hashlib.sha1(source.encode()).hexdigest()


def _code_hashes(path: Path) -> set[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return {cell_hash("".join(c["source"])) for c in nb["cells"]
            if c["cell_type"] == "code" and "".join(c["source"]).strip()}


def chapter_cells(root: Path = ROOT) -> dict[str, set[str]]:
    """The hashes of each chapter's non-empty code cells that its plain copy (colab/) keeps
    too: a kernel that ran either one ran all of these (one chapter's run in the reader stage
    is its plain copy's, installed as on Colab)."""
    cells = {}
    for path in sorted((root / "chapters").glob("*.ipynb")):
        cells[path.stem] = _code_hashes(path)
        copy = root / "colab" / path.name
        if copy.exists():
            cells[path.stem] &= _code_hashes(copy)
    return cells


def count_runs(log_lines: list[str], chapters: dict[str, set[str]]) -> tuple[Counter, Counter]:
    """(runs, kernels): runs[(chapter, stage)] counts the kernels that ran every code cell of
    the chapter (a kernel that ran all of two chapters counts for the larger);
    kernels[stage] counts the kernels started."""
    ran: dict[int, set[str]] = defaultdict(set)
    stage_of: dict[int, str] = {}
    kernels: Counter = Counter()
    for line in log_lines:
        record = json.loads(line)
        pid = record["pid"]
        stage_of.setdefault(pid, record["stage"])
        if record["event"] == "start":
            kernels[record["stage"]] += 1
        else:
            ran[pid].add(record["sha"])
    runs: Counter = Counter()
    for pid, hashes in ran.items():
        whole = [name for name, cells in chapters.items() if cells and cells <= hashes]
        if whole:
            runs[(max(whole, key=lambda n: len(chapters[n])), stage_of[pid])] += 1
    return runs, kernels


def _prepare_counting() -> dict[str, str]:
    startup = IPYTHONDIR / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-log-notebook-runs.py").write_text(STARTUP, encoding="utf-8")
    RUN_LOG.unlink(missing_ok=True)
    return {"IPYTHONDIR": str(IPYTHONDIR), "NOTEBOOK_RUN_LOG": str(RUN_LOG)}


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _make(target: str, env: dict[str, str]) -> int:
    command = [os.environ.get("MAKE", "make"), "--no-print-directory", target]
    return subprocess.run(command, cwd=ROOT, env=env).returncode


class Background:
    """A make target running beside the stages, its output in a log."""

    def __init__(self, target: str, env: dict[str, str]) -> None:
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        self.log_path = RUN_DIR / f"{target}.log"
        self._log = open(self.log_path, "w", encoding="utf-8")
        self.start = time.perf_counter()
        self.load_start = _load()
        self.process = subprocess.Popen(
            [os.environ.get("MAKE", "make"), "--no-print-directory", target], cwd=ROOT,
            env=env, stdout=self._log, stderr=subprocess.STDOUT)
        self.seconds: float | None = None
        self.load_end = ""

    def wait(self) -> int:
        code = self.process.wait()
        if self.seconds is None:
            self.seconds = time.perf_counter() - self.start
            self.load_end = _load()
        self._log.close()
        return code

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.wait()


def _notebook_seconds() -> dict[str, dict[str, float]]:
    """Seconds per chapter: the build's run (as the build measured it) and the reader's."""
    found: dict[str, dict[str, float]] = defaultdict(dict)
    try:
        build = json.loads((ROOT / "_build" / ".page-seconds.json").read_text())
    except (OSError, ValueError):
        build = {}
    for docname, seconds in build.items():
        if docname.startswith("chapters/"):
            found[docname.split("/", 1)[1]]["book"] = seconds
    try:
        reader = json.loads((RUN_DIR / "seconds-reader.json").read_text())
    except (OSError, ValueError):
        reader = {}
    for key, seconds in reader.items():
        found[key.split(".ipynb")[0]]["reader"] = seconds
    return found


def report(times: list[tuple[str, float, str, str, int]], started: float) -> int:
    """Print the stages' times and the chapters' runs; 1 if a chapter ran too often."""
    print("\n================ make test: time per stage ================")
    print(f"{'stage':<22}{'seconds':>9}  load average (1/5/15 min) at start -> end")
    for name, seconds, load_start, load_end, code in times:
        flag = "" if code == 0 else "   FAILED"
        print(f"{name:<22}{seconds:9.1f}  {load_start} -> {load_end}{flag}")
    print(f"{'all':<22}{time.perf_counter() - started:9.1f}")

    chapters = chapter_cells()
    lines = RUN_LOG.read_text(encoding="utf-8").splitlines() if RUN_LOG.exists() else []
    runs, kernels = count_runs(lines, chapters)
    stages = [s for s, _ in STAGES if any(k[1] == s for k in runs)] or ["book", "reader"]
    seconds = _notebook_seconds()
    print("\n======== runs of each chapter by stage (kernels that ran all its cells) ========")
    print("chapter".ljust(44) + "".join(f"{s:>8}" for s in stages)
          + f"{'all':>6}   seconds (book build, reader env)")
    too_many = []
    for name in chapters:
        counts = [runs.get((name, s), 0) for s in stages]
        times_of = seconds.get(name, {})
        shown = ", ".join(f"{times_of[k]:.1f}" if k in times_of else "-"
                          for k in ("book", "reader"))
        print(name.ljust(44) + "".join(f"{c:>8}" for c in counts) + f"{sum(counts):>6}"
              f"   {shown}")
        too_many += [(name, s, c) for s, c in zip(stages, counts, strict=True)
                     if c > MOST_RUNS_PER_STAGE]
    total = sum(runs.values())
    started_by = ", ".join(f"{stage or 'other'} {n}" for stage, n in sorted(kernels.items()))
    print(f"{total} chapter runs; {sum(kernels.values())} kernels started ({started_by})")
    if too_many:
        print(f"chapters run more than {MOST_RUNS_PER_STAGE} time(s) in one stage: {too_many}")
        return 1
    # The reader stage runs every chapter, so the counting itself is checked on every run.
    if any(name == "reader" and code == 0 for name, _, _, _, code in times):
        missed = [name for name in chapters if runs.get((name, "reader"), 0) != 1]
        if missed:
            print(f"the reader stage passed, yet no kernel was seen running all of {missed}: "
                  "the count above is wrong")
            return 1
    return 0


class Terminated(Exception):
    """The run was told to stop (SIGTERM: a CI job's time is up)."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def main() -> int:
    started = time.perf_counter()
    # Stopped from outside, the run still prints the time of every stage so far.
    signal.signal(signal.SIGTERM, _terminate)
    env = dict(os.environ, **_prepare_counting())
    for key in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(key, None)
    reader_env = Background("reader-env", dict(env, BOOK_TEST_STAGE="reader-env"))
    times = []
    code = 0
    try:
        for name, target in STAGES:
            if target == "env-tests":
                waited = time.perf_counter()
                code = reader_env.wait()
                print(f"\nthe reader environment, made in the background, took "
                      f"{reader_env.seconds:.1f} s (waited {time.perf_counter() - waited:.1f} s)")
                if code:
                    print(reader_env.log_path.read_text(encoding="utf-8")[-4000:])
                    break
            stage_env = dict(env, BOOK_TEST_STAGE=name, READER_ENV=str(READER_ENV),
                             NOTEBOOK_SECONDS_JSON=str(RUN_DIR / f"seconds-{name}.json"))
            # The time so far in the heading: a log cut short still says where it went.
            so_far = ", ".join(f"{t[0]} {t[1]:.0f} s" for t in times)
            print(f"\n================ make test: {name} ({target}), "
                  f"{time.perf_counter() - started:.0f} s in"
                  f"{' (' + so_far + ')' if so_far else ''} ================", flush=True)
            load_start = _load()
            start = time.perf_counter()
            try:
                code = _make(target, stage_env)
            except Terminated:
                times.append((name, time.perf_counter() - start, load_start, _load(), 143))
                print(f"\nmake test was stopped during the {name} stage", flush=True)
                code = 143
                break
            times.append((name, time.perf_counter() - start, load_start, _load(), code))
            if code:
                break
    except Terminated:
        print("\nmake test was stopped", flush=True)
        code = 143
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        reader_env.stop()
    times.insert(0, ("reader-env (beside)", reader_env.seconds or 0.0, reader_env.load_start,
                     reader_env.load_end, reader_env.process.returncode or 0))
    counted = report(times, started)
    passed = sum(1 for t in times[1:] if t[4] == 0)  # a stage not reached has not passed
    failed = len(STAGES) - passed + (1 if counted else 0)  # and the count of runs
    print(f"\nstages: {passed} passed, {failed} failed")
    return code or counted


if __name__ == "__main__":
    sys.exit(main())
