"""``GET /leaderboard?limit=&offset=`` on a read-model miss, answered by the fast lane's
lean builder (``endpoints.lean_leaderboard``): the route's bytes, validators and ``Link``
in one statement without a session; every other query is the route's."""

from __future__ import annotations

import pytest

from questline.leaderboard.endpoints import LEAN_MAX_OFFSET
from tests.factories import Org, World
from tests.progress.factories import completed, make_discipline
from tests.readmodel.statements import (
    assert_lean_miss_is_the_routes,
    assert_left_to_the_route,
    statements,
)
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def _ranked_org(world: World) -> Org:
    org = world.org()
    teams = [await org.create_team(f"Team {n}") for n in range(5)]
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 20], [5]]])
    await completed(org, teams[3]["Id"], tree.task(0, 0, 1))
    await completed(org, teams[1]["Id"], tree.task(0, 0, 0))
    await completed(org, teams[1]["Id"], tree.task(0, 1, 0))
    return org


@pytest.mark.parametrize(
    "query",
    ["", "?limit=2", "?limit=2&offset=2", "?offset=4&limit=2", "?limit=%202", "?limit=1&limit=3"],
)
async def test_a_lean_miss_sends_the_routes_page_in_one_statement(
    world: World, app_state: AppHarness, query: str
) -> None:
    org = await _ranked_org(world)
    url = f"/leaderboard{query}"
    lean = await assert_lean_miss_is_the_routes(world.client, app_state, url, org.member)
    with statements(app_state) as again:
        hit = await world.client.get(url, headers=org.member)
    assert again == {"engine": [], "lean": []}
    assert hit.content == lean.content


async def test_the_pages_follow_by_link_to_the_last(world: World, app_state: AppHarness) -> None:
    org = await _ranked_org(world)
    names, url = [], "/leaderboard?limit=2"
    while url:
        app_state.readmodel.cache.drop_bodies()
        page = await world.client.get(url, headers=org.member)
        assert page.status_code == 200
        names += [entry["Name"] for entry in page.json()]
        url = page.links.get("next", {}).get("url", "")
    assert names[:2] == ["Team 3", "Team 1"]  # 20 points, then 15
    assert sorted(names) == [f"Team {n}" for n in range(5)]


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("?limit=0", 422),
        ("?limit=1001", 422),
        ("?limit=two", 422),
        ("?offset=-1", 422),
        ("?limt=5", 422),
        ("?limit=5&tag=cohort", 200),
        ("?limit=5&by=perMember", 200),
        (f"?limit=5&offset={LEAN_MAX_OFFSET + 1}", 200),
    ],
)
async def test_anything_else_is_left_to_the_route(
    world: World, app_state: AppHarness, query: str, status: int
) -> None:
    org = await _ranked_org(world)
    url = f"/leaderboard{query}"
    await assert_left_to_the_route(world.client, app_state, url, org.member, status)


async def test_a_lean_miss_sees_the_write_before_it(world: World, app_state: AppHarness) -> None:
    org = await _ranked_org(world)
    before = await world.client.get("/leaderboard?limit=1", headers=org.member)
    created = await org.create_team("Team 9")
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[50]]])
    await completed(org, created["Id"], tree.task(0, 0, 0))
    with statements(app_state) as seen:
        after = await world.client.get("/leaderboard?limit=1", headers=org.member)
    assert len(seen["lean"]) == 1
    assert after.headers["etag"] != before.headers["etag"]
    assert after.json()[0]["Name"] == "Team 9"
