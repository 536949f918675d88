"""Parallel completions: one task counts once; many tasks all count (no lost update)."""

from __future__ import annotations

import asyncio

import pytest

from tests.factories import World
from tests.progress.factories import complete, history, make_discipline, score_of

pytestmark = pytest.mark.anyio


async def test_twenty_parallel_completions_of_one_task_count_once(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[15]]])
    responses = await asyncio.gather(
        *(complete(org, team["Id"], tree.task(0, 0, 0)) for _ in range(20))
    )
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * 19 + [201], [r.text for r in responses if r.status_code >= 300]
    assert {r.json()["Score"] for r in responses} == {15}
    assert await score_of(org, team["Id"]) == 15
    assert [(h.delta, h.score_after) for h in await history(world.db, team["Id"])] == [(15, 15)]


async def test_twenty_parallel_completions_of_different_tasks_all_count(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    points = list(range(1, 21))
    tree = await make_discipline(world.db, org_id=org.id, shape=[[points]])
    responses = await asyncio.gather(*(complete(org, team["Id"], t) for t in tree.tasks))
    assert {r.status_code for r in responses} == {201}, [r.text for r in responses]
    assert await score_of(org, team["Id"]) == sum(points)
    rows = await history(world.db, team["Id"])
    assert len(rows) == 20
    # every step saw the one before it: the scores after are the running sums
    running = 0
    for row in rows:
        running += row.delta
        assert row.score_after == running
    assert sorted(r.json()["Score"] for r in responses) == [r.score_after for r in rows]


async def test_parallel_completions_and_withdrawals_keep_score_equal_to_history(
    world: World,
) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[3] * 10]])
    for task in tree.tasks[:5]:
        assert (await complete(org, team["Id"], task)).status_code == 201
    withdrawals = [
        world.client.delete(f"/team/{team['Id']}/progress/{t}", headers=org.admin)
        for t in tree.tasks[:5]
    ]
    completions = [complete(org, team["Id"], t) for t in tree.tasks[5:]]
    responses = await asyncio.gather(*withdrawals, *completions)
    assert sorted(r.status_code for r in responses) == [201] * 5 + [204] * 5
    score = await score_of(org, team["Id"])
    assert score == 15
    assert sum(h.delta for h in await history(world.db, team["Id"])) == score
