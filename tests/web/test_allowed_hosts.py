"""``QUESTLINE_ALLOWED_HOSTS``: every route refuses a foreign ``Host``, the event stream
and ``/metrics`` included; only the health probes answer whatever the host (a load
balancer's check names none of the service's)."""

from __future__ import annotations

import re

import pytest

from tests.factories import World, bearer
from tests.support.routes import route_table
from tests.web.conftest import AppFactory, client_for

pytestmark = pytest.mark.anyio

PROBES = frozenset({"/healthz", "/readyz"})
ANY_ID = "3f0c6c1e-9a8b-4d2f-8e1a-7b3c2d4e6f80"
HTTP_METHODS = ("get", "post", "put", "patch", "delete")


def _concrete(path: str) -> str:
    """A path template with every parameter filled (ids and file names alike)."""
    return re.sub(r"\{[^}]+\}", ANY_ID, path)


async def test_every_route_but_the_probes_refuses_a_foreign_host(
    make_app: AppFactory, world: World
) -> None:
    app = make_app(allowed_hosts="api.example.org")
    org = world.org()
    documented = {
        (method.upper(), path)
        for path, item in app.openapi()["paths"].items()
        for method in item
        if method in HTTP_METHODS
    }
    routes = {(e.method, e.path) for e in route_table(app)}
    assert documented <= routes | {("GET", p) for p in PROBES}
    # An admin's credentials: without the host rule, each would be served (the stream
    # ends at once in tests, QUESTLINE_STREAM_MAX_SECONDS).
    for credentials in (org.admin, bearer(world.operator_token())):
        headers = {**credentials, "Host": "evil.example"}
        refused: list[str] = []
        async with client_for(app) as client:
            for method, path in sorted(routes):
                methods = ["GET", "HEAD"] if method in ("GET", "*") else [method]
                for sent in methods:
                    response = await client.request(sent, _concrete(path), headers=headers)
                    if path in PROBES:
                        assert response.status_code == 200, (sent, path)
                        continue
                    assert response.status_code == 400, (sent, path, response.status_code)
                    assert response.headers["content-type"] == "application/problem+json"
                    refused.append(f"{sent} {path}")
        assert "GET /leaderboard/stream" in refused
        assert "HEAD /leaderboard/stream" in refused
        assert "GET /metrics" in refused
        assert {f"{m} {p}" for m, p in documented if p not in PROBES} <= set(refused)

    async with client_for(app) as client:
        served = await client.get(
            "/leaderboard/stream", headers={**org.member, "Host": "api.example.org"}
        )
        assert served.status_code == 200
        assert served.headers["content-type"].startswith("text/event-stream")
