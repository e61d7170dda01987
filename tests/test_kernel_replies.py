"""tools/kernel_replies.py: a kernel's reply is waited for in slices, so a missed wake-up of
the socket poll costs a slice, not the cell's whole timeout."""

from __future__ import annotations

import asyncio
from queue import Empty

import pytest

from tests.repo_scripts import load_script

replies = load_script("kernel_replies")


class MissingPoll:
    """A channel whose every poll misses the wake-up: it returns only when its timeout ends,
    with the message if one arrived by then (as the real poll does), else ``Empty``."""

    def __init__(self, arrives_at: float | None):
        self.now = 0.0
        self.arrives_at = arrives_at
        self.timeouts: list[float | None] = []

    def clock(self) -> float:
        return self.now

    async def get_msg(self, timeout=None):
        self.timeouts.append(timeout)
        if self.arrives_at is not None and self.now >= self.arrives_at:
            return {"msg": "reply"}
        if timeout is None:
            raise AssertionError("a wait without a deadline would never end here")
        self.now += timeout
        if self.arrives_at is not None and self.now >= self.arrives_at:
            return {"msg": "reply"}
        raise Empty


def test_the_plain_poll_waits_out_the_whole_timeout():
    channel = MissingPoll(arrives_at=2.0)
    asyncio.run(channel.get_msg(timeout=600))
    assert channel.now == 600  # the stall the slices remove


@pytest.mark.parametrize("timeout", [600, None])
def test_a_reply_is_taken_within_a_slice_of_its_arrival(timeout):
    channel = MissingPoll(arrives_at=2.5)
    get_msg = replies.sliced(type(channel).get_msg, slice_seconds=1.0, clock=channel.clock)
    assert asyncio.run(get_msg(channel, timeout=timeout)) == {"msg": "reply"}
    assert 2.5 <= channel.now <= 3.5
    assert all(t is not None and t <= 1.0 for t in channel.timeouts)


def test_no_reply_still_raises_empty_at_the_deadline():
    channel = MissingPoll(arrives_at=None)
    get_msg = replies.sliced(type(channel).get_msg, slice_seconds=1.0, clock=channel.clock)
    with pytest.raises(Empty):
        asyncio.run(get_msg(channel, timeout=4.5))
    assert channel.now == pytest.approx(4.5)  # the last slice is cut to the deadline
    assert channel.timeouts == [1.0, 1.0, 1.0, 1.0, pytest.approx(0.5)]


def test_a_zero_timeout_polls_once():
    channel = MissingPoll(arrives_at=None)
    get_msg = replies.sliced(type(channel).get_msg, slice_seconds=1.0, clock=channel.clock)
    with pytest.raises(Empty):
        asyncio.run(get_msg(channel, timeout=0))
    assert channel.timeouts == [0]


def test_wait_in_slices_patches_jupyter_clients_async_channel_once(monkeypatch):
    from jupyter_client.channels import AsyncZMQSocketChannel

    original = AsyncZMQSocketChannel.get_msg
    monkeypatch.setattr(AsyncZMQSocketChannel, "get_msg", original)
    replies.wait_in_slices()
    patched = AsyncZMQSocketChannel.get_msg
    assert patched is not original and patched.in_slices
    replies.wait_in_slices()
    assert AsyncZMQSocketChannel.get_msg is patched  # not wrapped twice
