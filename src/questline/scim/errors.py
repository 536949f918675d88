"""SCIM's own error documents (RFC 7644 §3.12) on every ``/scim/v2`` answer.

A directory reads ``{"schemas": [...Error], "status": "409", "scimType": "uniqueness",
"detail": ...}`` as ``application/scim+json``, not the problem documents of the rest of the
API. The SCIM services raise ``scim2_models``' exceptions (each knows its status and
``scimType``), which ``ScimRoute`` renders. Whatever the shared machinery answers under
``/scim/`` before or around the route (401 and 403 of the access check, 404 of an
unknown path, 413 and 415 of the body guard, 429 of the rate limit, 503) is a problem
document; ``ScimErrorMiddleware`` rewrites it into the same SCIM error, so that one rule
(the shared one) decides and the directory still reads its own format.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from scim2_models import Error, SCIMException
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from questline.web.edge import Edge
from questline.web.routing import TransactionalRoute

SCIM_MEDIA_TYPE = "application/scim+json"
SCIM_PREFIX = "/scim/"
PROBLEM_MEDIA_TYPE = "application/problem+json"

SCIM_TYPE_OF_STATUS: dict[int, str] = {
    409: "uniqueness",
}
"""The ``scimType`` of a shared problem, where its status alone says which it is."""


def error_document(status: int, detail: str, scim_type: str | None = None) -> dict[str, Any]:
    return Error(status=status, scim_type=scim_type or None, detail=detail).model_dump(
        mode="json", exclude_none=True, by_alias=True
    )


def error_response(
    status: int, detail: str, scim_type: str | None = None, headers: dict[str, str] | None = None
) -> Response:
    return Response(
        json.dumps(error_document(status, detail, scim_type)),
        status_code=status,
        media_type=SCIM_MEDIA_TYPE,
        headers=headers,
    )


def from_exception(exc: SCIMException) -> Response:
    error = exc.to_error()
    return error_response(error.status or exc.status, exc.detail, error.scim_type)


Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class ScimRoute(TransactionalRoute):
    """A ``TransactionalRoute`` (access, body checks, one transaction, retries) whose
    SCIM exceptions become SCIM error documents (the transaction rolled back first)."""

    edge = Edge.DIRECTORY  # a directory's sync has a rate class of its own

    def get_route_handler(self) -> Handler:
        transactional = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                return await transactional(request)
            except SCIMException as exc:
                return from_exception(exc)

        return handler


def _scim_status_and_type(status: int, problem: dict[str, Any]) -> tuple[int, str | None]:
    if status == 422:
        # Input the shared checks refused (an unknown query parameter, a NUL character):
        # SCIM names no 422; it is a value the request may not carry.
        return 400, "invalidValue"
    if status == 400:
        return 400, "invalidSyntax"
    return status, SCIM_TYPE_OF_STATUS.get(status)


def _rewritten(status: int, body: bytes) -> tuple[int, bytes]:
    try:
        problem = json.loads(body)
        detail = str(problem.get("detail") or problem.get("title") or "Request failed.")
    except (ValueError, AttributeError):
        problem, detail = {}, "Request failed."
    errors = problem.get("errors") if isinstance(problem, dict) else None
    if isinstance(errors, list) and errors:
        named = "; ".join(
            f"{e.get('field')}: {e.get('message')}" for e in errors[:5] if isinstance(e, dict)
        )
        detail = f"{detail} ({named})" if named else detail
    new_status, scim_type = _scim_status_and_type(status, problem)
    return new_status, json.dumps(error_document(new_status, detail, scim_type)).encode()


class ScimErrorMiddleware:
    """Under ``/scim/``: a problem document answered by the shared machinery becomes a
    SCIM error (same status, ``application/scim+json``; 422 becomes 400 invalidValue)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if not scope["path"].startswith(SCIM_PREFIX):
            return self.app(scope, receive, send)  # a pass-through keeps no frame
        return self._rewriting(scope, receive, send)

    async def _rewriting(self, scope: Scope, receive: Receive, send: Send) -> None:
        # HEAD is answered here as the GET it mirrors, without the body: the layers
        # inside would otherwise hand over an empty problem body to rewrite.
        head = scope["method"] == "HEAD"
        if head:
            scope = {**scope, "method": "GET"}
        held: Message | None = None
        chunks: list[bytes] = []

        async def rewrite(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if headers.get("content-type", "").startswith(PROBLEM_MEDIA_TYPE):
                    held = message
                    return
                await send(message)
                return
            if held is None or message["type"] != "http.response.body":
                if head and message["type"] == "http.response.body":
                    message = {**message, "body": b""}
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            status, body = _rewritten(held["status"], b"".join(chunks))
            headers = MutableHeaders(scope=held)
            headers["content-type"] = SCIM_MEDIA_TYPE
            headers["content-length"] = str(len(body))
            await send({**held, "status": status})
            await send({"type": "http.response.body", "body": b"" if head else body})

        await self.app(scope, receive, rewrite)
