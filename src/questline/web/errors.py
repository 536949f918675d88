"""Errors as RFC 9457 problem documents (``application/problem+json``).

Services raise a ``Problem`` subclass; the handlers here turn every error, including
validation errors, unknown routes and crashes, into one problem document shape.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from asgi_correlation_id import correlation_id
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger("questline.web.errors")

PROBLEM_MEDIA_TYPE = "application/problem+json"
TYPE_BASE = "https://questline.dev/problems/"
MAX_LISTED_ERRORS = 100
"""A problem document lists at most this many ``errors`` (the first ones) and then gives
their total as ``errorCount``: an 8 MiB file of bad rows made a 156 MiB answer."""


class FieldError(BaseModel):
    field: str
    message: str


class ProblemDocument(BaseModel):
    """The body of every error response."""

    model_config = ConfigDict(populate_by_name=True)

    type: str
    title: str
    status: int
    detail: str
    instance: str
    request_id: str | None = Field(default=None, alias="requestId")
    errors: list[FieldError] | None = None
    error_count: int | None = Field(
        default=None,
        alias="errorCount",
        description="How many problems there were, when more than the listed ones.",
    )


class Problem(Exception):
    """An error that knows its HTTP status and becomes a problem document."""

    status = 500
    slug = "internal-error"
    title = "Internal server error"

    def __init__(
        self,
        detail: str,
        *,
        errors: Sequence[FieldError] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.error_count: int | None = None
        if errors is not None and len(errors) > MAX_LISTED_ERRORS:
            self.error_count = len(errors)
            errors = errors[:MAX_LISTED_ERRORS]
        self.errors = list(errors) if errors is not None else None
        self.headers = dict(headers or {})


class BadRequest(Problem):
    status, slug, title = 400, "malformed-request", "Malformed request"


class Unauthorized(Problem):
    status, slug, title = 401, "unauthorized", "Authentication required"

    def __init__(self, detail: str) -> None:
        super().__init__(detail, headers={"WWW-Authenticate": 'Bearer realm="questline"'})


class Forbidden(Problem):
    status, slug, title = 403, "forbidden", "Not allowed"


class NotFound(Problem):
    status, slug, title = 404, "not-found", "Not found"


class Conflict(Problem):
    status, slug, title = 409, "conflict", "Conflict"


class PreconditionFailed(Problem):
    status, slug, title = 412, "precondition-failed", "Precondition failed"


class RequestTimeout(Problem):
    status, slug, title = 408, "request-timeout", "Request timeout"


class PayloadTooLarge(Problem):
    status, slug, title = 413, "payload-too-large", "Payload too large"


class UnsupportedMediaType(Problem):
    status, slug, title = 415, "unsupported-media-type", "Unsupported media type"


class Unprocessable(Problem):
    status, slug, title = 422, "validation-error", "Invalid input"


class TooManyRequests(Problem):
    status, slug, title = 429, "rate-limited", "Too many requests"


class ServiceUnavailable(Problem):
    status, slug, title = 503, "service-unavailable", "Service unavailable"


def not_found(kind: str) -> NotFound:
    return NotFound(f"No {kind} with this id exists in your organization.")


def field_path(loc: Iterable[str | int]) -> str:
    """Where a validation error is, as a user reads it.

    ``("body", "Levels", 1, "Title")`` → ``Levels[1].Title``;
    ``("body", 3, "name")`` → ``[3].name``.
    """
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "body"


def _type_base(request: Request) -> str:
    """Problem type URIs live on the service (``GET /problems/<slug>`` explains each),
    at its public URL; ``TYPE_BASE`` only where no application state is at hand."""
    state = getattr(getattr(request.scope.get("app"), "state", None), "questline", None)
    settings = getattr(state, "settings", None)
    public_url = getattr(settings, "public_url", None)
    return f"{public_url.rstrip('/')}/problems/" if isinstance(public_url, str) else TYPE_BASE


def problem_response(
    request: Request,
    *,
    status: int,
    slug: str,
    title: str,
    detail: str,
    errors: Sequence[FieldError] | None = None,
    headers: Mapping[str, str] | None = None,
    error_count: int | None = None,
) -> JSONResponse:
    if errors is not None and len(errors) > MAX_LISTED_ERRORS:
        error_count = error_count or len(errors)
        errors = errors[:MAX_LISTED_ERRORS]
    document = ProblemDocument(
        type=_type_base(request) + slug,
        title=title,
        status=status,
        detail=detail,
        instance=request.url.path,
        request_id=correlation_id.get(),
        errors=list(errors) if errors is not None else None,
        error_count=error_count,
    )
    return JSONResponse(
        document.model_dump(by_alias=True, exclude_none=True),
        status_code=status,
        headers=dict(headers or {}),
        media_type=PROBLEM_MEDIA_TYPE,
    )


def problem_from(request: Request, problem: Problem) -> JSONResponse:
    """The problem document of a ``Problem`` (for middleware, outside the handlers)."""
    return problem_response(
        request,
        status=problem.status,
        slug=problem.slug,
        title=problem.title,
        detail=problem.detail,
        errors=problem.errors,
        headers=problem.headers,
        error_count=problem.error_count,
    )


CONTROL_CHARACTERS_PATTERN = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
"""``web.schemas.PRINTABLE``: no control characters but tab and line breaks (PostgreSQL
refuses NUL in text); its refusals get a message a person can read."""


def _validation_message(error: Mapping[str, Any]) -> str:
    if error.get("type") == "extra_forbidden":
        return "Unknown field; it is not part of this request."
    ctx = error.get("ctx")
    if (
        error.get("type") == "string_pattern_mismatch"
        and isinstance(ctx, Mapping)
        and ctx.get("pattern") == CONTROL_CHARACTERS_PATTERN
    ):
        return "Control characters are not accepted (only tab and line breaks, in prose)."
    message = str(error.get("msg", "Invalid value"))
    return message.removeprefix("Value error, ")


def field_errors(raw: Iterable[Mapping[str, Any]]) -> list[FieldError]:
    """Pydantic's error list as ``FieldError`` entries (``[3].name``, ``Levels[1].Title``)."""
    return [FieldError(field=field_path(e["loc"]), message=_validation_message(e)) for e in raw]


