"""Windowed and around-a-team rankings against a brute-force reference on random data.

Each example builds a fresh organization through the API (teams, some admin or
archived; two disciplines; completions at random past times, some withdrawn) and
compares ``GET /leaderboard`` with what the rules say, computed in Python.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from questline.app import create_app
from questline.config import Settings
from tests.factories import World
from tests.support.harness import AppHarness

BASE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
POINTS = st.sampled_from([0, 1, 5, 10, 10, 20])


@dataclass
class Plan:
    teams: list[tuple[bool, bool]]
    """(admin, archived) per team."""
    tasks: list[tuple[int, int]]
    """(discipline index, points) per task."""
    completions: list[tuple[int, int, int, bool]]
    """(team, task, minute, withdrawn)."""
    queries: list[dict[str, Any]]


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    teams = draw(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=7))
    teams = [
        (admin and draw(st.booleans()), archived and draw(st.booleans()))
        for admin, archived in teams
    ]
    tasks = draw(st.lists(st.tuples(st.integers(0, 1), POINTS), min_size=1, max_size=6))
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, len(teams) - 1), st.integers(0, len(tasks) - 1)),
            unique=True,
            max_size=18,
        )
    )
    completions = [
        (team, task, draw(st.integers(0, 40)), draw(st.booleans()) and draw(st.booleans()))
        for team, task in pairs
    ]
    minute = st.one_of(st.none(), st.integers(-2, 42))
    queries = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "from": minute,
                    "to": minute,
                    "discipline": st.one_of(st.none(), st.integers(0, 1)),
                    "limit": st.integers(1, 8),
                    "offset": st.integers(0, 4),
                    "around": st.one_of(st.none(), st.integers(0, len(teams) - 1)),
                }
            ),
            min_size=1,
            max_size=6,
        )
    )
    return Plan(teams=teams, tasks=tasks, completions=completions, queries=queries)


def at(minute: int) -> dt.datetime:
    return BASE + dt.timedelta(minutes=minute)


def iso(value: dt.datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


@dataclass
class Built:
    names: list[str]
    team_ids: list[str]
    task_ids: list[str]
    discipline_ids: list[str]


async def build(client: httpx.AsyncClient, headers: dict[str, str], plan: Plan) -> Built:
    discipline_ids: list[str] = []
    task_ids: list[str] = [""] * len(plan.tasks)
    for index in range(2):
        mine = [(i, points) for i, (d, points) in enumerate(plan.tasks) if d == index]
        body = {
            "Title": f"D{index}",
            "Description": "x",
            "Levels": [
                {"Title": "L", "Quests": [{"Title": "Q", "Tasks": [
                    {"Title": f"T{i}", "Points": points} for i, points in mine
                ]}]}
            ] if mine else [],
        }  # fmt: skip
        created = await client.post("/discipline", json=body, headers=headers)
        assert created.status_code == 201, created.text
        discipline_ids.append(created.json()["Id"])
        if mine:
            made = created.json()["Levels"][0]["Quests"][0]["Tasks"]
            for (i, _), task in zip(mine, made, strict=True):
                task_ids[i] = task["Id"]
    names = [f"Team {chr(65 + i)}" for i in range(len(plan.teams))]
    team_ids = []
    for name in names:
        created = await client.post("/team", json={"name": name}, headers=headers)
        assert created.status_code == 201, created.text
        team_ids.append(created.json()["Id"])
    for team, task, minute, withdrawn in plan.completions:
        url = f"/team/{team_ids[team]}/progress"
        done = await client.post(
            url, json={"TaskId": task_ids[task], "CompletedAt": iso(at(minute))}, headers=headers
        )
        assert done.status_code == 201, done.text
        if withdrawn:
            gone = await client.delete(f"{url}/{task_ids[task]}", headers=headers)
            assert gone.status_code == 204
    for team_id, (admin, archived) in zip(team_ids, plan.teams, strict=True):
        if admin:
            flagged = await client.post(
                f"/team/{team_id}/isadminteam", json={"IsAdminTeam": True}, headers=headers
            )
            assert flagged.status_code == 200
        if archived:
            changed = await client.patch(
                f"/team/{team_id}", json={"Status": "Archived"}, headers=headers
            )
            assert changed.status_code == 200
    return Built(names, team_ids, task_ids, discipline_ids)


def reference(plan: Plan, built: Built, query: dict[str, Any]) -> list[dict[str, Any]]:
    """The rules, by brute force: every ranked team with its counted completions."""
    rows = []
    for index, (admin, archived) in enumerate(plan.teams):
        if admin or archived:
            continue
        counted = [
            (plan.tasks[task][1], at(minute))
            for team, task, minute, withdrawn in plan.completions
            if team == index
            and not withdrawn
            and (query["discipline"] is None or plan.tasks[task][0] == query["discipline"])
            and (query["from"] is None or at(minute) >= at(query["from"]))
            and (query["to"] is None or at(minute) <= at(query["to"]))
        ]
        score = sum(points for points, _ in counted)
        earned = [when for points, when in counted if points > 0]
        rows.append(
            {
                "TeamId": built.team_ids[index],
                "Name": built.names[index],
                "Score": score,
                "TasksCompleted": len(counted),
                "ReachedAt": iso(max(earned)) if earned else None,
            }
        )
    rows.sort(
        key=lambda r: (
            -r["Score"],
            r["ReachedAt"] is None,
            r["ReachedAt"] or "",
            r["Name"].casefold(),
        )
    )
    return [{"Rank": i + 1, **row} for i, row in enumerate(rows)]


def params(built: Built, query: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {"limit": query["limit"], "from": None, "to": None}
    found["from"] = iso(at(query["from"])) if query["from"] is not None else None
    found["to"] = iso(at(query["to"])) if query["to"] is not None else None
    if query["discipline"] is not None:
        found["discipline"] = built.discipline_ids[query["discipline"]]
    if query["around"] is not None:
        found["around"] = built.team_ids[query["around"]]
    else:
        found["offset"] = query["offset"]
    return {k: v for k, v in found.items() if v is not None}


def windowed(query: dict[str, Any]) -> bool:
    return query["from"] is not None or query["to"] is not None


async def check(settings_: Settings, plan: Plan) -> None:
    app = create_app(settings_)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://q.test") as client:
            world = World(client=client, tokens=AppHarness(app).tokens, db=app.state.questline.db)
            org = world.org()
            built = await build(client, org.admin, plan)
            for query in plan.queries:
                await check_query(client, org.admin, plan, built, query)
    finally:
        await app.state.questline.db.dispose()


async def check_query(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    plan: Plan,
    built: Built,
    query: dict[str, Any],
) -> None:
    response = await client.get("/leaderboard", params=params(built, query), headers=headers)
    start, end = query["from"], query["to"]
    if start is not None and end is not None and start > end:
        assert response.status_code == 422
        return
    expected = reference(plan, built, query)
    limit = query["limit"]
    if query["around"] is not None:
        admin, archived = plan.teams[query["around"]]
        if admin or archived:
            assert response.status_code == 422, response.text
            return
        assert response.status_code == 200, response.text
        position = next(
            i for i, r in enumerate(expected) if r["TeamId"] == built.team_ids[query["around"]]
        )
        first = max(0, position - (limit - 1) // 2)
        last = position + (limit - 1 - (limit - 1) // 2)
        page = expected[first : last + 1]
    else:
        assert response.status_code == 200, response.text
        page = expected[query["offset"] : query["offset"] + limit]
    got = response.json()
    if windowed(query):
        assert got == page, (query, got, page)
    else:
        # The plain rankings keep tie rules of their own (the time the stored score was
        # reached; the discipline's last completion): scores and ranks are compared.
        assert [e["Score"] for e in got] == [r["Score"] for r in page]
        assert [e["Rank"] for e in got] == [r["Rank"] for r in page]
    if query["around"] is not None:
        assert built.team_ids[query["around"]] in [e["TeamId"] for e in got]


@pytest.mark.slow
def test_rankings_match_the_brute_force_reference(settings: Settings) -> None:
    @hypothesis_settings(
        max_examples=25,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(plan=plans())
    def run(plan: Plan) -> None:
        anyio.run(check, settings, plan)

    run()


@pytest.mark.anyio
async def test_around_the_top_and_bottom_gives_fewer_entries(world: World) -> None:
    org = world.org()
    teams = [await org.create_team(f"T{i}") for i in range(5)]
    top = await world.client.get(
        "/leaderboard", params={"around": teams[0]["Id"], "limit": 3}, headers=org.member
    )
    assert [e["Name"] for e in top.json()] == ["T0", "T1"]
    bottom = await world.client.get(
        "/leaderboard", params={"around": teams[4]["Id"], "limit": 4}, headers=org.member
    )
    assert [(e["Rank"], e["Name"]) for e in bottom.json()] == [(4, "T3"), (5, "T4")]
    middle = await world.client.get(
        "/leaderboard", params={"around": teams[2]["Id"], "limit": 3}, headers=org.member
    )
    assert [e["Rank"] for e in middle.json()] == [2, 3, 4]


@pytest.mark.anyio
async def test_around_refuses_other_organizations_unranked_teams_and_offset(
    world: World,
) -> None:
    org, other = world.org(), world.org()
    mine = await org.create_team()
    theirs = await other.create_team()
    for team_id, status in ((theirs["Id"], 404), ("not-a-uuid", 404), (str(uuid.uuid4()), 404)):
        response = await world.client.get(
            "/leaderboard", params={"around": team_id}, headers=org.member
        )
        assert response.status_code == status
        assert theirs["Name"] not in response.text
    flagged = await world.client.post(
        f"/team/{mine['Id']}/isadminteam", json={"IsAdminTeam": True}, headers=org.admin
    )
    assert flagged.status_code == 200
    unranked = await world.client.get(
        "/leaderboard", params={"around": mine["Id"]}, headers=org.member
    )
    assert unranked.status_code == 422
    other_team = await org.create_team()
    with_offset = await world.client.get(
        "/leaderboard", params={"around": other_team["Id"], "offset": 1}, headers=org.member
    )
    assert with_offset.status_code == 422


@pytest.mark.anyio
async def test_a_window_pages_with_a_link(world: World) -> None:
    org = world.org()
    for i in range(3):
        await org.create_team(f"W{i}")
    first = await world.client.get(
        "/leaderboard",
        params={"from": "2020-01-01T00:00:00Z", "limit": 2},
        headers=org.member,
    )
    assert first.status_code == 200
    assert [e["Name"] for e in first.json()] == ["W0", "W1"]
    assert 'rel="next"' in first.headers["Link"]
    assert "offset=2" in first.headers["Link"]
