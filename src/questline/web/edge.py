"""The edge: the steps a request passes before routing, and what a route declares about
them. Declared on the route, read once at start-up.

The steps (request id, security headers, hosts, access log, concurrency and rate limits,
body limits, timeout, crash guard, ``HEAD``, the fast lane) run before routing, so they
cannot ask the route. A route declares its rules with ``@at_the_edge(...)`` under its
route decorator (or its route class carries ``edge``); ``create_app`` builds an
``EdgeTable`` from every route and one ``EdgePipeline`` from the steps. The pipeline
composes, once for each set of rules some route declares, the chain of the steps those
routes take, each made for those rules (as Litestar composes a route's middleware when it
builds the route): a request is handed to its chain after one look-up of its path, and a
step a route is exempt from is not in its chain at all. ``web`` thereby names no route of
a domain.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from questline.web.internals import declared_routes


class Edge(enum.Flag):
    """A route's rules at the edge; the default (no flag) is the ordinary route."""

    NONE = 0
    NOT_RATE_LIMITED = enum.auto()
    """Probes and scrapes: an orchestrator polling them is never refused."""
    NOT_COUNTED = enum.auto()
    """Left out of the concurrency limit: probes, and long-lived streams with caps of
    their own."""
    ANY_HOST = enum.auto()
    """Answers whatever ``Host`` it is sent (a load balancer's health check names none)."""
    NO_TIMEOUT = enum.auto()
    """No request timeout: a long-lived response (an event stream)."""
    BULK = enum.auto()
    """An import: the larger body limit and timeout, CSV bodies, its own rate class."""
    FORM_BODY = enum.auto()
    """Also accepts an ``application/x-www-form-urlencoded`` body (a browser's form post)."""
    DIRECTORY = enum.auto()
    """A directory's provisioning API: a rate class of its own, reads and writes alike."""


PROBE = Edge.NOT_RATE_LIMITED | Edge.NOT_COUNTED | Edge.ANY_HOST
"""A health probe's rules."""

_EDGE = "_questline_edge"
E = TypeVar("E", bound=Callable[..., Any])


def at_the_edge(rules: Edge) -> Callable[[E], E]:
    """Declares, on a route's endpoint, its rules at the edge (under the route decorator:
    ``@router.get(...)`` then ``@at_the_edge(...)``)."""

    def declare(endpoint: E) -> E:
        setattr(endpoint, _EDGE, rules)
        return endpoint

    return declare


def rules_of(route: BaseRoute) -> Edge:
    """The rules a route declares (on its endpoint, else on its route class)."""
    declared = getattr(getattr(route, "endpoint", None), _EDGE, None)
    if declared is None:
        declared = getattr(route, "edge", Edge.NONE)
    assert isinstance(declared, Edge), route
    return declared


class ConflictingRules(ValueError):
    """A templated route's fixed prefix also starts a route with other rules."""


@dataclass(frozen=True, slots=True)
class EdgeTable:
    fixed: dict[str, Edge] = field(default_factory=dict)
    prefixes: tuple[tuple[str, Edge], ...] = ()

    def of(self, path: str) -> Edge:
        rules = self.fixed.get(path)
        if rules is not None:
            return rules
        for prefix, prefixed in self.prefixes:
            if path.startswith(prefix):
                return prefixed
        trimmed = path.rstrip("/")
        if trimmed != path and trimmed:
            return self.of(trimmed)
        return Edge.NONE

    def rule_sets(self) -> frozenset[Edge]:
        """Every set of rules a path may have here (an undeclared path's included)."""
        return frozenset({Edge.NONE, *self.fixed.values(), *(r for _, r in self.prefixes)})

    def paths_with(self, rule: Edge) -> frozenset[str]:
        """The fixed paths that have ``rule`` (for the OpenAPI document)."""
        return frozenset(path for path, rules in self.fixed.items() if rule in rules)

    @classmethod
    def from_routes(cls, routes: Iterable[BaseRoute]) -> EdgeTable:
        """The table of ``routes`` (included routers opened); a route without a
        declaration has no entry. A templated route is found by the fixed part of its
        path before the first parameter, which must then start no route with other rules
        (checked here, at start-up)."""
        paths = [
            (path, rules_of(route)) for path, route in declared_routes(routes) if path is not None
        ]
        fixed = {path: rules for path, rules in paths if "{" not in path and rules}
        prefixes: dict[str, Edge] = {}
        for path, rules in paths:
            if "{" in path and rules:
                prefixes[path.split("{", 1)[0]] = rules
        for prefix, rules in prefixes.items():
            for path, other in paths:
                if path.startswith(prefix) and other != rules:
                    raise ConflictingRules(
                        f"{path} starts with {prefix}, the fixed part of a route declaring "
                        f"{rules}, but declares {other}"
                    )
        ordered = sorted(prefixes.items(), key=lambda item: len(item[0]), reverse=True)
        return cls(fixed=fixed, prefixes=tuple(ordered))


Layer = Callable[[ASGIApp, Edge], ASGIApp]
"""Makes a step's ASGI layer around the next one, for routes with the given rules."""


@dataclass(frozen=True, slots=True)
class EdgeStep:
    """One step of the edge pipeline."""

    name: str
    layer: Layer
    skipped_by: Edge = Edge.NONE
    """Routes declaring any of these go without the step."""

    @classmethod
    def plain(
        cls,
        name: str,
        layer: Callable[..., ASGIApp],
        *,
        skipped_by: Edge = Edge.NONE,
        **options: Any,
    ) -> EdgeStep:
        """A step that treats every route it takes alike: ``layer(app, **options)``."""
        return cls(name, lambda app, _rules: layer(app, **options), skipped_by=skipped_by)

    def taken_by(self, rules: Edge) -> bool:
        return not rules & self.skipped_by


def compose(app: ASGIApp, steps: Sequence[EdgeStep], rules: Edge) -> ASGIApp:
    """The chain of the ``steps`` (outermost first) that routes with ``rules`` take."""
    for step in reversed(steps):
        if step.taken_by(rules):
            app = step.layer(app, rules)
    return app


class EdgePipeline:
    """The application's one middleware: each HTTP request goes down the chain composed
    for its route's rules; anything else (the lifespan) goes straight to ``app``."""

    def __init__(self, app: ASGIApp, *, steps: Sequence[EdgeStep], table: EdgeTable) -> None:
        self.app = app
        self.steps = tuple(steps)
        self.table = table
        self.chains = {rules: compose(app, self.steps, rules) for rules in table.rule_sets()}

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        # Not a coroutine: a layer that only hands on keeps no frame for the response's
        # life (an event stream's hours).
        if scope["type"] != "http":
            return self.app(scope, receive, send)
        return self.chains[self.table.of(scope["path"])](scope, receive, send)
