"""``web.edge``: what a route is exempt from at the edge is declared on the route and read
at start-up; ``web`` names no route of a domain."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import iter_route_contexts
from starlette.routing import Route

from questline.app import create_app
from questline.config import Settings
from questline.web.edge import PROBE, ConflictingRules, Edge, EdgeTable, at_the_edge

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
