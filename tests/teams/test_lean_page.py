"""``GET /team?limit=`` (a first page) on a read-model miss, answered by the fast lane's
lean builder (``queries.lean_team_page``): the route's bytes, validators and ``Link`` in
one statement without a session; the whole list, cursors and refusals are the route's."""

from __future__ import annotations

import pytest

from tests.factories import Org, World
from tests.readmodel.statements import assert_lean_miss_is_the_routes, statements
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def _org_with_teams(world: World) -> Org:
    org = world.org()
    for n in (3, 1, 4, 0, 2):
        created = await org.create_team(f"Team {n}")
        if n == 1:
            assert (await org.add_member(created["Id"], email="a@example.org")).status_code == 201
    return org


@pytest.mark.parametrize("query", ["?limit=2", "?limit=5", "?limit=%203", "?limit=1&limit=4"])
async def test_a_lean_miss_sends_the_routes_page_in_one_statement(
    world: World, app_state: AppHarness, query: str
) -> None:
    org = await _org_with_teams(world)
    url = f"/team{query}"
    await assert_lean_miss_is_the_routes(world.client, app_state, url, org.member)


async def test_the_pages_follow_by_link_to_the_last(world: World, app_state: AppHarness) -> None:
    org = await _org_with_teams(world)
    names, counts, url = [], [], "/team?limit=2"
    while url:
        app_state.readmodel.cache.drop_bodies()
        page = await world.client.get(url, headers=org.member)
        assert page.status_code == 200
        names += [team["Name"] for team in page.json()]
        counts += [team["MemberCount"] for team in page.json()]
        url = page.links.get("next", {}).get("url", "")
    assert names == [f"Team {n}" for n in range(5)]
    assert counts == [0, 1, 0, 0, 0]


@pytest.mark.parametrize(
    ("query", "status"),
    [("", 200), ("?limit=0", 422), ("?limit=1001", 422), ("?limit=x", 422), ("?after=x.y", 422)],
)
async def test_anything_else_is_left_to_the_route(
    world: World, app_state: AppHarness, query: str, status: int
) -> None:
    org = await _org_with_teams(world)
    app_state.readmodel.cache.drop_bodies()
    with statements(app_state) as seen:
        answer = await world.client.get(f"/team{query}", headers=org.member)
    assert answer.status_code == status, answer.text
    assert seen["lean"] == []
