"""ASGI middleware: body limits and media types, access logs and metrics."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable

from prometheus_client import Counter, Histogram
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from questline.web.edge import Edge
from questline.web.error_handlers import problem_from
from questline.web.errors import (
    PayloadTooLarge,
    Problem,
    RequestTimeout,
    UnsupportedMediaType,
)
from questline.web.send_wrappers import StatusWatch

access_logger = logging.getLogger("questline.access")

REQUESTS = Counter("questline_http_requests_total", "HTTP requests", ["method", "route", "status"])
LATENCY = Histogram(
    "questline_http_request_duration_seconds",
    "HTTP request duration",
    ["method", "route"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)

JSON_TYPES = ("application/json",)
FORM_TYPE = "application/x-www-form-urlencoded"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def too_large_message(limit: int) -> str:
    """Which limit a body broke, in the units a user thinks in."""
    if limit % (1024 * 1024) == 0:
        size = f"{limit // (1024 * 1024)} MiB"
    elif limit % 1024 == 0:
        size = f"{limit // 1024} KiB"
    else:
        size = f"{limit} bytes"
    return (
        f"The body is larger than the limit of {size} ({limit} bytes) a request may have; "
        "send a smaller document."
    )


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _is_json(media_type: str) -> bool:
    return media_type in JSON_TYPES or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )


class BodyGuardMiddleware:
    """413 for bodies over the limit (declared or streamed), 415 for non-JSON bodies, 408
    for a body that does not arrive within ``body_timeout`` seconds.

    The declared length and media type are checked at once; the body itself is *not*
    read here: it is read when the route asks for it, after authorization
    (``questline.web.routing``), through a ``receive`` that counts its bytes and watches
    the deadline (raising ``PayloadTooLarge`` or ``RequestTimeout``). Routes declaring
    ``Edge.BULK`` also accept ``text/csv`` and get the larger ``bulk_limit``; those
    declaring ``Edge.FORM_BODY`` also accept a form.
    """

    def __init__(
        self,
        app: ASGIApp,
        rules: Edge = Edge.NONE,
        *,
        limit: int,
        bulk_limit: int,
        body_timeout: float = 60,
    ) -> None:
        self.app = app
        self.bulk = Edge.BULK in rules
        self.form = Edge.FORM_BODY in rules
        self.limit = bulk_limit if self.bulk else limit
        self.body_timeout = body_timeout

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if scope["method"] not in BODY_METHODS:
            return self.app(scope, receive, send)  # a pass-through keeps no frame
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        declared = headers.get("content-length")
        has_body = headers.get("transfer-encoding") is not None or (
            declared is not None and declared.strip() not in ("", "0")
        )
        problem: Problem | None = None
        if declared is not None and declared.strip().isdigit() and int(declared) > self.limit:
            problem = PayloadTooLarge(too_large_message(self.limit))
        elif has_body:
            media = _media_type(headers.get("content-type", ""))
            form = self.form and media == FORM_TYPE
            if not (_is_json(media) or form or (self.bulk and media == "text/csv")):
                accepted = "application/json or text/csv" if self.bulk else "application/json"
                problem = UnsupportedMediaType(
                    f"Send the body as {accepted} (got {media or 'no Content-Type'})."
                )
        if problem is not None:
            return problem_from(Request(scope), problem)(scope, receive, send)
        return self.app(scope, _bounded(receive, self.limit, self.body_timeout), send)


def _bounded(receive: Receive, limit: int, timeout: float) -> Receive:
    """``receive`` that refuses more than ``limit`` body bytes (413) and a body still
    incomplete ``timeout`` seconds after it was first asked for (408)."""
    size = 0
    deadline: float | None = None
    finished = False

    async def bounded() -> Message:
        nonlocal size, deadline, finished
        if finished:
            return await receive()
        loop = asyncio.get_running_loop()
        if deadline is None:
            deadline = loop.time() + timeout
        try:
            async with asyncio.timeout_at(deadline):
                message = await receive()
        except TimeoutError:
            finished = True
            raise RequestTimeout(
                f"The body did not arrive within {timeout:g} s; send it faster.",
                headers={"Connection": "close"},
            ) from None
        if message["type"] != "http.request":
            return message
        size += len(message.get("body", b""))
        if size > limit:
            finished = True
            raise PayloadTooLarge(too_large_message(limit), headers={"Connection": "close"})
        if not message.get("more_body", False):
            finished = True
        return message

    return bounded


class AccessLogMiddleware:
    """One log line and the Prometheus metrics per request (never the headers)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        watch = StatusWatch(send)
        try:
            await self.app(scope, receive, watch)
        finally:
            elapsed = time.perf_counter() - started
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            method = scope["method"]
            status = watch.status or 500  # none started: the server answers 500
            REQUESTS.labels(method, template, str(status)).inc()
            LATENCY.labels(method, template).observe(elapsed)
            access_logger.info(
                "%s %s %s",
                method,
                template,
                status,
                extra={
                    "method": method,
                    "path": scope["path"],
                    "route": template,
                    "status": status,
                    "duration_ms": round(elapsed * 1000, 2),
                },
            )
