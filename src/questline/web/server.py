"""The server boundary: every limit a request meets before the application sees it.

``questline serve`` builds its server from ``uvicorn_options`` here, so the limits live
in one place (``ServerLimits``, read from the ``QUESTLINE_SERVER_*`` settings) whichever
server runs the application (docs/reliability.md, "Limits at the server boundary").

uvicorn's httptools parser bounds neither the size of a header nor the time a client
may take to send one: it reads a header of any size whole, and keeps the connection of
a client that sends one byte a minute forever. ``LimitedHttpToolsProtocol`` checks the bytes of
the request head *before* the parser buffers them:

* a request line longer than ``max_request_line_bytes`` or a query string longer than
  ``max_query_bytes``: 414;
* a header line longer than ``max_header_line_bytes`` or a head larger than
  ``max_header_bytes``: 431;
* a head not complete ``header_timeout_seconds`` after its first byte (or after the
  connection opened): 408, and the connection is closed;
* more than ``max_connections`` open connections on this worker: 503 and closed.

Answered by the application (so by any server): the body-read deadline (408, in
``questline.web.middleware.BodyGuardMiddleware``) and the number of requests handled
at once (fast 503, ``ConcurrencyLimitMiddleware`` below).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from questline.config import Settings
from questline.web.edge import Edge, EdgeTable
from questline.web.error_handlers import problem_from
from questline.web.errors import BadRequest, ServiceUnavailable, problem_type_base

PROTOCOL_PATH = "questline.web.server:LimitedHttpToolsProtocol"


@dataclass(frozen=True, slots=True)
class ServerLimits:
    max_request_line_bytes: int
    max_query_bytes: int
    max_header_line_bytes: int
    max_header_bytes: int
    header_timeout_seconds: float
    body_timeout_seconds: float
    max_connections: int
    max_concurrent_requests: int
    keep_alive_seconds: int
    problem_type_base: str = "/problems/"
    """The base of the refusals' problem types: the application's (``problem_type_base``)."""

    @classmethod
    def from_settings(cls, settings: Settings) -> ServerLimits:
        return cls(
            max_request_line_bytes=settings.server_max_request_line_bytes,
            max_query_bytes=settings.server_max_query_bytes,
            max_header_line_bytes=settings.server_max_header_line_bytes,
            max_header_bytes=settings.server_max_header_bytes,
            header_timeout_seconds=settings.server_header_timeout_seconds,
            body_timeout_seconds=settings.server_body_timeout_seconds,
            max_connections=settings.server_max_connections,
            max_concurrent_requests=settings.server_max_concurrent_requests,
            keep_alive_seconds=settings.keep_alive_seconds,
            problem_type_base=problem_type_base(settings.public_url),
        )


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


WORKER_HEALTHCHECK_SECONDS = 60
"""How long a worker process may leave uvicorn's health ping unanswered (``workers`` > 1)."""


