"""Build the website: ``jupyter-book build`` reading (so executing) several pages at once.

    python tools/build_book.py [--jobs N] [jupyter-book build options] .

The notebooks execute while Sphinx reads them (``execute_notebooks: inline``), so reading is
where a build spends its time. ``jupyter-book build`` reads one page after the other; Sphinx
itself can read in N processes, which this script asks for (``--jobs``, default: the number
of CPUs, at most 2). Sphinx would hand each process a batch of about ten pages in the order
of their names, which puts the long chapters of the later parts into one batch; here each
page is its own task and the pages start longest first, so that the processes finish
together: by the time each notebook took in the previous build (``_build/.page-seconds.json``,
written by ``_ext/execution_record.py``), or, on a first build, by the time its stored
outputs took (nbclient's timestamps in the cells' metadata).

Sphinx reads in parallel only when every extension says it may. Two that jupyter-book loads
say nothing, and are taken here as safe: ``sphinx_multitoc_numbering`` only replaces the
section numbering, which Sphinx runs in the main process once every page is read, and
``sphinx_jupyterbook_latex`` acts on LaTeX builds only.

With N notebooks executing at once, each kernel's BLAS gets the CPUs divided by N (at least
one; ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``, unless they are
set): OpenBLAS's threads wait for work by spinning, and two kernels with a thread per CPU
each slowed a chapter that calls it with small products (text generation, one token at a
time) several times over on two CPUs. The numbers do not depend on it (the chapters print
them at a precision that holds on any CPU, and ``tests/book`` compares them).

Everything else is ``jupyter-book build``: the same options, the same configuration.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Extensions that do not declare whether they are safe in parallel, and are (see above).
SAFE_UNDECLARED = {"sphinx_multitoc_numbering", "sphinx_jupyterbook_latex"}
# Seconds each page took to execute in the last build (written at the end of a build).
TIMES = ROOT / "_build" / ".page-seconds.json"


def _jobs(argv: list[str]) -> tuple[int, list[str]]:
    jobs = min(os.cpu_count() or 1, 2)
    rest = []
    args = iter(argv)
    for arg in args:
        if arg == "--jobs":
            jobs = int(next(args))
        elif arg.startswith("--jobs="):
            jobs = int(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    if jobs < 1:
        raise SystemExit(f"--jobs must be a positive integer, got {jobs}")
    return jobs, rest


def stored_seconds(root: Path = ROOT) -> dict[str, float]:
    """Each chapter's time as its stored outputs record it (the seconds between each code
    cell's input and its reply, added up; nbclient writes them into the cell's metadata when
    ``tools/execute_notebooks.py`` runs it)."""
    seconds = {}
    for path in sorted((root / "chapters").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        total = 0.0
        for cell in cells:
            times = cell.get("metadata", {}).get("execution", {})
            if "iopub.execute_input" in times and "shell.execute_reply" in times:
                total += (_stamp(times["shell.execute_reply"])
                          - _stamp(times["iopub.execute_input"]))
        seconds[f"chapters/{path.stem}"] = total
    return seconds


def _stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def longest_first(docnames: list[str], seconds: dict[str, float]) -> list[str]:
    """The pages from the longest to the shortest (a page without a time last).

    >>> longest_first(["intro", "chapters/01_a", "chapters/02_b"], {"chapters/01_a": 2.0,
    ...                                                            "chapters/02_b": 5.0})
    ['chapters/02_b', 'chapters/01_a', 'intro']
    """
    return sorted(docnames, key=lambda d: (-seconds.get(d, 0.0), d))


def task_order(docnames: list[str], nproc: int, seconds: dict[str, float]) -> list[list[str]]:
    """One page per task, in the order Sphinx must be given them to start them longest first.

    Sphinx (``sphinx.util.parallel.ParallelTasks``) starts the first ``nproc`` tasks at once
    and keeps the others waiting in a dict, from which it takes the last one added each time
    a process is free: so after the first ``nproc``, the tasks go in reverse order.

    >>> task_order(["a", "b", "c", "d"], 2, {"a": 4, "b": 3, "c": 2, "d": 1})
    [['a'], ['b'], ['d'], ['c']]
    """
    ordered = longest_first(docnames, seconds)
    return [[d] for d in ordered[:nproc] + ordered[nproc:][::-1]]


def _declare_safe(extension_class) -> None:
    original = extension_class.__init__

    def __init__(self, name, module, **kwargs):
        original(self, name, module, **kwargs)
        if name in SAFE_UNDECLARED:
            self.parallel_read_safe = self.parallel_write_safe = True

    extension_class.__init__ = __init__


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def share_blas(jobs: int, environ=os.environ) -> None:
    """Give each of ``jobs`` kernels its share of the CPUs for BLAS (unless already set)."""
    if jobs > 1:
        threads = str(max(1, (os.cpu_count() or 1) // jobs))
        for name in BLAS_THREADS:
            environ.setdefault(name, threads)


def main(argv: list[str]) -> int:
    jobs, rest = _jobs(argv)
    share_blas(jobs)  # before anything imports numpy; the kernels inherit it
    from kernel_replies import wait_in_slices  # this script's folder is on sys.path

    wait_in_slices()  # before the build forks: a slider cell's reply could wait 300 s
    import jupyter_book.sphinx
    import sphinx.builders
    import sphinx.extension
    from jupyter_book.cli.main import main as jupyter_book_cli

    _declare_safe(sphinx.extension.Extension)

    seconds = stored_seconds()
    try:
        seconds.update(json.loads(TIMES.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        pass

    def make_chunks(docnames, nproc, maxbatch=10):
        return task_order(list(docnames), nproc, seconds)

    sphinx.builders.make_chunks = make_chunks
    jupyter_book.sphinx.build_sphinx = partial(jupyter_book.sphinx.build_sphinx, jobs=jobs)
    return jupyter_book_cli(["build", *rest], standalone_mode=False) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
