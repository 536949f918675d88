"""The demo organization: a newcomer's first leaderboard and graph are alive."""

from __future__ import annotations

import datetime as dt

import pytest

from questline.demo.loader import ADMIN_TEAM, DEMO_ORG_ID, TEAM_NAMES, load_demo
from questline.web.identity import Role
from tests.factories import World, bearer
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def test_demo_has_teams_disciplines_and_a_week_of_progress(
    world: World, app_state: AppHarness
) -> None:
    assert await load_demo(app_state.db, app_state.settings) is True
    assert await load_demo(app_state.db, app_state.settings) is False  # loads once
    headers = bearer(world.tokens.mint(role=Role.MEMBER, org_id=DEMO_ORG_ID, subject="newcomer"))
    client = world.client

    teams = (await client.get("/team", headers=headers)).json()
    assert sorted(t["Name"] for t in teams) == sorted(TEAM_NAMES)
    assert [t["Name"] for t in teams if t["IsAdminTeam"]] == [ADMIN_TEAM]

    disciplines = (await client.get("/discipline", headers=headers)).json()
    assert sorted(d["Color"] for d in disciplines) == ["Green", "Purple", "Red"]
    assert all(d["TaskCount"] >= 9 for d in disciplines)
    full = (await client.get(f"/discipline/{disciplines[0]['Id']}", headers=headers)).json()
    assert full["Resources"]
    assert full["Levels"][0]["Quests"][0]["Tasks"][0]["Resources"]

    board = (await client.get("/leaderboard", headers=headers)).json()
    assert len(board) == len(TEAM_NAMES) - 1
    assert ADMIN_TEAM not in [e["Name"] for e in board]
    scores = [e["Score"] for e in board]
    assert scores == sorted(scores, reverse=True)
    assert len(set(scores)) >= 6  # a race, not a tie
    assert all(score > 0 for score in scores)

    graph = (await client.get("/leaderboard/graph?top=10", headers=headers)).json()
    assert len(graph) == 10
    now = dt.datetime.now(dt.UTC)
    for series in graph:
        times = [dt.datetime.fromisoformat(p["At"]) for p in series["Points"]]
        assert len(times) >= 4
        assert times == sorted(times)
        assert now - dt.timedelta(days=9) < times[0] < now - dt.timedelta(days=7)
        assert times[-1] < now
        assert series["Points"][-1]["Score"] == next(
            e["Score"] for e in board if e["TeamId"] == series["TeamId"]
        )

    admin = next(t for t in teams if t["IsAdminTeam"])
    overview = (await client.get(f"/team/{admin['Id']}/overview", headers=headers)).json()
    assert overview["Rank"] is None
    assert len(overview["Disciplines"]) == 3


async def test_the_demo_has_a_discipline_learners_complete_themselves(
    world: World, app_state: AppHarness
) -> None:
    assert await load_demo(app_state.db, app_state.settings) is True
    admin = bearer(world.tokens.mint(role=Role.ADMIN, org_id=DEMO_ORG_ID, subject="admin"))
    listed = (await world.client.get("/discipline", headers=admin)).json()
    green = next(d for d in listed if d["Color"] == "Green")
    document = (await world.client.get(f"/discipline/{green['Id']}", headers=admin)).json()
    kinds = {
        task["Check"]["Kind"]
        for level in document["Levels"]
        for quest in level["Quests"]
        for task in quest["Tasks"]
    }
    assert kinds == {"Admin", "Self", "Answer", "Review"}
