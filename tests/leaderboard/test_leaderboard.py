"""``GET /leaderboard``: order, ties, exclusion of admin and archived teams, paging."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.factories import Org, World
from tests.progress.factories import at, completed, make_discipline

pytestmark = pytest.mark.anyio


async def _board(org: Org, query: str = "") -> list[dict[str, Any]]:
    response = await org.client.get(f"/leaderboard{query}", headers=org.member)
    assert response.status_code == 200, response.text
    return list(response.json())


def _names(board: list[dict[str, Any]]) -> list[str]:
    return [e["Name"] for e in board]


async def test_ranks_by_score_then_earlier_reach_then_name(world: World) -> None:
    org = world.org()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 10, 20, 5]]])
    teams = {name: (await org.create_team(name))["Id"] for name in ["Dove", "Crow", "Bee", "Ant"]}
    # Crow and Dove both reach 20, Crow earlier (explicit CompletedAt, sent in reverse)
    await completed(org, teams["Dove"], tree.task(0, 0, 2), at(5))
    await completed(org, teams["Crow"], tree.task(0, 0, 0), at(3))
    await completed(org, teams["Crow"], tree.task(0, 0, 1), at(1))
    await completed(org, teams["Bee"], tree.task(0, 0, 3), at(2))
    board = await _board(org)
    assert _names(board) == ["Crow", "Dove", "Bee", "Ant"]
    assert [e["Rank"] for e in board] == [1, 2, 3, 4]
    assert [e["Score"] for e in board] == [20, 20, 5, 0]
    assert [e["TasksCompleted"] for e in board] == [2, 1, 1, 0]
    assert board[0]["ReachedAt"] == at(3)  # the later of its two completions
    assert board[1]["ReachedAt"] == at(5)
    assert board[0]["TeamId"] == teams["Crow"]
    assert set(board[0]) == {"Rank", "TeamId", "Name", "Score", "TasksCompleted", "ReachedAt"}


async def test_equal_score_and_time_fall_back_to_name(world: World) -> None:
    org = world.org()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[7]]])
    for name in ["zeta", "Alpha", "mid"]:
        team = await org.create_team(name)
        await completed(org, team["Id"], tree.task(0, 0, 0), at(2))
    assert _names(await _board(org)) == ["Alpha", "mid", "zeta"]


async def test_withdrawal_moves_a_team_down(world: World) -> None:
    org = world.org()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 3]]])
    first, second = await org.create_team("First"), await org.create_team("Second")
    await completed(org, first["Id"], tree.task(0, 0, 0), at(1))
    await completed(org, second["Id"], tree.task(0, 0, 1), at(2))
    assert _names(await _board(org)) == ["First", "Second"]
    await world.client.delete(
        f"/team/{first['Id']}/progress/{tree.task(0, 0, 0)}", headers=org.admin
    )
    board = await _board(org)
    assert _names(board) == ["Second", "First"]
    assert [e["Score"] for e in board] == [3, 0]


async def test_admin_and_archived_teams_leave_and_come_back_with_their_score(
    world: World,
) -> None:
    org = world.org()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[30, 20, 10]]])
    teams = [await org.create_team(n) for n in ["Boss", "Mid", "Low"]]
    for team, task in zip(teams, range(3), strict=True):
        await completed(org, team["Id"], tree.task(0, 0, task), at(task))
    boss_id, mid_id = teams[0]["Id"], teams[1]["Id"]
    await world.client.post(f"/team/{boss_id}/isadminteam", headers=org.admin)
    await world.client.patch(f"/team/{mid_id}", json={"Status": "Archived"}, headers=org.admin)
    board = await _board(org)
    assert _names(board) == ["Low"]
    assert board[0]["Rank"] == 1
    # an admin team still makes progress; it just is not ranked
    await completed(org, boss_id, tree.task(0, 0, 1), at(10))
    await world.client.post(f"/team/{boss_id}/isadminteam", headers=org.admin)
    await world.client.patch(f"/team/{mid_id}", json={"Status": "Active"}, headers=org.admin)
    board = await _board(org)
    assert _names(board) == ["Boss", "Mid", "Low"]
    assert [e["Score"] for e in board] == [50, 20, 10]


async def test_paging_with_limit_and_offset(world: World) -> None:
    org = world.org()
    for index in range(5):
        await org.create_team(f"T{index}")
    first = await org.client.get("/leaderboard?limit=2", headers=org.member)
    assert _names(first.json()) == ["T0", "T1"]
    link = first.headers["Link"]
    assert 'rel="next"' in link
    second = await org.client.get(link[1 : link.index(">")], headers=org.member)
    assert [(e["Rank"], e["Name"]) for e in second.json()] == [(3, "T2"), (4, "T3")]
    last = await org.client.get("/leaderboard?limit=2&offset=4", headers=org.member)
    assert [(e["Rank"], e["Name"]) for e in last.json()] == [(5, "T4")]
    assert "Link" not in last.headers
    assert await _board(org, "?offset=10") == []


@pytest.mark.parametrize("query", ["limit=0", "limit=1001", "limit=x", "offset=-1"])
async def test_bad_paging_is_422(world: World, query: str) -> None:
    org = world.org()
    response = await org.client.get(f"/leaderboard?{query}", headers=org.member)
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"


async def test_discipline_leaderboard_ranks_by_points_in_it(world: World) -> None:
    org = world.org()
    red = await make_discipline(world.db, org_id=org.id, shape=[[[5, 5, 8]]])
    blue = await make_discipline(world.db, org_id=None, shape=[[[100]]])
    teams = {n: (await org.create_team(n))["Id"] for n in ["Ant", "Bee", "Cat", "Dog", "Eel"]}
    await completed(org, teams["Ant"], blue.task(0, 0, 0), at(1))  # only elsewhere
    await completed(org, teams["Bee"], red.task(0, 0, 0), at(4))
    await completed(org, teams["Bee"], red.task(0, 0, 1), at(6))
    await completed(org, teams["Cat"], red.task(0, 0, 2), at(2))
    await completed(org, teams["Dog"], red.task(0, 0, 0), at(3))
    await completed(org, teams["Dog"], red.task(0, 0, 1), at(5))
    board = await _board(org, f"?discipline={red.id}")
    assert _names(board) == ["Dog", "Bee", "Cat", "Ant", "Eel"]
    assert [e["Score"] for e in board] == [10, 10, 8, 0, 0]
    assert [e["TasksCompleted"] for e in board] == [2, 2, 1, 0, 0]
    assert [e["ReachedAt"] for e in board] == [at(5), at(6), at(2), None, None]
    assert [e["Rank"] for e in board] == [1, 2, 3, 4, 5]
    paged = await _board(org, f"?discipline={red.id}&limit=2&offset=2")
    assert [(e["Rank"], e["Name"]) for e in paged] == [(3, "Cat"), (4, "Ant")]
    overall = await _board(org, f"?discipline={blue.id}")
    assert _names(overall)[0] == "Ant"


async def test_unknown_or_foreign_discipline_is_404(world: World) -> None:
    org, other = world.org(), world.org()
    foreign = await make_discipline(world.db, org_id=other.id, shape=[[[1]]])
    for value in [str(uuid.uuid4()), str(foreign.id), "not-a-uuid"]:
        for path in ("/leaderboard", "/leaderboard/graph"):
            response = await org.client.get(f"{path}?discipline={value}", headers=org.member)
            assert response.status_code == 404, (path, value)


async def test_each_organization_sees_only_its_teams(world: World) -> None:
    org, other = world.org(), world.org()
    shared = await make_discipline(world.db, org_id=None, shape=[[[9]]])
    mine = await org.create_team("Mine")
    await other.create_team("Theirs")
    await completed(org, mine["Id"], shared.task(0, 0, 0))
    assert _names(await _board(org)) == ["Mine"]
    assert _names(await _board(other)) == ["Theirs"]
    assert _names(await _board(other, f"?discipline={shared.id}")) == ["Theirs"]


async def test_leaderboard_needs_a_token(world: World) -> None:
    response = await world.client.get("/leaderboard")
    assert response.status_code == 401
