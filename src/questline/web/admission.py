"""Admission: how many requests this worker handles at once, the next ones queued a
moment, the rest refused with a fast 503 (``ConcurrencyLimitMiddleware``). A step of
the application's edge pipeline, so it holds under any server."""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Awaitable

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from questline.web.error_handlers import problem_from
from questline.web.errors import ServiceUnavailable


class Admission:
    """The slots of one worker, shared by every chain of the edge pipeline: at most
    ``limit`` requests at once; the next ``queue`` wait for a slot, first come first
    served, at most ``wait_seconds`` each."""

    def __init__(self, *, limit: int, queue: int = 0, wait_seconds: float = 1.0) -> None:
        self.limit = limit
        self.queue = queue
        self.wait_seconds = wait_seconds
        self.running = 0
        self.waiting: collections.deque[asyncio.Future[None]] = collections.deque()

    def release(self) -> None:
        """A slot is free: to the longest waiting request, else back to the pool."""
        while self.waiting:
            slot = self.waiting.popleft()
            if not slot.done():
                slot.set_result(None)
                return
        self.running -= 1


class ConcurrencyLimitMiddleware:
    """Requests wait for a slot of the worker's ``Admission``; past its queue and wait, a
    503 with ``Retry-After: 1``. Routes declaring ``Edge.NOT_COUNTED`` go without this
    step: the probes, always answered, and event streams, which stay open for long and
    have caps of their own (``QUESTLINE_STREAM_MAX_PER_PROCESS``).

    The queue is what lets a burst of clients (256 connections on a 2-worker pair) be
    served a little later instead of refused: a slot a request leaves goes straight to
    the longest waiting one."""

    def __init__(self, app: ASGIApp, *, admission: Admission) -> None:
        self.app = app
        self.admission = admission

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        admission = self.admission
        if admission.running < admission.limit and not admission.waiting:
            return self._counted(scope, receive, send)
        if len(admission.waiting) < admission.queue:
            return self._queued(scope, receive, send)
        return self._refused(scope, receive, send)

    def _refused(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        problem = ServiceUnavailable(
            f"This server is handling {self.admission.limit} requests at once; retry shortly.",
            headers={"Retry-After": "1"},
        )
        return problem_from(Request(scope), problem)(scope, receive, send)

    async def _counted(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.admission.running += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.admission.release()

    async def _queued(self, scope: Scope, receive: Receive, send: Send) -> None:
        admission = self.admission
        slot: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        admission.waiting.append(slot)
        try:
            async with asyncio.timeout(admission.wait_seconds):
                await slot
        except BaseException as exc:
            if slot.done() and not slot.cancelled():
                admission.release()  # handed over as the wait ended: the next one takes it
            else:
                with contextlib.suppress(ValueError):
                    admission.waiting.remove(slot)
            if not isinstance(exc, TimeoutError):
                raise
            await self._refused(scope, receive, send)
            return
        try:  # the slot was handed over: ``running`` already counts it
            await self.app(scope, receive, send)
        finally:
            admission.release()
