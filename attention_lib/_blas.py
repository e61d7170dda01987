"""Scoped control of the number of OpenBLAS threads, without extra dependencies.

:func:`attention_lib.tiled_attention` runs query blocks on a small pool of
Python threads (numpy releases the GIL in ``exp``, reductions and ``matmul``).
If every one of those threads also asked OpenBLAS for all cores, the machine
would be oversubscribed: on 2 cores two callers each wanting 2 BLAS threads
spin-wait on OpenBLAS's single worker pool and run several times slower than
one thread alone. So while the pool runs, BLAS is asked for one thread per
call, and its previous setting is restored afterwards.

OpenBLAS keeps one process-wide thread count (``openblas_set_num_threads_local``
is not thread-local in a pthreads build), so the setting is reference-counted:
it is lowered when the first user enters and restored when the last one
leaves. Other BLAS libraries (MKL, Accelerate) are left alone; then
:func:`blas_thread_control_available` is False and callers should not start
their own threads by default.

This module does, for OpenBLAS only, what ``threadpoolctl`` does; ``threadpoolctl``
is not a dependency of the book.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import os
import threading
from collections.abc import Callable, Iterator

import numpy as np

__all__ = ["blas_thread_control_available", "single_threaded_blas"]

_SUFFIXES = ("", "64_")
_PREFIXES = ("openblas", "scipy_openblas")


def _candidate_libraries() -> list[str]:
    """Paths of OpenBLAS libraries already loaded into this process (numpy's first)."""
    paths: list[str] = []
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            for line in maps:
                path = line.split()[-1]
                if "openblas" in os.path.basename(path).lower() and path not in paths:
                    paths.append(path)
    except OSError:  # not Linux: look where numpy's wheels keep their OpenBLAS
        root = os.path.dirname(os.path.abspath(np.__file__))
        for pattern in ("../numpy.libs/*openblas*", ".dylibs/*openblas*"):
            paths.extend(sorted(glob.glob(os.path.join(root, pattern))))
    # numpy's own copy first: another package (torch, scipy) may load a second OpenBLAS.
    return sorted(paths, key=lambda path: "numpy" not in path)


@functools.cache
def _openblas_functions() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """(get_num_threads, set_num_threads) of numpy's OpenBLAS, or None."""
    for path in _candidate_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in _PREFIXES:
            for suffix in _SUFFIXES:
                try:
                    get = getattr(lib, f"{prefix}_get_num_threads{suffix}")
                    set_ = getattr(lib, f"{prefix}_set_num_threads{suffix}")
                except AttributeError:
                    continue
                get.restype, get.argtypes = ctypes.c_int, []
                set_.restype, set_.argtypes = None, [ctypes.c_int]
                return get, set_
    return None


def blas_thread_control_available() -> bool:
    """True when numpy's BLAS is an OpenBLAS whose thread count can be set."""
    return _openblas_functions() is not None


_lock = threading.Lock()
_users = 0
_saved = 0


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Ask OpenBLAS for one thread per call inside the ``with`` block.

    Reference-counted, so nested and concurrent uses restore the original
    setting only when the last one exits. Does nothing when the BLAS is not
    an OpenBLAS that can be controlled.
    """
    global _users, _saved
    functions = _openblas_functions()
    if functions is None:
        yield
        return
    get, set_ = functions
    with _lock:
        if _users == 0:
            _saved = get()
            set_(1)
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                set_(_saved)
