"""The application's real route table: every (method, path template) it answers.

FastAPI 0.165 includes routers lazily: ``app.routes`` holds ``_IncludedRouter`` entries
whose routes are only reachable through ``effective_route_contexts()``. This walks both
shapes, so that tests built on the route table see every route, including those that
are left out of the OpenAPI document (docs, metrics) and mounted apps (static files).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from starlette.routing import BaseRoute, Mount, Route

IGNORED_METHODS = frozenset({"HEAD"})
"""Starlette answers HEAD wherever it answers GET; the GET entry covers it."""


@dataclass(frozen=True, slots=True)
class RouteEntry:
    method: str
    """An HTTP method, or ``*`` for a mount (which answers what its app answers)."""
    path: str
    """The path template, e.g. ``/team/{team_id}``; a mount's is ``/prefix/{path}``."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.method, self.path)


def _entries(path: str, methods: Iterable[str] | None) -> Iterator[RouteEntry]:
    for method in sorted(methods or ()):
        if method not in IGNORED_METHODS:
            yield RouteEntry(method, path)


def _walk(routes: Iterable[Any]) -> Iterator[RouteEntry]:
    for route in routes:
        contexts = getattr(route, "effective_route_contexts", None)
        if callable(contexts):  # fastapi.routing._IncludedRouter
            for context in contexts():
                yield from _entries(context.path, context.methods)
        elif isinstance(route, Mount):
            yield RouteEntry("*", route.path.rstrip("/") + "/{path}")
        elif isinstance(route, Route):
            yield from _entries(route.path, route.methods)
        elif isinstance(route, BaseRoute):
            raise TypeError(
                f"tests/support/routes.py does not know how to list {type(route).__name__}; "
                "teach it, so that route-table tests keep seeing every route"
            )


def route_table(app: Any) -> list[RouteEntry]:
    """Every route of ``app``, in registration order, without duplicates."""
    return list(dict.fromkeys(_walk(app.routes)))
