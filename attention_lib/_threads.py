"""Threads for the fast paths: the CPUs available, numpy's BLAS thread count, a pool.

:func:`attention_lib.tiled_attention` runs its query tiles on a thread pool
(numpy releases the GIL in its kernels). Each tile's products are small, so
BLAS threads competing with the pool's threads for the same cores would slow
them down many times over: while the pool runs, numpy's BLAS is asked for one
thread per call (through ``threadpoolctl``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
from threadpoolctl import ThreadpoolController

__all__ = ["available_cpus", "numpy_blas", "one_blas_thread", "run_tasks"]

Task = TypeVar("Task")


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask on Linux)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@functools.cache
def numpy_blas() -> tuple[Any, ...]:
    """threadpoolctl's controllers of the BLAS library numpy uses (usually one OpenBLAS).

    Other BLAS copies in the process (torch's, say) are left alone. Empty when
    numpy's BLAS is not one that threadpoolctl can control.
    """
    libraries = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
    numpy_dir = os.path.dirname(os.path.dirname(os.path.abspath(np.__file__)))
    own = [lib for lib in libraries if os.path.abspath(lib.filepath).startswith(numpy_dir)
           and "numpy" in lib.filepath]
    return tuple(own or libraries)


_blas_lock = threading.Lock()
_blas_users = 0
_blas_saved: list[int] = []


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Ask numpy's BLAS for one thread per call while the worker threads run.

    The BLAS thread count is process-wide: during the ``with`` block every
    thread of the process gets single-threaded BLAS. Concurrent and nested
    uses share one setting; the last to leave restores the previous count,
    unless someone else changed it meanwhile (then their setting stays).
    """
    global _blas_users, _blas_saved
    libraries = numpy_blas()
    with _blas_lock:
        if _blas_users == 0:
            _blas_saved = [lib.get_num_threads() for lib in libraries]
            for lib in libraries:
                lib.set_num_threads(1)
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                for lib, saved in zip(libraries, _blas_saved, strict=True):
                    if lib.get_num_threads() == 1:  # still ours: restore
                        lib.set_num_threads(saved)


def run_tasks(run: Callable[[Task], None], tasks: Iterable[Task], workers: int) -> None:
    """Call ``run(task)`` for every task: in order when ``workers == 1``, else on a pool.

    With more than one worker the tasks go to a pool of ``workers`` threads, in
    order of submission, with numpy's BLAS at one thread (:func:`one_blas_thread`);
    the first exception a task raises is raised here.
    """
    if workers == 1:
        for task in tasks:
            run(task)
        return
    with one_blas_thread(), ThreadPoolExecutor(workers) as pool:
        for _ in pool.map(run, tasks):
            pass