async def _handle_problem(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, Problem)
    return problem_from(request, exc)


def validation_problem(raw: Sequence[Mapping[str, Any]]) -> Problem:
    """The problem for pydantic's errors: 400 for a body that is not JSON, else 422
    naming the fields (the first ``MAX_LISTED_ERRORS`` of them, and their count)."""
    if any(error.get("type") == "json_invalid" for error in raw):
        ctx = next(e.get("ctx", {}) for e in raw if e.get("type") == "json_invalid")
        reason = ctx.get("error", "invalid JSON") if isinstance(ctx, dict) else "invalid JSON"
        return BadRequest(f"The body is not valid JSON: {reason}.")
    errors = field_errors(raw[:MAX_LISTED_ERRORS])
    names = ", ".join(dict.fromkeys(e.field for e in errors))
    problem = Unprocessable(f"Invalid input in: {names}.", errors=errors)
    if len(raw) > MAX_LISTED_ERRORS:
        problem.error_count = len(raw)
    return problem


async def _handle_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return problem_from(request, validation_problem(exc.errors()))


async def _handle_http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    titles = {404: "Not found", 405: "Method not allowed"}
    detail = exc.detail if isinstance(exc.detail, str) else "Request failed."
    headers = dict(exc.headers or {})
    if exc.status_code == 404:
        detail = f"There is no resource at {request.url.path}."
    if exc.status_code == 405:
        allowed = allowed_methods(request)
        headers["Allow"] = ", ".join(allowed)
        detail = f"{request.method} is not allowed here; use {', '.join(allowed)}."
    return problem_response(
        request,
        status=exc.status_code,
        slug=f"http-{exc.status_code}",
        title=titles.get(exc.status_code, "Request failed"),
        detail=detail,
        headers=headers,
    )


def allowed_methods(request: Request) -> list[str]:
    """Every method some route takes at this path (Starlette names only the first
    route's), found by asking each route whether it takes the request with that method;
    HEAD wherever GET is."""
    allowed: list[str] = []
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] is Match.FULL for route in request.app.router.routes):
            allowed.append(method)
    if "GET" in allowed:
        allowed.insert(1, "HEAD")
    return allowed


async def _handle_integrity(request: Request, exc: Exception) -> JSONResponse:
    logger.info("integrity error turned into 409: %s", type(exc).__name__)
    return problem_from(
        request, Conflict("The request conflicts with the current state of a resource.")
    )


async def _handle_database_down(request: Request, exc: Exception) -> JSONResponse:
    logger.error("database unavailable: %s", type(exc).__name__)
    return problem_from(
        request,
        ServiceUnavailable(
            "The database is not reachable right now; try again shortly.",
            headers={"Retry-After": "5"},
        ),
    )


async def _handle_driver_error(request: Request, exc: Exception) -> JSONResponse:
    """A lost connection is the database being unavailable: pgbouncer, for one, closes
    its clients' connections while it cannot reach PostgreSQL ("server login has been
    failing"); the driver reports that as a generic error on a closed connection."""
    if getattr(exc, "connection_invalidated", False):
        return await _handle_database_down(request, exc)
    return await _handle_crash(request, exc)


async def _handle_crash(request: Request, exc: Exception) -> JSONResponse:
    logger.exception("unhandled error")
    return problem_response(
        request,
        status=500,
        slug="internal-error",
        title="Internal server error",
        detail="Something went wrong on our side; quote the request id when reporting it.",
    )


class CrashGuardMiddleware:
    """Answers an unhandled exception with the 500 problem document *inside* the
    middleware stack.

    Starlette serves its handler for ``Exception`` from its outermost layer, outside every
    middleware: that response would lack the request id header and the security
    headers, and the exception would be logged twice (here and by the server). Added as
    the innermost middleware, this guard answers like every other error; the handler
    registered for ``Exception`` stays as the last resort for failures in middleware.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            if started:
                raise
            response = await _handle_crash(Request(scope), exc)
            await response(scope, receive, send)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(Problem, _handle_problem)
    app.add_exception_handler(RequestValidationError, _handle_validation)
    app.add_exception_handler(StarletteHTTPException, _handle_http)
    app.add_exception_handler(IntegrityError, _handle_integrity)
    app.add_exception_handler(OperationalError, _handle_database_down)
    app.add_exception_handler(DBAPIError, _handle_driver_error)
    app.add_exception_handler(PoolTimeoutError, _handle_database_down)
    app.add_exception_handler(OSError, _handle_database_down)
    app.add_exception_handler(Exception, _handle_crash)
