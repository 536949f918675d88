"""A dispatcher's pass loop stops when it is told to, whatever else happens in that tick."""

from __future__ import annotations

import asyncio
import logging

import pytest

from questline.outbound.loop import PassLoop

pytestmark = pytest.mark.anyio


async def _idle_loop() -> tuple[PassLoop, list[int]]:
    passes: list[int] = []

    async def run_once() -> bool:
        passes.append(1)
        return False

    loop = PassLoop(
        name="test-loop",
        run_once=run_once,
        poll_seconds=3600,
        lock_path=None,
        logger=logging.getLogger("test"),
    )
    loop.start()
    # The first pass runs, then the loop waits for a wake-up.
    for _ in range(10):
        await asyncio.sleep(0)
    assert passes == [1]
    return loop, passes


async def test_a_wake_up_in_the_same_tick_as_stop_does_not_swallow_the_stop() -> None:
    """A commit's wake-up and the shutdown's cancellation arriving together: on 3.11,
    ``asyncio.wait_for`` returns the wake-up's result and drops the cancellation, the loop
    runs on, and ``stop()`` (the application's lifespan shutdown) never returns."""
    loop, passes = await _idle_loop()
    loop.wake()
    stopping = asyncio.create_task(loop.stop())
    # A bounded number of loop iterations, not a time: the cancellation needs a few.
    for _ in range(50):
        if stopping.done():
            break
        await asyncio.sleep(0)
    assert stopping.done(), "stop() is still waiting for a loop that ignored its cancellation"
    await stopping
    assert len(passes) == 1


async def test_stop_while_idle_ends_the_loop() -> None:
    loop, passes = await _idle_loop()
    await loop.stop()
    loop.wake()
    await asyncio.sleep(0)
    assert len(passes) == 1
