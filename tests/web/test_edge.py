"""``web.edge``: what a route is exempt from at the edge is declared on the route and read
at start-up; ``web`` names no route of a domain."""

from __future__ import annotations

import ast
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, cast

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import iter_route_contexts
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from questline.app import create_app
from questline.config import Settings
from questline.web.edge import (
    PROBE,
    ConflictingRules,
    Edge,
    EdgePipeline,
    EdgeStep,
    EdgeTable,
    at_the_edge,
)

WEB = Path(__file__).parents[2] / "src" / "questline" / "web"


def _app_with(*routes: tuple[str, Edge]) -> FastAPI:
    app = FastAPI()
    router = APIRouter()
    for path, rules in routes:

        async def endpoint() -> None:
            return None

        router.add_api_route(path, at_the_edge(rules)(endpoint), methods=["GET"])
    app.include_router(router)
    return app


def test_a_fixed_path_a_templated_path_and_an_undeclared_one() -> None:
    app = _app_with(
        ("/probe", PROBE),
        ("/things/bulk", Edge.BULK),
        ("/directory/Users/{id}", Edge.DIRECTORY),
        ("/directory/Users", Edge.DIRECTORY),
        ("/things/{id}", Edge.NONE),
    )
    table = EdgeTable.from_routes(app.routes)
    assert table.of("/probe") == PROBE
    assert table.of("/things/bulk") == Edge.BULK
    assert table.of("/things/bulk/") == Edge.BULK  # the trailing slash the router forgives
    assert table.of("/directory/Users/42") == Edge.DIRECTORY
    assert table.of("/directory/Users") == Edge.DIRECTORY
    assert table.of("/things/42") == Edge.NONE
    assert table.of("/") == Edge.NONE
    assert table.paths_with(Edge.ANY_HOST) == {"/probe"}


def test_a_templated_rule_that_would_cover_another_route_is_refused_at_start_up() -> None:
    app = _app_with(("/things/{id}", Edge.BULK), ("/things/{id}/parts", Edge.NONE))
    with pytest.raises(ConflictingRules, match="/things/"):
        EdgeTable.from_routes(app.routes)


def test_the_services_routes_declare_their_rules() -> None:
    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:"))
    table = EdgeTable.from_routes(app.routes)
    assert table.of("/healthz") == PROBE
    assert table.of("/readyz") == PROBE
    assert table.of("/metrics") == Edge.NOT_RATE_LIMITED
    assert table.of("/team/bulk") == Edge.BULK
    assert table.of("/leaderboard/stream") == Edge.NOT_COUNTED | Edge.NO_TIMEOUT
    assert table.of("/scim/v2/Users") == Edge.DIRECTORY
    assert table.of("/scim/v2/Users/0190c7a4-0000-7000-8000-000000000000") == Edge.DIRECTORY
    for form in ("/lti/login", "/lti/launch", "/lti/deep-link"):
        assert table.of(form) == Edge.FORM_BODY
    assert table.of("/team") == Edge.NONE
    assert table.of("/team/0190c7a4-0000-7000-8000-000000000000/progress") == Edge.NONE


