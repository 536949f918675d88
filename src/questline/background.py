"""Stopping a background task (an ``asyncio.Task``, not a discipline's task): cancel it,
then wait until it has ended.

A module of its own that imports no package, like ``timeformat``, so that the plumbing
(the outbound loop, the replicas' monitor) and the application's lifespan share it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def cancel_and_wait(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait for its end: its cancellation is what was asked for, so
    it is not raised; anything else it raised on the way out is."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
