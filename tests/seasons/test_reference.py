"""Season, bracket and per-member rankings against a brute-force reference on random
histories: completions and withdrawals recorded one by one through the API, a season
window, a freeze at the exact recording instant of one of them, brackets by tag and the
per-member order, as members and admins see them."""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from sqlalchemy import select

from questline.app import create_app
from questline.config import Settings
from questline.progress.models import ScoreEvent
from tests.factories import Org, World
from tests.seasons.support import iso
from tests.support.harness import AppHarness

BASE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TAGS = ["red", "blue"]


def at(minute: int) -> dt.datetime:
    return BASE + dt.timedelta(minutes=minute)


@dataclass
class TeamPlan:
    tags: list[str]
    members: int
    admin: bool
    archived: bool


@dataclass
class Plan:
    teams: list[TeamPlan]
    tasks: list[tuple[int, int]]
    """(discipline, points)."""
    ops: list[tuple[int, int, int | None]]
    """(team, task, minute): a completion at that minute, or (minute None) a withdrawal."""
    start: int
    end: int | None
    """None: the season ends tomorrow (so a freeze is in force)."""
    freeze: int | None
    """The index of the op whose recording instant is ``FreezesAt`` (len(ops): now)."""
    discipline: int | None
    queries: list[dict[str, Any]]


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    teams = draw(
        st.lists(
            st.builds(
                TeamPlan,
                tags=st.lists(st.sampled_from([*TAGS, "Red"]), max_size=2, unique=True),
                members=st.integers(0, 3),
                admin=st.just(False),
                archived=st.sampled_from([False, False, False, True]),
            ),
            min_size=1,
            max_size=5,
        )
    )
    tasks = draw(
        st.lists(
            st.tuples(st.integers(0, 1), st.sampled_from([0, 5, 10, 10, 20])),
            min_size=1,
            max_size=5,
        )
    )
    done: set[tuple[int, int]] = set()
    ops: list[tuple[int, int, int | None]] = []
    for _ in range(draw(st.integers(0, 12))):
        team = draw(st.integers(0, len(teams) - 1))
        task = draw(st.integers(0, len(tasks) - 1))
        if (team, task) in done:
            ops.append((team, task, None))
            done.discard((team, task))
        else:
            ops.append((team, task, draw(st.integers(0, 40))))
            done.add((team, task))
    start = draw(st.integers(0, 30))
    end = draw(st.one_of(st.none(), st.integers(start + 1, 45)))
    freeze = None if end is not None else draw(st.one_of(st.none(), st.integers(0, len(ops))))
    queries = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "admin": st.booleans(),
                    "frozen": st.booleans(),
                    "tag": st.one_of(st.none(), st.sampled_from([*TAGS, "RED", "green"])),
                    "perMember": st.booleans(),
                    "discipline": st.one_of(st.none(), st.integers(0, 1)),
                }
            ),
            min_size=1,
            max_size=5,
        )
    )
    discipline = draw(st.one_of(st.none(), st.integers(0, 1)))
    return Plan(teams, tasks, ops, start, end, freeze, discipline, queries)


@dataclass
class Built:
    team_ids: list[str]
    task_ids: list[str]
    discipline_ids: list[str]
    recorded: list[dt.datetime]
    season_id: str
    freeze_at: dt.datetime | None


async def build(org: Org, app: AppHarness, plan: Plan) -> Built:
    client = org.client
    discipline_ids: list[str] = []
    task_ids = [""] * len(plan.tasks)
    for index in range(2):
        mine = [(i, p) for i, (d, p) in enumerate(plan.tasks) if d == index]
        body = {
            "Title": f"D{index}",
            "Description": "x",
            "Levels": [{"Title": "L", "Quests": [{"Title": "Q", "Tasks": [
                {"Title": f"T{i}", "Points": p} for i, p in mine
            ]}]}] if mine else [],
        }  # fmt: skip
        created = await client.post("/discipline", json=body, headers=org.admin)
        assert created.status_code == 201, created.text
        discipline_ids.append(created.json()["Id"])
        if mine:
            made = created.json()["Levels"][0]["Quests"][0]["Tasks"]
            for (i, _), task in zip(mine, made, strict=True):
                task_ids[i] = task["Id"]
    team_ids = []
    for index, team in enumerate(plan.teams):
        created = await client.post(
            "/team", json={"name": f"Team {chr(65 + index)}", "tags": team.tags}, headers=org.admin
        )
        assert created.status_code == 201, created.text
        team_ids.append(created.json()["Id"])
        for _ in range(team.members):
            assert (await org.add_member(team_ids[-1])).status_code == 201
    for team, task, minute in plan.ops:
        url = f"/team/{team_ids[team]}/progress"
        if minute is None:
            gone = await client.delete(f"{url}/{task_ids[task]}", headers=org.admin)
            assert gone.status_code == 204, gone.text
        else:
            body = {"TaskId": task_ids[task], "CompletedAt": iso(at(minute))}
            done = await client.post(url, json=body, headers=org.admin)
            assert done.status_code == 201, done.text
    async with app.db.session(write=False) as session:
        recorded = list(
            (
                await session.execute(
                    select(ScoreEvent.recorded_at)
                    .where(ScoreEvent.organization_id == org.id)
                    .order_by(ScoreEvent.recorded_at, ScoreEvent.id)
                )
            ).scalars()
        )
    assert len(recorded) == len(plan.ops)
    assert all(a < b for a, b in itertools.pairwise(recorded))
    for index, team in enumerate(plan.teams):
        if team.archived:
            changed = await client.patch(
                f"/team/{team_ids[index]}", json={"Status": "Archived"}, headers=org.admin
            )
            assert changed.status_code == 200
    now = dt.datetime.now(dt.UTC)
    end = now + dt.timedelta(days=1) if plan.end is None else at(plan.end)
    freeze_at = None
    if plan.freeze is not None:
        freeze_at = recorded[plan.freeze] if plan.freeze < len(recorded) else now
    body: dict[str, Any] = {"Name": "S", "StartsAt": iso(at(plan.start)), "EndsAt": iso(end)}
    if freeze_at is not None:
        body["FreezesAt"] = iso(freeze_at)
    if plan.discipline is not None:
        body["DisciplineId"] = discipline_ids[plan.discipline]
    season = await client.post("/season", json=body, headers=org.admin)
    assert season.status_code == 201, season.text
    return Built(team_ids, task_ids, discipline_ids, recorded, season.json()["Id"], freeze_at)