def uvicorn_options(settings: Settings, *, host: str, port: int, workers: int) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.run`` for ``questline serve``."""
    limits = ServerLimits.from_settings(settings)
    proxies = _split(settings.trusted_proxies)
    return {
        "app": "questline.app:create_served_app",
        "factory": True,
        "host": host,
        "port": port,
        "workers": workers,
        "access_log": False,
        "log_config": None,
        "http": PROTOCOL_PATH,
        "server_header": False,
        "proxy_headers": bool(proxies),
        "forwarded_allow_ips": proxies or [],
        "timeout_keep_alive": limits.keep_alive_seconds,
        # Open event streams never finish by themselves: cut them on shutdown.
        "timeout_graceful_shutdown": settings.shutdown_grace_seconds,
        # uvicorn's own cap counts connections and running requests together; ours are
        # finer (the protocol counts connections, the middleware requests), this is a
        # backstop above both.
        "limit_concurrency": limits.max_connections + limits.max_concurrent_requests,
        # Only used if someone switches to the h11 parser: bounds its buffer.
        "h11_max_incomplete_event_size": limits.max_header_bytes,
        # With workers, uvicorn kills a worker that leaves a ping unanswered this long and
        # starts another. Its default, 5 s, is shorter than a worker's start (imports,
        # the first connections) on a busy machine, where every new worker would then be
        # killed before it served, forever.
        "timeout_worker_healthcheck": WORKER_HEALTHCHECK_SECONDS,
    }


def granian_options(settings: Settings) -> dict[str, Any]:
    """What granian offers for the same limits (for a deployment that serves with it).

    granian (``HTTP1Settings``) has a header-read timeout and a read-buffer bound (which
    caps the head as a whole, not per line, and answers by closing, not 431), and
    ``backpressure`` (requests per worker; excess waits in the accept queue rather than
    getting a 503). It has no request-line, query or connection cap: those stay with
    the application or a proxy in front. The body deadline and the fast 503 are
    application middleware and hold under any server.
    """
    limits = ServerLimits.from_settings(settings)
    return {
        "http1_settings": {
            "header_read_timeout": int(limits.header_timeout_seconds * 1000),
            "keep_alive": True,
            "max_buffer_size": limits.max_header_bytes,
        },
        "backpressure": limits.max_concurrent_requests,
    }


SERVER_PROBLEM_SLUGS = {408: "request-timeout", 503: "service-unavailable"}
"""The refusals' types where the application has the same one; ``http-<status>`` else
(``questline.web.problems`` explains each)."""


def plain_problem(status: int, title: str, detail: str, type_base: str) -> bytes:
    """A whole HTTP/1.1 response carrying a problem document, closing the connection."""
    slug = SERVER_PROBLEM_SLUGS.get(status, f"http-{status}")
    body = json.dumps(
        {
            "type": type_base + slug,
            "title": title,
            "status": status,
            "detail": detail,
        }
    ).encode()
    head = (
        f"HTTP/1.1 {status} {title}\r\n"
        "content-type: application/problem+json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    ).encode()
    return head + body


Refusal = tuple[int, str, str]
"""A refusal at the boundary: status, title, detail."""


class HeadScan:
    """One connection's request head, counted line by line before the parser sees it.

    Its own slotted object, so that the protocol adds one attribute to uvicorn's 27:
    past about 30 the protocol's instance dict leaves CPython's shared-key layout, and
    eight attributes of its own cost 1.3 KB more a connection — 6 % of an open stream
    (docs/performance.md, "Stream memory")."""

    __slots__ = (
        "head_size",
        "in_head",
        "limits",
        "line_number",
        "line_size",
        "refused",
        "request_line",
        "timer",
    )

    def __init__(self, limits: ServerLimits) -> None:
        self.limits = limits
        self.refused = False
        self.timer: asyncio.TimerHandle | None = None
        self.reset()

    def reset(self) -> None:
        self.in_head = True
        self.head_size = 0
        self.line_size = 0
        self.line_number = 0
        self.request_line = bytearray()

    def scan(self, data: bytes) -> Refusal | None:
        """Count ``data``'s bytes of the head; a refusal, or None (the head ended with
        it: ``in_head`` is False then)."""
        limits = self.limits
        start = 0
        while self.in_head:
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline + 1
            size = end - start
            self.line_size += size
            self.head_size += size
            if self.line_number == 0:
                if len(self.request_line) <= limits.max_request_line_bytes:
                    self.request_line += data[start:end]
                if self.line_size > limits.max_request_line_bytes:
                    return (
                        414,
                        "URI Too Long",
                        f"The request line is longer than {limits.max_request_line_bytes} bytes.",
                    )
            elif self.line_size > limits.max_header_line_bytes:
                return (
                    431,
                    "Request Header Fields Too Large",
                    f"A header line is longer than {limits.max_header_line_bytes} bytes.",
                )
            if self.head_size > limits.max_header_bytes + limits.max_request_line_bytes:
                return (
                    431,
                    "Request Header Fields Too Large",
                    f"The headers are larger than {limits.max_header_bytes} bytes together.",
                )
            if newline < 0:
                return None
            if self.line_number == 0:
                refusal = self._check_query()
                if refusal is not None:
                    return refusal
                self.request_line = bytearray()  # checked: a long-lived stream keeps none
            elif self.line_size <= 2:  # the empty line that ends the head
                self.in_head = False
                return None
            if self.line_number > 0 or self.line_size > 2:
                self.line_number += 1  # (empty lines before a request line are skipped)
            self.line_size = 0
            start = end
        return None

    def _check_query(self) -> Refusal | None:
        parts = bytes(self.request_line).split(b" ")
        target = parts[1] if len(parts) > 1 else b""
        query = target.partition(b"?")[2]
        if len(query) > self.limits.max_query_bytes:
            return (
                414,
                "URI Too Long",
                f"The query string is longer than {self.limits.max_query_bytes} bytes.",
            )
        return None


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the head checked before it is parsed."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._head = HeadScan(_limits_for(config))

    @property
    def limits(self) -> ServerLimits:
        return self._head.limits

    # Connections
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limits.max_connections:
            self._head.refused = True
            self.transport = transport
            transport.write(
                plain_problem(
                    503,
                    "Service Unavailable",
                    "This server has as many connections as it takes; retry shortly.",
                    self.limits.problem_type_base,
                )
            )
            transport.close()
            return
        super().connection_made(transport)
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        if self._head.refused:
            return
        super().connection_lost(exc)

    # The head
    def data_received(self, data: bytes) -> None:
        head = self._head
        if head.refused:
            return
        if head.in_head and data:
            if head.timer is None:
                self._arm_head_timer()
            refusal = head.scan(data)
            if refusal is not None:
                self._refuse(*refusal)
                return
            if not head.in_head:
                self._cancel_head_timer()
        super().data_received(data)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._head.reset()

    # The header-read deadline
    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head.timer = self.loop.call_later(
            self.limits.header_timeout_seconds, self._head_timed_out
        )

    def _cancel_head_timer(self) -> None:
        if self._head.timer is not None:
            self._head.timer.cancel()
            self._head.timer = None

    def _head_timed_out(self) -> None:
        head = self._head
        head.timer = None
        if self.transport is None or self.transport.is_closing() or not head.in_head:
            return
        if head.head_size == 0:
            self.transport.close()  # nothing sent at all: just close
            return
        self._refuse(
            408,
            "Request Timeout",
            f"The request headers did not arrive within {self.limits.header_timeout_seconds:g} s.",
        )

    def _refuse(self, status: int, title: str, detail: str) -> None:
        self._cancel_head_timer()
        self.logger.warning("refused at the server boundary: %s %s", status, detail)
        if not self.transport.is_closing():
            self.transport.write(
                plain_problem(status, title, detail, self.limits.problem_type_base)
            )
            self.transport.close()


def _limits_for(config: Config) -> ServerLimits:
    limits = getattr(config, "questline_limits", None)
    if isinstance(limits, ServerLimits):
        return limits
    limits = ServerLimits.from_settings(Settings())
    config.questline_limits = limits  # type: ignore[attr-defined]
    return limits


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


class AllowedHostsMiddleware:
    """400 for a ``Host`` not in ``QUESTLINE_ALLOWED_HOSTS`` (when that is set), on every
    route but those declaring ``Edge.ANY_HOST`` (the probes: a load balancer's health
    check names no host of the service).
    The event stream is a route like the others (the concurrency limit's exemption list
    is about something else)."""

    def __init__(self, app: ASGIApp, *, hosts: list[str], edge: EdgeTable | None = None) -> None:
        self.app = app
        self.edge = edge or EdgeTable()
        self.hosts = frozenset(h.lower() for h in hosts)

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if scope["type"] != "http" or Edge.ANY_HOST in self.edge.of(scope["path"]):
            return self.app(scope, receive, send)  # a pass-through keeps no frame
        host = ""
        for name, value in scope["headers"]:
            if name == b"host":
                host = value.decode("latin-1").lower()
                break
        name_only = host if host.endswith("]") else host.rsplit(":", 1)[0]
        if host not in self.hosts and name_only not in self.hosts:
            problem = BadRequest("This server does not serve that host name.")
            return problem_from(Request(scope), problem)(scope, receive, send)
        return self.app(scope, receive, send)
