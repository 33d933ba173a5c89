"""The deadline of one model call (providers._within, asyncio.timeout): the timer's
cancellation becomes a TimeoutError, any other cancellation passes through as it came, and
the task is left as it was found (no cancellation counted against it), so what runs next
in it is not cut off."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest

from admiss.providers import _within

needs_uncancel = pytest.mark.skipif(sys.version_info < (3, 11), reason="Python 3.10 bounds calls with wait_for")


@needs_uncancel
def test_work_past_the_deadline_is_a_timeout_and_leaves_the_task_uncancelled():
    async def go():
        with pytest.raises(TimeoutError):
            await _within(0.05, asyncio.sleep(5))
        task = asyncio.current_task()
        assert task.cancelling() == 0
        await asyncio.sleep(0.01)  # the task goes on: no cancellation is left pending
        return "went on"

    assert asyncio.run(asyncio.wait_for(go(), 10)) == "went on"


@needs_uncancel
def test_a_cancellation_from_outside_passes_through_as_a_cancellation():
    async def inner():
        await _within(5, asyncio.sleep(5))

    async def go():
        task = asyncio.ensure_future(inner())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return task.cancelled()

    assert asyncio.run(asyncio.wait_for(go(), 10)) is True


@needs_uncancel
def test_a_cancellation_from_outside_stays_one_when_the_timer_fires_too():
    async def inner():
        try:
            await _within(0.02, asyncio.sleep(5))
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            return "timed out"

    async def go():
        task = asyncio.ensure_future(inner())
        await asyncio.sleep(0)  # the inner task sets its timer
        asyncio.get_running_loop().call_later(0.03, task.cancel)
        # Blocking the loop past both times makes them fire in the same turn, the timer first.
        time.sleep(0.1)
        with pytest.raises(asyncio.CancelledError):
            await task
        return task.cancelled()

    assert asyncio.run(asyncio.wait_for(go(), 10)) is True


def test_work_done_in_time_gives_its_result_and_leaves_no_live_timer():
    async def work():
        await asyncio.sleep(0)
        return 42

    async def go():
        loop = asyncio.get_running_loop()
        assert await _within(30, work()) == 42
        return [h for h in getattr(loop, "_scheduled", []) if not h.cancelled()]

    assert asyncio.run(go()) == []
