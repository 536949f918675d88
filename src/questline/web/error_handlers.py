"""The exception handlers that answer every error with a problem document.

``install_error_handlers`` registers them on the application; ``CrashGuardMiddleware``
answers crashes inside the edge pipeline; ``problem_response`` and ``problem_from``
render a problem document for a step of the edge that answers outside the handlers. The
vocabulary they render (``Problem`` and its subclasses) lives in ``questline.web.errors``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from asgi_correlation_id import correlation_id
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from questline.web.errors import (
    MAX_LISTED_ERRORS,
    PROBLEM_MEDIA_TYPE,
    Conflict,
    FieldError,
    Problem,
    ProblemDocument,
    ServiceUnavailable,
    problem_type_base,
    validation_problem,
)
from questline.web.send_wrappers import StatusWatch

logger = logging.getLogger("questline.web.error_handlers")


def _type_base(request: Request) -> str:
    """Problem type URIs live on the service (``GET /problems/<slug>`` explains each):
    ``problem_type_base`` of its public URL (relative where none is set or no
    application state is at hand)."""
    state = getattr(getattr(request.scope.get("app"), "state", None), "questline", None)
    settings = getattr(state, "settings", None)
    public_url = getattr(settings, "public_url", None)
    return problem_type_base(public_url if isinstance(public_url, str) else None)


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


async def _handle_problem(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, Problem)
    return problem_from(request, exc)


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
    edge pipeline (``web.edge``).

    Starlette serves its handler for ``Exception`` from its outermost layer, outside every
    middleware: that response would lack the request id header and the security
    headers, and the exception would be logged twice (here and by the server). Added as
    the innermost middleware, this guard answers like every other error; the handler
    registered for ``Exception`` stays as the last resort for failures in middleware.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        watch = StatusWatch(send)
        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            if watch.status:  # the response started: too late for a problem document
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
