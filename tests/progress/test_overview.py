"""``GET /team/{id}/overview``: exact counts per discipline, level and quest."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from questline.disciplines.models import Color
from tests.factories import World
from tests.progress.factories import at, completed, make_discipline
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


def _counts(node: dict[str, Any]) -> tuple[int, int, int, int, int]:
    return (
        node["TasksCompleted"],
        node["TasksTotal"],
        node["PointsEarned"],
        node["PointsTotal"],
        node["Percent"],
    )


async def test_overview_counts_every_discipline_level_and_quest(world: World) -> None:
    org, other = world.org(), world.org()
    team = await org.create_team("Rockets")
    await org.add_member(team["Id"])
    await org.add_member(team["Id"])
    await org.create_team("Idle")
    own = await make_discipline(
        world.db,
        org_id=org.id,
        title="Beta",
        color=Color.GREEN,
        shape=[[[10, 20], [5]], [[1]], []],
    )
    shared = await make_discipline(world.db, org_id=None, title="Alpha", shape=[[[3]]])
    await make_discipline(world.db, org_id=other.id, title="Aardvark", shape=[[[100]]])
    await completed(org, team["Id"], own.task(0, 0, 0), at(1))
    await completed(org, team["Id"], own.task(0, 1, 0), at(5))

    response = await world.client.get(f"/team/{team['Id']}/overview", headers=org.member)
    assert response.status_code == 200, response.text
    body = response.json()
    assert {k: v for k, v in body.items() if k != "Disciplines"} == {
        "TeamId": team["Id"],
        "Name": "Rockets",
        "Status": "Active",
        "IsAdminTeam": False,
        "IsSurveyCompleted": False,
        "Score": 15,
        "Rank": 1,
        "MemberCount": 2,
        "TasksCompleted": 2,
        "LastActivityAt": at(5),
        "Contributions": None,  # a member of another team: not shown
    }
    assert [d["Title"] for d in body["Disciplines"]] == ["Alpha", "Beta"]
    alpha, beta = body["Disciplines"]
    assert alpha["DisciplineId"] == str(shared.id)
    assert _counts(alpha) == (0, 1, 0, 3, 0)
    assert alpha["CurrentLevelId"] == str(shared.level_ids[0])
    assert beta["Color"] == "Green"
    assert _counts(beta) == (2, 4, 15, 36, 50)
    assert beta["CurrentLevelId"] == str(own.level_ids[0])
    levels = beta["Levels"]
    assert [(lv["LevelId"], lv["Title"], lv["Order"]) for lv in levels] == [
        (str(own.level_ids[0]), "L0", 0),
        (str(own.level_ids[1]), "L1", 1),
        (str(own.level_ids[2]), "L2", 2),
    ]
    assert [_counts(lv) for lv in levels] == [(2, 3, 15, 35, 66), (0, 1, 0, 1, 0), (0, 0, 0, 0, 0)]
    quests = levels[0]["Quests"]
    assert [(q["QuestId"], q["Title"], q["Order"]) for q in quests] == [
        (str(own.quest_ids[0][0]), "Q0.0", 0),
        (str(own.quest_ids[0][1]), "Q0.1", 1),
    ]
    assert [_counts(q) for q in quests] == [(1, 2, 10, 30, 50), (1, 1, 5, 5, 100)]
    assert levels[2]["Quests"] == []


async def test_current_level_moves_on_and_is_null_when_all_complete(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[1, 1]], [[2]], []])
    url = f"/team/{team['Id']}/overview"

    async def current() -> str | None:
        body = (await world.client.get(url, headers=org.member)).json()
        value = body["Disciplines"][0]["CurrentLevelId"]
        return None if value is None else str(value)

    assert await current() == str(tree.level_ids[0])
    await completed(org, team["Id"], tree.task(0, 0, 0))
    assert await current() == str(tree.level_ids[0])
    await completed(org, team["Id"], tree.task(0, 0, 1))
    assert await current() == str(tree.level_ids[1])
    await completed(org, team["Id"], tree.task(1, 0, 0))
    assert await current() is None  # the last level has no tasks: nothing left to do
    body = (await world.client.get(url, headers=org.member)).json()
    assert body["Disciplines"][0]["Percent"] == 100


async def test_rank_is_null_for_admin_and_archived_teams(world: World) -> None:
    org = world.org()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[5, 10]]])
    leader, second = await org.create_team("A"), await org.create_team("B")
    await completed(org, leader["Id"], tree.task(0, 0, 1))
    await completed(org, second["Id"], tree.task(0, 0, 0))

    async def rank(team_id: str) -> int | None:
        body = (await world.client.get(f"/team/{team_id}/overview", headers=org.member)).json()
        return body["Rank"] if body["Rank"] is None else int(body["Rank"])

    assert [await rank(leader["Id"]), await rank(second["Id"])] == [1, 2]
    await world.client.post(f"/team/{leader['Id']}/isadminteam", headers=org.admin)
    assert [await rank(leader["Id"]), await rank(second["Id"])] == [None, 1]
    await world.client.patch(
        f"/team/{second['Id']}", json={"Status": "Archived"}, headers=org.admin
    )
    assert await rank(second["Id"]) is None
    await world.client.post(f"/team/{leader['Id']}/isadminteam", headers=org.admin)
    assert await rank(leader["Id"]) == 1
    body = (await world.client.get(f"/team/{leader['Id']}/overview", headers=org.member)).json()
    assert body["Score"] == 10
    assert body["IsAdminTeam"] is False


@contextmanager
def counting_statements(state: AppHarness) -> Iterator[list[str]]:
    statements: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    def count_lean(statement: str) -> None:
        statements.append(statement)

    engine = state.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    # The read model's lean misses run on the driver, past the engine's events.
    state.readmodel.lean.listeners.append(count_lean)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", count)
        state.readmodel.lean.listeners.remove(count_lean)


async def test_overview_costs_the_same_statements_for_any_tree_size(
    world: World, app_state: AppHarness
) -> None:
    org = world.org()
    team = await org.create_team()
    small = await make_discipline(world.db, org_id=org.id, shape=[[[1]]])
    await completed(org, team["Id"], small.task(0, 0, 0))
    url = f"/team/{team['Id']}/overview"
    assert (await world.client.get(url, headers=org.member)).status_code == 200  # warm-up
    app_state.readmodel.cache.drop_bodies()  # count a miss: a hit sends no statement at all
    with counting_statements(app_state) as warm_tree:
        assert (await world.client.get(url, headers=org.member)).status_code == 200
    # The organization's tree is kept per version: a miss is then one statement, with
    # no transaction (the read model's lean miss, readmodel/lean.py).
    assert not any(s.startswith("BEGIN") for s in warm_tree), warm_tree
    assert len(warm_tree) == 1, warm_tree
    app_state.readmodel.cache.drop_bodies()
    app_state.readmodel.forget_memos()
    with counting_statements(app_state) as few:
        small_body = (await world.client.get(url, headers=org.member)).json()
    for index in range(6):
        big = await make_discipline(
            world.db, org_id=org.id if index % 2 else None, shape=[[[1] * 5] * 4] * 5
        )
        for task in big.tasks[:7]:
            await completed(org, team["Id"], task)
    app_state.readmodel.cache.drop_bodies()
    app_state.readmodel.forget_memos()
    with counting_statements(app_state) as many:
        big_body = (await world.client.get(url, headers=org.member)).json()
    assert len(small_body["Disciplines"]) == 1
    assert len(big_body["Disciplines"]) == 7
    assert big_body["TasksCompleted"] == 1 + 6 * 7
    assert len(many) == len(few), many
    assert len(few) <= 10, few
