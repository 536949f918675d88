"""The newest version this process knows per organization, and waiting for a newer one."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.05
"""While anyone waits on an organization, its version source is asked this often (a
change committed by another process is noticed within it even where no notification
arrives, e.g. on SQLite)."""


class Changes:
    """Versions only grow: ``advance`` keeps the larger of what it knew and what it is told.

    Waiting costs nothing per waiter while nothing changes: one poller of the process asks
    the version source every ``POLL_SECONDS`` once for each organization someone waits on
    (not once per waiter: thousands of open event streams of a hundred organizations are a
    hundred questions a tick), and wakes that organization's waiters when it advanced. A
    commit in this process or a notification wakes them at once, through ``advance``.
    """

    def __init__(self, current: Callable[[uuid.UUID], Awaitable[int | None]]) -> None:
        self._current = current
        self._versions: dict[uuid.UUID, int] = {}
        self._events: dict[uuid.UUID, asyncio.Event] = {}
        self._watched: Counter[uuid.UUID] = Counter()
        self._poller: asyncio.Task[None] | None = None

    def known(self, organization_id: uuid.UUID) -> int | None:
        return self._versions.get(organization_id)

    def advance(self, organization_id: uuid.UUID, version: int) -> int:
        """Record that ``version`` is committed; returns the newest version known."""
        known = self._versions.get(organization_id)
        if known is not None and known >= version:
            return known
        self._versions[organization_id] = version
        event = self._events.pop(organization_id, None)
        if event is not None:
            event.set()
        return version

    def forget_all(self) -> None:
        """Every organization changed (a global discipline): ask the source again."""
        self._versions.clear()
        events, self._events = self._events, {}
        for event in events.values():
            event.set()

    @property
    def watched(self) -> int:
        """Organizations someone waits on (what each poll asks about)."""
        return len(self._watched)

    async def wait(self, org_id: uuid.UUID, after_version: int, timeout: float) -> int:  # noqa: ASYNC109
        """The organization's newest version once it is past ``after_version``, or the
        version known when ``timeout`` seconds have passed (what SSE streams wait on)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout)
        version = await self._current(org_id)
        current = version if version is not None else after_version
        if current > after_version or deadline <= loop.time():
            return current
        self._watch(org_id)
        try:
            while True:
                known = self._versions.get(org_id)
                if known is not None and known > after_version:
                    return known
                left = deadline - loop.time()
                if left <= 0:
                    version = await self._current(org_id)
                    return version if version is not None else after_version
                event = self._events.setdefault(org_id, asyncio.Event())
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(left):
                        await event.wait()
        finally:
            self._unwatch(org_id)

    def _watch(self, org_id: uuid.UUID) -> None:
        self._watched[org_id] += 1
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll())

    def _unwatch(self, org_id: uuid.UUID) -> None:
        self._watched[org_id] -= 1
        if self._watched[org_id] <= 0:
            del self._watched[org_id]

    async def _poll(self) -> None:
        """Ask the source about every watched organization each ``POLL_SECONDS``, while
        any is watched; a failing source is logged and asked again next tick (waiters
        reach their own timeouts meanwhile and ask it themselves)."""
        while self._watched:
            await asyncio.sleep(POLL_SECONDS)
            for org_id in list(self._watched):
                try:
                    version = await self._current(org_id)
                except Exception:
                    logger.warning("version poll failed", exc_info=True)
                    break
                if version is not None:
                    self.advance(org_id, version)
