"""``GET /leaderboard/graph?top=`` on a read-model miss, answered by the fast lane's lean
builder (``endpoints.lean_graph``): the route's bytes without a session, in one statement
on PostgreSQL (the ranking with each drawn team's history beside) and two on SQLite (the
ranking, then the histories); every other query is the route's."""

from __future__ import annotations

import pytest

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
    teams = [await org.create_team(f"Team {n}") for n in range(4)]
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 20], [5]]])
    await completed(org, teams[3]["Id"], tree.task(0, 0, 1))
    await completed(org, teams[1]["Id"], tree.task(0, 0, 0))
    await completed(org, teams[1]["Id"], tree.task(0, 1, 0))
    await completed(org, teams[2]["Id"], tree.task(0, 1, 0))
    return org


@pytest.mark.parametrize("query", ["", "?top=2", "?top=50", "?top=%203"])
async def test_a_lean_miss_draws_the_routes_graph(
    world: World, app_state: AppHarness, backend: str, query: str
) -> None:
    org = await _ranked_org(world)
    url = f"/leaderboard/graph{query}"
    sent = 2 if backend == "sqlite" else 1
    lean = await assert_lean_miss_is_the_routes(world.client, app_state, url, org.member, sent=sent)
    drawn = lean.json()
    assert [s["Name"] for s in drawn][:2] == ["Team 3", "Team 1"]  # 20 points, then 15
    assert [p["Score"] for p in drawn[1]["Points"]] == [0, 10, 15]
    assert [len(s["Points"]) for s in drawn] == [2, 3, 2, 1][: len(drawn)]  # none: its start
    with statements(app_state) as again:
        hit = await world.client.get(url, headers=org.admin)  # the admins' entry: a miss
    assert again["engine"] == []
    assert hit.content == lean.content


async def test_an_organization_without_ranked_teams_draws_nothing_in_one_statement(
    world: World, app_state: AppHarness
) -> None:
    org = world.org()
    assert (await world.client.get("/team", headers=org.member)).status_code == 200
    app_state.readmodel.cache.drop_bodies()
    with statements(app_state) as seen:
        empty = await world.client.get("/leaderboard/graph", headers=org.member)
    assert empty.status_code == 200
    assert empty.json() == []
    assert (seen["engine"], len(seen["lean"])) == ([], 1)


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("?top=0", 422),
        ("?top=51", 422),
        ("?top=ten", 422),
        ("?tpo=5", 422),
        ("?top=5&from=2020-01-01T00:00:00Z", 200),
        ("?top=5&by=perMember", 200),
    ],
)
async def test_anything_else_is_left_to_the_route(
    world: World, app_state: AppHarness, query: str, status: int
) -> None:
    org = await _ranked_org(world)
    url = f"/leaderboard/graph{query}"
    await assert_left_to_the_route(world.client, app_state, url, org.member, status)
