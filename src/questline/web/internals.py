"""Every use of a private name of Starlette or FastAPI, in one place.

Each is the library's own way to do something its public API does not offer, and each
may change in any release. ``CHECKED_AGAINST`` names the versions these uses were read
against; ``tests/web/test_internals.py`` fails with a clear message when another version
is installed, so that an upgrade re-reads them here instead of breaking silently.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.dependencies.utils import _should_embed_body_fields
from starlette._utils import get_route_path
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
