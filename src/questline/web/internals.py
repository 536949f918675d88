"""Every use of a private name of Starlette or FastAPI, in one place.

Each is the library's own way to do something its public API does not offer, and each
may change in any release. ``CHECKED_AGAINST`` names the versions these uses were read
against; ``tests/web/test_internals.py`` fails with a clear message when another version
is installed, so that an upgrade re-reads them here instead of breaking silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.dependencies.utils import _should_embed_body_fields
from fastapi.routing import _IncludedRouter
from starlette._utils import get_route_path
from starlette.routing import BaseRoute
from starlette.types import Scope

CHECKED_AGAINST = {"fastapi": "0.165.0", "starlette": "1.10.0"}


def route_path(scope: Scope) -> str:
    """The path a Starlette route compares (the request's path below its root path):
    computed as ``Route.matches`` computes it, so that a route answering early agrees
    with the router."""
    return get_route_path(scope)


def body_is_embedded(body_params: list[Any]) -> bool:
    """Whether FastAPI reads these body parameters as fields of one object (several
    parameters, or one declared ``embed``) rather than as the whole body."""
    return bool(_should_embed_body_fields(body_params))


def keep_parsed_json(request: Request, parsed: Any) -> None:
    """Hand a body parsed elsewhere to ``Request.json()``, which returns its cached
    value: FastAPI reads the body there and does not parse it again."""
    request._json = parsed


def native_telemetry_enabled(app: FastAPI) -> bool:
    """Whether FastAPI's own OpenTelemetry support wants the request (then FastAPI's
    ``__call__`` must run: it opens the request's span)."""
    return bool(app._native_telemetry.enabled())


def declared_routes(
    routes: Iterable[BaseRoute], prefix: str = ""
) -> Iterator[tuple[str | None, BaseRoute]]:
    """Each route as declared, with the path it answers (its included routers' prefixes
    before its own), in the order the router tries them: included routers opened.

    FastAPI's public walk (``iter_route_contexts``) first builds each included route's
    per-application copy (its dependencies analysed, a validator a parameter), most of
    ``create_app``'s time; FastAPI builds a router's copies itself when a request is
    first routed into it. What start-up reads (paths, endpoints, declarations) is on the
    declared routes already (a route without a path: ``None``)."""
    for route in routes:
        if isinstance(route, _IncludedRouter):
            inner = prefix + route.include_context.prefix
            yield from declared_routes(route.original_router.routes, inner)
        else:
            path = getattr(route, "path", None)
            yield (None if path is None else prefix + path), route
