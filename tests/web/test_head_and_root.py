"""``GET /`` leads to the dashboard; every ``GET`` route answers ``HEAD`` with the same
status and headers and no body (the route table is walked, so new routes are covered)."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from questline.config import Settings
from tests.factories import World
from tests.web.test_isolation_matrix import EXPECTED, _resolve
from tests.web.test_isolation_matrix import settings as settings  # the same service

pytestmark = pytest.mark.anyio

VARYING = {"date", "x-request-id", "server-timing"}
"""Headers that differ between any two requests."""


async def test_root_redirects_to_the_dashboard(world: World) -> None:
    response = await world.client.get("/")
    assert response.status_code == 307
    assert response.headers["Location"] == "/ui/"
    followed = await world.client.get("/", follow_redirects=True)
    assert followed.status_code == 200
    assert followed.headers["Content-Type"].startswith("text/html")


def _comparable(response: httpx.Response, url: str) -> dict[str, str]:
    # /metrics counts the requests themselves: its length changes from one to the next.
    varying = VARYING | ({"content-length"} if url == "/metrics" else set())
    return {k: v for k, v in response.headers.items() if k.lower() not in varying}


async def test_every_get_route_answers_head_with_the_same_headers_and_no_body(
    app: FastAPI, world: World, settings: Settings
) -> None:
    owner = world.org()
    resolved = await _resolve(owner, app.openapi()["paths"], settings=settings)
    gets = [(m, p) for (m, p) in EXPECTED if m in ("GET", "*")]
    assert len(gets) >= 20
    checked: list[str] = []
    for key in gets:
        url = resolved.url(EXPECTED[key], key[1])
        for headers in (owner.admin, {}):  # authorized, and refused (401 for the API)
            got = await world.client.get(url, headers=headers)
            head = await world.client.head(url, headers=headers)
            assert head.status_code == got.status_code, url
            assert head.content == b"", url
            assert _comparable(head, url) == _comparable(got, url), url
            if "content-length" in got.headers and url != "/metrics":
                assert head.headers["content-length"] == str(len(got.content)), url
        checked.append(url)
    assert "/team" in checked
    assert "/metrics" in checked


async def test_head_of_a_write_only_route_is_405_like_get(world: World) -> None:
    org = world.org()
    url = f"/team/{(await org.create_team())['Id']}/isadminteam"
    get = await world.client.get(url, headers=org.admin)
    head = await world.client.head(url, headers=org.admin)
    assert head.status_code == get.status_code == 405
    assert head.content == b""
