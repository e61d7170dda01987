"""Wait for a kernel's messages in one-second slices, so that a missed wake-up costs a second.

    import kernel_replies; kernel_replies.wait_in_slices()   # before any notebook runs

nbclient (which the book's build, ``tools/execute_notebooks.py``, ``tools/plain_notebooks.py``
and the reader-environment tests run notebooks with) waits for a cell's reply with a single
poll of the kernel's shell socket, as long as the cell's whole timeout. Now and then, after
a cell that shows ipywidgets sliders, that poll does not wake when the reply arrives and
returns only when the timeout ends, with the reply there all along: a chapter that runs in
35 s took 635 s (the 600 s timeout plus its run) in the reader stage, and a notebook of a
few cells with a ``widgets.interactive`` cell, run again and again with a 10 s timeout,
waited exactly 10 s on that cell in a few runs of twenty. The kernel sits idle meanwhile.

``wait_in_slices`` makes every wait of jupyter_client's asyncio channels (what nbclient
uses) a series of polls of at most ``SLICE`` seconds until the same deadline: a message
is still taken the moment a poll sees it, and ``queue.Empty`` is still raised when the
deadline passes, but a missed wake-up is found at the next slice.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from queue import Empty
from typing import Any

SLICE = 1.0  # seconds

GetMsg = Callable[..., Awaitable[dict[str, Any]]]


def sliced(get_msg: GetMsg, slice_seconds: float = SLICE,
           clock: Callable[[], float] = time.monotonic) -> GetMsg:
    """Wrap a channel's ``async get_msg(self, timeout=None)`` to poll in slices."""

    async def get_msg_in_slices(self: Any, timeout: float | None = None) -> dict[str, Any]:
        deadline = None if timeout is None else clock() + timeout
        while True:
            left = slice_seconds if deadline is None else max(0.0, deadline - clock())
            try:
                return await get_msg(self, timeout=min(slice_seconds, left))
            except Empty:
                if deadline is not None and clock() >= deadline:
                    raise

    get_msg_in_slices.in_slices = True  # type: ignore[attr-defined]
    return get_msg_in_slices


def wait_in_slices() -> None:
    """Make jupyter_client's asyncio channels wait in slices (once; later calls do nothing)."""
    from jupyter_client.channels import AsyncZMQSocketChannel

    if not getattr(AsyncZMQSocketChannel.get_msg, "in_slices", False):
        AsyncZMQSocketChannel.get_msg = sliced(AsyncZMQSocketChannel.get_msg)