def _string_constants(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_web_names_no_path_of_a_domain() -> None:
    """Every first path segment a domain's route serves (``/team``, ``/scim``,
    ``/healthz``, ``/ui``…) appears in no string of ``web/``: what a route needs of the
    plumbing, it declares."""
    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:"))
    segments = {
        "/" + str(context.path).strip("/").split("/", 1)[0]
        for context in iter_route_contexts(app.routes)
        if isinstance(context.original_route, Route)
        and getattr(context.endpoint, "__module__", "").startswith("questline.")
        and not getattr(context.endpoint, "__module__", "").startswith("questline.web")
        and context.path not in (None, "/")
    }
    segments |= {"/ui"}  # the dashboard's mounted tree
    assert {"/team", "/healthz", "/scim", "/lti", "/leaderboard"} <= segments
    found = [
        f"{path.name}:{line}: {value!r}"
        for path in sorted(WEB.glob("*.py"))
        for line, value in _string_constants(path)
        for segment in segments
        if value == segment or value.startswith(segment + "/") or f'"{segment}/' in value
    ]
    assert found == []


class Layer:
    """A step's layer in a test: remembers its name, its rules and what it wraps."""

    def __init__(self, app: Any, rules: Edge, name: str) -> None:
        self.app, self.rules, self.name = app, rules, name

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        scope.setdefault("passed", []).append(self.name)
        return self.app(scope, receive, send)  # type: ignore[no-any-return]


def _step(name: str, skipped_by: Edge = Edge.NONE) -> EdgeStep:
    return EdgeStep(name, lambda app, rules: Layer(app, rules, name), skipped_by=skipped_by)


def _names(chain: Any) -> list[tuple[str, Edge]]:
    found = []
    while isinstance(chain, Layer):
        found.append((chain.name, chain.rules))
        chain = chain.app
    return found


def test_each_set_of_rules_gets_the_chain_of_the_steps_it_takes() -> None:
    """Composed once per set of rules, outermost first, each layer made for those rules;
    a step a route is exempt from is not in its chain at all."""

    async def router(scope: Scope, receive: Receive, send: Send) -> None:
        return None

    table = EdgeTable(fixed={"/probe": PROBE, "/stream": Edge.NOT_COUNTED | Edge.NO_TIMEOUT})
    steps = [
        _step("id"),
        _step("counted", Edge.NOT_COUNTED),
        _step("limited", Edge.NOT_RATE_LIMITED),
    ]
    pipeline = EdgePipeline(router, steps=steps, table=table)
    assert set(pipeline.chains) == {Edge.NONE, PROBE, Edge.NOT_COUNTED | Edge.NO_TIMEOUT}
    assert _names(pipeline.chains[Edge.NONE]) == [
        ("id", Edge.NONE),
        ("counted", Edge.NONE),
        ("limited", Edge.NONE),
    ]
    assert _names(pipeline.chains[PROBE]) == [("id", PROBE)]
    stream = Edge.NOT_COUNTED | Edge.NO_TIMEOUT
    assert _names(pipeline.chains[stream]) == [("id", stream), ("limited", stream)]


@pytest.mark.anyio
async def test_a_request_goes_down_its_routes_chain_and_the_lifespan_past_every_step() -> None:
    reached: list[Scope] = []

    async def router(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append(scope)

    async def receive() -> Message:
        return {"type": "http.request"}

    async def send(message: Message) -> None:
        return None

    table = EdgeTable(fixed={"/probe": PROBE})
    pipeline = EdgePipeline(
        router, steps=[_step("id"), _step("limited", Edge.NOT_RATE_LIMITED)], table=table
    )
    for path in ("/probe", "/probe/", "/team"):
        await pipeline({"type": "http", "path": path}, receive, send)
    await pipeline({"type": "lifespan"}, receive, send)
    assert [scope.get("passed") for scope in reached] == [
        ["id"],
        ["id"],  # the trailing slash the router forgives
        ["id", "limited"],
        None,
    ]


def test_the_service_has_one_middleware_and_its_probes_and_streams_skip_their_steps() -> None:
    settings = Settings(
        database_url="sqlite+aiosqlite:///:memory:",
        allowed_hosts="questline.example",
        rate_limit_enabled=True,
    )
    app = create_app(settings)
    (middleware,) = app.user_middleware
    assert middleware.cls is cast(Any, EdgePipeline)
    steps = cast(list[EdgeStep], middleware.kwargs["steps"])
    names = [step.name for step in steps]
    assert names[0] == "request id"
    assert names[-1] == "fast lane"
    table = EdgeTable.from_routes(app.routes)
    taken = {
        path: [step.name for step in steps if step.taken_by(table.of(path))]
        for path in ("/healthz", "/leaderboard/stream", "/team", "/team/bulk")
    }
    assert taken["/team"] == names
    assert taken["/team/bulk"] == names
    assert not {"allowed hosts", "concurrency limit", "rate limit"} & set(taken["/healthz"])
    assert "request timeout" not in taken["/leaderboard/stream"]
    assert "concurrency limit" not in taken["/leaderboard/stream"]
    assert "rate limit" in taken["/leaderboard/stream"]
