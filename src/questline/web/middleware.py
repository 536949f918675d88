"""ASGI middleware: body limits and media types, access logs and metrics."""

from __future__ import annotations

import logging
import time
from typing import Any

from prometheus_client import Counter, Histogram
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from questline.web.errors import PayloadTooLarge, Problem, UnsupportedMediaType, problem_from

access_logger = logging.getLogger("questline.access")

REQUESTS = Counter("questline_http_requests_total", "HTTP requests", ["method", "route", "status"])
LATENCY = Histogram(
    "questline_http_request_duration_seconds",
    "HTTP request duration",
    ["method", "route"],
    buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)

JSON_TYPES = ("application/json",)
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
    """413 for bodies over the limit (declared or streamed), 415 for non-JSON bodies.

    Routes listed in ``csv_paths`` (by suffix) also accept ``text/csv`` and get the
    larger ``bulk_limit``.
    """

    def __init__(
        self, app: ASGIApp, *, limit: int, bulk_limit: int, bulk_suffixes: tuple[str, ...]
    ) -> None:
        self.app = app
        self.limit = limit
        self.bulk_limit = bulk_limit
        self.bulk_suffixes = bulk_suffixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        bulk = scope["path"].rstrip("/").endswith(self.bulk_suffixes)
        limit = self.bulk_limit if bulk else self.limit
        declared = headers.get("content-length")
        has_body = headers.get("transfer-encoding") is not None or (
            declared is not None and declared.strip() not in ("", "0")
        )
        problem: Problem | None = None
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            problem = PayloadTooLarge(too_large_message(limit))
        elif has_body:
            media = _media_type(headers.get("content-type", ""))
            if not (_is_json(media) or (bulk and media == "text/csv")):
                accepted = "application/json or text/csv" if bulk else "application/json"
                problem = UnsupportedMediaType(
                    f"Send the body as {accepted} (got {media or 'no Content-Type'})."
                )
        if problem is None:
            body, too_large = await _read_body(receive, limit)
            if too_large:
                problem = PayloadTooLarge(too_large_message(limit))
        if problem is not None:
            response = problem_from(Request(scope), problem)
            await response(scope, receive, send)
            return
        await self.app(scope, _replaying(body, receive), send)


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The whole body, read up to ``limit`` bytes (a chunked body declares no length)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"", False
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", True
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), False


def _replaying(body: bytes, receive: Receive) -> Receive:
    """Hand the buffered body to the app, then pass on what comes next (disconnects)."""
    sent = False

    async def wrapped() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return wrapped


class AccessLogMiddleware:
    """One log line and the Prometheus metrics per request (never the headers)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status_holder: dict[str, Any] = {"status": 500}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_holder["status"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            elapsed = time.perf_counter() - started
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            method = scope["method"]
            status = status_holder["status"]
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
