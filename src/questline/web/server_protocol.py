"""The server boundary's protocol: uvicorn's httptools protocol with the request head
checked before it is parsed (``LimitedHttpToolsProtocol``).

uvicorn's httptools parser bounds neither the size of a header nor the time a client
may take to send one: it reads a header of any size whole, and keeps the connection of
a client that sends one byte a minute forever. ``LimitedHttpToolsProtocol`` checks the bytes of
the request head *before* the parser buffers them:

* a request line, query string, header line or head over its limit: 414 or 431
  (``questline.web.head_scan``);
* a head not complete ``header_timeout_seconds`` after its first byte (or after the
  connection opened): 408, and the connection is closed;
* more than ``max_connections`` open connections on this worker: 503 and closed.

Answered by the application (so by any server): the body-read deadline (408, in
``questline.web.middleware.BodyGuardMiddleware``) and the number of requests handled
at once (fast 503, ``questline.web.admission.ConcurrencyLimitMiddleware``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from questline.config import Settings
from questline.web.head_scan import HeadScan
from questline.web.server_limits import ServerLimits

PROTOCOL_PATH = "questline.web.server_protocol:LimitedHttpToolsProtocol"


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
