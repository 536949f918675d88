"""A dispatcher's life: passes run on a wake-up (a commit, a finished attempt) or by
polling, one dispatcher of a kind per machine on SQLite (a file lock in the data
directory: SQLite has one write lock, and two passes would only queue behind it).

Two kinds of wake-up: ``wake`` (new work was committed: let more gather for
``COALESCE_SECONDS``, so that a burst of writes is handled in one pass) and ``hurry``
(work is ready now: an attempt ended, its outcome is to be recorded and its slot
filled; the pass starts at once, or right after the one running)."""

from __future__ import annotations

import asyncio
import fcntl
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO

from questline.background import cancel_and_wait

COALESCE_SECONDS = 0.05
"""After a wake-up: how long to let further work gather before a pass."""


class PassLoop:
    def __init__(
        self,
        *,
        name: str,
        run_once: Callable[[], Awaitable[bool]],
        poll_seconds: float,
        lock_path: Path | None,
        logger: logging.Logger,
    ) -> None:
        """``run_once`` returns True when there may be more work right now (the next
        pass starts at once); ``lock_path``: the file lock of SQLite deployments."""
        self.name = name
        self._run_once = run_once
        self._poll_seconds = poll_seconds
        self._lock_path = lock_path
        self._logger = logger
        self._wake = asyncio.Event()
        self._woken = True
        """A ``wake`` (or the poll, or a busy pass) since the last pass started."""
        self.only_hurried = False
        """The running pass was started by ``hurry`` alone (nothing new committed)."""
        self._task: asyncio.Task[None] | None = None
        self._lock_file: IO[bytes] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=self.name)

    def wake(self) -> None:
        self._woken = True
        self._wake.set()

    def hurry(self) -> None:
        self._wake.set()

    def wake_threadsafe(self, loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
        """A listener that wakes this loop from any thread (commit listeners)."""

        def wake() -> None:
            loop.call_soon_threadsafe(self.wake)

        return wake

    async def stop(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None

    async def _run(self) -> None:
        while not self._may_run():  # noqa: ASYNC110 - polling a file lock
            await asyncio.sleep(max(self._poll_seconds, 5))
        while True:
            # Cleared before the pass: a wake-up during the pass brings the next at once.
            self._wake.clear()
            self.only_hurried, self._woken = not self._woken, False
            try:
                busy = await self._run_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                self._logger.exception("%s pass failed", self.name)
                busy = False
            if busy:
                self._woken = True
                continue
            try:
                async with asyncio.timeout(self._poll_seconds):
                    await self._wake.wait()
            except TimeoutError:
                self._woken = True
                continue
            if self._woken:
                await asyncio.sleep(COALESCE_SECONDS)

    def _may_run(self) -> bool:
        if self._lock_path is None or self._lock_file is not None:
            return True
        handle = self._lock_path.open("ab")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._lock_file = handle
        return True
