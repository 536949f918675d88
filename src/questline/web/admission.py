"""Admission: how many requests this worker handles at once, the next ones queued a
moment, the rest refused with a fast 503 (``ConcurrencyLimitMiddleware``). Application
middleware, so it holds under any server."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Awaitable

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from questline.web.edge import Edge, EdgeTable
from questline.web.error_handlers import problem_from
from questline.web.errors import ServiceUnavailable


class ConcurrencyLimitMiddleware:
    """At most ``limit`` requests handled at once by this worker; the next ``queue``
    wait for a slot, first come first served, at most ``wait_seconds`` each; past that
    a 503 with ``Retry-After: 1``. Routes declaring ``Edge.NOT_COUNTED`` are left out:
    the probes, always answered, and event streams, which stay open for long and have
    caps of their own (``QUESTLINE_STREAM_MAX_PER_PROCESS``).

    The queue is what lets a burst of clients (256 connections on a 2-worker pair) be
    served a little later instead of refused: a slot a request leaves goes straight to
    the longest waiting one."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        limit: int,
        queue: int = 0,
        wait_seconds: float = 1.0,
        edge: EdgeTable | None = None,
    ) -> None:
        self.app = app
        self.edge = edge or EdgeTable()
        self.limit = limit
        self.queue = queue
        self.wait_seconds = wait_seconds
        self.running = 0
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if scope["type"] != "http" or Edge.NOT_COUNTED in self.edge.of(scope["path"]):
            return self.app(scope, receive, send)  # a pass-through keeps no frame
        if self.running < self.limit and not self._waiting:
            return self._counted(scope, receive, send)
        if len(self._waiting) < self.queue:
            return self._queued(scope, receive, send)
        return self._refused(scope, receive, send)

    def _refused(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        problem = ServiceUnavailable(
            f"This server is handling {self.limit} requests at once; retry shortly.",
            headers={"Retry-After": "1"},
        )
        return problem_from(Request(scope), problem)(scope, receive, send)

    async def _counted(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.running += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._release()

    async def _queued(self, scope: Scope, receive: Receive, send: Send) -> None:
        slot: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(slot)
        try:
            async with asyncio.timeout(self.wait_seconds):
                await slot
        except BaseException as exc:
            if slot.done() and not slot.cancelled():
                self._release()  # handed over as the wait ended: the next one takes it
            else:
                with contextlib.suppress(ValueError):
                    self._waiting.remove(slot)
            if not isinstance(exc, TimeoutError):
                raise
            await self._refused(scope, receive, send)
            return
        try:  # the slot was handed over: ``running`` already counts it
            await self.app(scope, receive, send)
        finally:
            self._release()

    def _release(self) -> None:
        """A slot is free: to the longest waiting request, else back to the pool."""
        while self._waiting:
            slot = self._waiting.popleft()
            if not slot.done():
                slot.set_result(None)
                return
        self.running -= 1
