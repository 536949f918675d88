"""Health, readiness, metrics, the OpenAPI document, the docs page and the dashboard."""

from __future__ import annotations

import re

import pytest

from tests.factories import World, bearer

pytestmark = pytest.mark.anyio


async def test_health_and_readiness(world: World) -> None:
    assert (await world.client.get("/healthz")).json() == {"status": "ok"}
    ready = await world.client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready"}


async def test_metrics_count_requests_by_route_template(world: World) -> None:
    org = world.org()
    await world.client.get("/team/not-a-uuid", headers=org.admin)
    operator = bearer(world.operator_token())
    metrics = (await world.client.get("/metrics", headers=operator)).text
    assert 'route="/team/{team_id}"' in metrics
    assert "questline_http_request_duration_seconds_bucket" in metrics


async def test_request_id_is_echoed_or_generated(world: World) -> None:
    given = await world.client.get("/healthz", headers={"X-Request-Id": "a" * 32})
    assert given.headers["X-Request-Id"] == "a" * 32
    generated = await world.client.get("/healthz")
    assert re.fullmatch(r"[0-9a-f]{32}", generated.headers["X-Request-Id"])


async def test_openapi_lists_the_seed_endpoints(world: World) -> None:
    document = (await world.client.get("/openapi.json")).json()
    paths = document["paths"]
    for path, method in [
        ("/team", "get"),
        ("/team", "post"),
        ("/team/{team_id}/members", "post"),
        ("/team/{team_id}/isadminteam", "post"),
    ]:
        assert method in paths[path], (path, method)
    assert "bearer" in document["components"]["securitySchemes"]


async def test_docs_page_loads_its_assets_from_the_service(world: World) -> None:
    page = await world.client.get("/docs")
    assert page.status_code == 200
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources, page.text
    for source in sources:
        assert source.startswith("/"), f"external asset {source}"
        assert (await world.client.get(source)).status_code == 200, source


async def test_dashboard_is_served_with_its_assets(world: World) -> None:
    redirect = await world.client.get("/ui")
    assert redirect.status_code == 307
    page = await world.client.get("/ui/")
    assert page.status_code == 200
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    assets = re.findall(r'(?:src|href)="\./(assets/[^"]+)"', page.text)
    assert assets, page.text
    for asset in assets:
        response = await world.client.get(f"/ui/{asset}")
        assert response.status_code == 200, asset
    assert "http://" not in page.text
    assert "https://" not in page.text
