"""Deleting a discipline or removing tasks in a PUT: 409 when teams completed them,
unless ``?force=true``, which withdraws that progress (negative steps, lower scores)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.disciplines.factories import (
    create_discipline,
    discipline_document,
    editable,
    task_ids,
)
from tests.factories import World, bearer
from tests.progress.factories import at, completed, history, score_of

pytestmark = pytest.mark.anyio


async def _scored_teams(world: World) -> tuple[Any, dict[str, Any], list[str], list[str]]:
    org = world.org()
    discipline = await create_discipline(
        world.client, org.admin, levels=1, quests=2, tasks=2, points=None
    )
    tasks = task_ids(discipline)  # points 1, 2, 3, 4
    first, second, idle = [await org.create_team() for _ in range(3)]
    await completed(org, first["Id"], tasks[0], at(1))
    await completed(org, first["Id"], tasks[3], at(2))
    await completed(org, second["Id"], tasks[3], at(3))
    return org, discipline, tasks, [first["Id"], second["Id"], idle["Id"]]


async def test_delete_with_progress_is_409_naming_the_teams_then_force_withdraws(
    world: World,
) -> None:
    org, discipline, _, (first, second, idle) = await _scored_teams(world)
    url = f"/discipline/{discipline['Id']}"
    refused = await world.client.delete(url, headers=org.admin)
    assert refused.status_code == 409
    assert "2 teams" in refused.json()["detail"]
    assert (await world.client.get(url, headers=org.admin)).status_code == 200
    assert await score_of(org, first) == 5
    forced = await world.client.delete(f"{url}?force=true", headers=org.admin)
    assert forced.status_code == 204, forced.text
    assert (await world.client.get(url, headers=org.admin)).status_code == 404
    assert [await score_of(org, t) for t in (first, second, idle)] == [0, 0, 0]
    rows = await history(world.db, first)
    assert [(r.kind, r.delta, r.score_after) for r in rows] == [
        ("Completed", 1, 1),
        ("Completed", 4, 5),
        ("TaskRemoved", -1, 4),
        ("TaskRemoved", -4, 0),
    ]
    assert [(r.kind, r.delta) for r in await history(world.db, second)][-1] == ("TaskRemoved", -4)
    progress = await world.client.get(f"/team/{first}/progress", headers=org.member)
    assert progress.json() == []


async def test_put_removing_completed_tasks_needs_force(world: World) -> None:
    org, discipline, tasks, (first, second, _) = await _scored_teams(world)
    url = f"/discipline/{discipline['Id']}"
    document = editable(discipline)
    # keep every task but the one worth 4 points (completed by both teams)
    document["Levels"][0]["Quests"][1]["Tasks"] = document["Levels"][0]["Quests"][1]["Tasks"][:1]
    refused = await world.client.put(url, json=document, headers=org.admin)
    assert refused.status_code == 409, refused.text
    assert "2 teams" in refused.json()["detail"]
    assert await score_of(org, first) == 5
    forced = await world.client.put(f"{url}?force=true", json=document, headers=org.admin)
    assert forced.status_code == 200, forced.text
    assert await score_of(org, first) == 1
    assert await score_of(org, second) == 0
    # the kept task keeps its completion
    kept = await world.client.get(f"/team/{first}/progress", headers=org.member)
    assert [c["TaskId"] for c in kept.json()] == [tasks[0]]
    # removing tasks nobody completed needs no force
    document["Levels"][0]["Quests"][0]["Tasks"] = document["Levels"][0]["Quests"][0]["Tasks"][:1]
    quiet = await world.client.put(url, json=document, headers=org.admin)
    assert quiet.status_code == 200, quiet.text
    assert await score_of(org, first) == 1


async def test_forced_delete_of_a_global_discipline_withdraws_in_every_organization(
    world: World,
) -> None:
    operator = bearer(world.operator_token())
    discipline = await create_discipline(
        world.client, operator, discipline_document(levels=1, quests=1, tasks=2, points=6)
    )
    tasks = task_ids(discipline)
    teams = []
    for _ in range(2):
        org = world.org()
        team = await org.create_team()
        await completed(org, team["Id"], tasks[0])
        await completed(org, team["Id"], tasks[1])
        teams.append((org, team["Id"]))
    archived_org, archived = teams[1]
    await world.client.patch(
        f"/team/{archived}", json={"Status": "Archived"}, headers=archived_org.admin
    )
    url = f"/discipline/{discipline['Id']}"
    refused = await world.client.delete(url, headers=operator)
    assert refused.status_code == 409
    assert "2 teams" in refused.json()["detail"]
    forced = await world.client.delete(f"{url}?force=true", headers=operator)
    assert forced.status_code == 204, forced.text
    for org, team_id in teams:
        assert await score_of(org, team_id) == 0
        assert [r.delta for r in await history(world.db, team_id)] == [6, 6, -6, -6]


async def test_member_cannot_force_a_delete(world: World) -> None:
    org, discipline, _, (first, _, _) = await _scored_teams(world)
    response = await world.client.delete(
        f"/discipline/{discipline['Id']}?force=true", headers=org.member
    )
    assert response.status_code == 403
    assert await score_of(org, first) == 5