def reference(plan: Plan, built: Built, query: dict[str, Any]) -> list[dict[str, Any]]:
    frozen = plan.freeze is not None and (not query["admin"] or query["frozen"])
    # The completions that existed: after every op, or only those recorded before the
    # freeze instant (the ops before the one recorded at it).
    upto = len(plan.ops) if not frozen else plan.freeze
    existing: dict[tuple[int, int], int] = {}
    for team, task, minute in plan.ops[:upto]:
        if minute is None:
            del existing[(team, task)]
        else:
            existing[(team, task)] = minute
    discipline = query["discipline"] if query["discipline"] is not None else plan.discipline
    rows = []
    for index, team in enumerate(plan.teams):
        if team.admin or team.archived:
            continue
        if query["tag"] is not None and query["tag"].casefold() not in {
            t.casefold() for t in team.tags
        }:
            continue
        counted = [
            (plan.tasks[task][1], at(minute))
            for (owner, task), minute in existing.items()
            if owner == index
            and at(plan.start) <= at(minute)
            and (plan.end is None or at(minute) < at(plan.end))
            and (discipline is None or plan.tasks[task][0] == discipline)
        ]
        score = sum(p for p, _ in counted)
        changed = [when for p, when in counted if p != 0]
        row: dict[str, Any] = {
            "TeamId": built.team_ids[index],
            "Name": f"Team {chr(65 + index)}",
            "Score": score,
            "TasksCompleted": len(counted),
            "ReachedAt": iso(max(changed)) if changed else None,
        }
        value: Fraction = Fraction(score)
        if query["perMember"]:
            row["MemberCount"] = team.members
            row["PointsPerMember"] = round(score / max(1, team.members), 4)
            value = Fraction(score, max(1, team.members))
        rows.append(
            (
                -value,
                max(changed) if changed else dt.datetime.max.replace(tzinfo=dt.UTC),
                row["Name"].casefold(),
                row,
            )
        )
    rows.sort(key=lambda r: r[:3])
    return [{"Rank": i + 1, **r[3]} for i, r in enumerate(rows)]


async def check(settings_: Settings, plan: Plan) -> None:
    app = create_app(settings_)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://q.test") as client:
            harness = AppHarness(app)
            world = World(client=client, tokens=harness.tokens, db=app.state.questline.db)
            org = world.org()
            built = await build(org, harness, plan)
            for query in plan.queries:
                params: dict[str, Any] = {"season": built.season_id, "limit": 1000}
                if query["frozen"]:
                    params["frozen"] = "true"
                if query["tag"] is not None:
                    params["tag"] = query["tag"]
                if query["perMember"]:
                    params["by"] = "perMember"
                if query["discipline"] is not None:
                    params["discipline"] = built.discipline_ids[query["discipline"]]
                headers = org.admin if query["admin"] else org.member
                response = await client.get("/leaderboard", params=params, headers=headers)
                assert response.status_code == 200, response.text
                expected = reference(plan, built, query)
                assert response.json() == expected, (query, response.json(), expected)
                frozen = plan.freeze is not None and (not query["admin"] or query["frozen"])
                if frozen:
                    assert built.freeze_at is not None
                    assert response.headers["Questline-Frozen-At"] == iso(built.freeze_at)
                else:
                    assert "Questline-Frozen-At" not in response.headers
    finally:
        await app.state.questline.db.dispose()


@pytest.mark.slow
def test_season_rankings_match_the_brute_force_reference(settings: Settings) -> None:
    @hypothesis_settings(
        max_examples=20,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(plan=plans())
    def run(plan: Plan) -> None:
        anyio.run(check, settings, plan)

    run()
