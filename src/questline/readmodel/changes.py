"""The newest version this process knows per organization, and waiting for a newer one."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable

POLL_SECONDS = 0.05
"""``wait`` also asks the version source this often (a change committed by another
process is noticed within it even where no notification arrives, e.g. on SQLite)."""


class Changes:
    """Versions only grow: ``advance`` keeps the larger of what it knew and what it is told."""

    def __init__(self, current: Callable[[uuid.UUID], Awaitable[int | None]]) -> None:
        self._current = current
        self._versions: dict[uuid.UUID, int] = {}
        self._events: dict[uuid.UUID, asyncio.Event] = {}

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

    async def wait(self, org_id: uuid.UUID, after_version: int, timeout: float) -> int:  # noqa: ASYNC109
        """The organization's newest version once it is past ``after_version``, or the
        version known when ``timeout`` seconds have passed (what SSE streams wait on)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout)
        while True:
            version = await self._current(org_id)
            current = version if version is not None else after_version
            left = deadline - loop.time()
            if current > after_version or left <= 0:
                return current
            event = self._events.setdefault(org_id, asyncio.Event())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout=min(left, POLL_SECONDS))
