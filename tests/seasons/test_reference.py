"""Season, bracket and per-member rankings against a brute-force reference on random
histories: completions, withdrawals, point adjustments and their withdrawals recorded
one by one through the API; a season window whose bounds fall on item times (minutes
drawn from the same small range: an item at ``StartsAt`` counts, one at ``EndsAt`` does
not); a freeze at the exact recording instant of one of them (a completion's history
row, an adjustment's ``CreatedAt`` or ``WithdrawnAt``: that change and every later one
stay out of the frozen view); brackets by tag, the per-member order and ``around``, as
members and admins see them."""

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

from questline.app import create_app
from questline.config import Settings
from tests.factories import Org, World
from tests.seasons.support import iso, recorded_instants
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


Op = tuple[str, int, int, int | None]
"""("complete", team, task, minute) · ("withdraw", team, task, None) ·
("adjust", team, points, minute) · ("unadjust", team, nth adjustment of the plan, None)."""


@dataclass
class Plan:
    teams: list[TeamPlan]
    tasks: list[tuple[int, int]]
    """(discipline, points)."""
    ops: list[Op]
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
    standing: list[int] = []
    """The indexes (in order made) of the adjustments not withdrawn."""
    made = 0
    ops: list[Op] = []
    for _ in range(draw(st.integers(0, 14))):
        team = draw(st.integers(0, len(teams) - 1))
        kind = draw(st.sampled_from(["task", "task", "task", "adjust"]))
        if kind == "adjust" and standing and draw(st.booleans()):
            nth = draw(st.sampled_from(standing))
            standing.remove(nth)
            ops.append(("unadjust", team, nth, None))
        elif kind == "adjust":
            points = draw(st.sampled_from([-15, -5, 5, 10, 25]))
            ops.append(("adjust", team, points, draw(st.integers(0, 40))))
            standing.append(made)
            made += 1
        else:
            task = draw(st.integers(0, len(tasks) - 1))
            if (team, task) in done:
                ops.append(("withdraw", team, task, None))
                done.discard((team, task))
            else:
                ops.append(("complete", team, task, draw(st.integers(0, 40))))
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
                    "around": st.one_of(st.none(), st.integers(0, len(teams) - 1)),
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
    """Each op's recording instant (the instant a freeze at it leaves it out)."""
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
    adjustments: list[tuple[str, str]] = []
    """(team id, adjustment id), in order made."""
    instants: dict[int, dt.datetime] = {}
    """The recording instant of each adjustment op: the counted rows of adjustments are
    read by ``CreatedAt`` and ``WithdrawnAt`` (their history row is stamped just after)."""
    for index, (kind, team, arg, minute) in enumerate(plan.ops):
        url = f"/team/{team_ids[team]}"
        if kind == "complete":
            body = {"TaskId": task_ids[arg], "CompletedAt": iso(at(minute or 0))}
            done = await client.post(f"{url}/progress", json=body, headers=org.admin)
            assert done.status_code == 201, done.text
        elif kind == "withdraw":
            gone = await client.delete(f"{url}/progress/{task_ids[arg]}", headers=org.admin)
            assert gone.status_code == 204, gone.text
        elif kind == "adjust":
            body = {"Points": arg, "Reason": "correction", "At": iso(at(minute or 0))}
            made = await client.post(f"{url}/adjustments", json=body, headers=org.admin)
            assert made.status_code == 201, made.text
            adjustments.append((team_ids[team], made.json()["Id"]))
            instants[index] = parse(made.json()["CreatedAt"])
        else:
            owner, adjustment_id = adjustments[arg]
            gone = await client.delete(
                f"/team/{owner}/adjustments/{adjustment_id}", headers=org.admin
            )
            assert gone.status_code == 204, gone.text
            listed = await client.get(f"/team/{owner}/adjustments", headers=org.admin)
            [row] = [a for a in listed.json() if a["Id"] == adjustment_id]
            instants[index] = parse(row["WithdrawnAt"])
    history = await recorded_instants(app.db, org.id)
    assert len(history) == len(plan.ops)  # one history row per op, in order
    assert all(a < b for a, b in itertools.pairwise(history))
    recorded = [instants.get(index, when) for index, when in enumerate(history)]
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


def parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass
class Item:
    """Something that changed a team's score: (task index or None, points, minute)."""

    task: int | None
    points: int
    minute: int


def existing_items(plan: Plan, upto: int) -> dict[int, list[Item]]:
    """Each team's items that exist after the first ``upto`` ops."""
    found: dict[int, list[Item]] = {}
    done: dict[tuple[int, int], Item] = {}
    made: list[tuple[int, Item]] = []
    for kind, team, arg, minute in plan.ops[:upto]:
        if kind == "complete":
            item = Item(arg, plan.tasks[arg][1], minute or 0)
            done[(team, arg)] = item
            found.setdefault(team, []).append(item)
        elif kind == "withdraw":
            found[team].remove(done.pop((team, arg)))
        elif kind == "adjust":
            item = Item(None, arg, minute or 0)
            made.append((team, item))
            found.setdefault(team, []).append(item)
        else:
            owner, item = made[arg]
            found[owner].remove(item)
    return found


def reference(plan: Plan, built: Built, query: dict[str, Any]) -> list[dict[str, Any]]:
    frozen = plan.freeze is not None and (not query["admin"] or query["frozen"])
    # The items that existed: after every op, or only those recorded before the freeze
    # instant (the ops before the one recorded at it).
    existing = existing_items(plan, len(plan.ops) if not frozen else plan.freeze or 0)
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
            item
            for item in existing.get(index, [])
            if plan.start <= item.minute
            and (plan.end is None or item.minute < plan.end)
            # An adjustment belongs to no discipline.
            and (
                discipline is None
                or (item.task is not None and plan.tasks[item.task][0] == discipline)
            )
        ]
        score = sum(item.points for item in counted)
        changed = [at(item.minute) for item in counted if item.points != 0]
        row: dict[str, Any] = {
            "TeamId": built.team_ids[index],
            "Name": f"Team {chr(65 + index)}",
            "Score": score,
            "TasksCompleted": sum(item.task is not None for item in counted),
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
                expected = reference(plan, built, query)
                if query["around"] is not None:
                    await check_around(client, headers, params, built, query, expected)
                response = await client.get("/leaderboard", params=params, headers=headers)
                assert response.status_code == 200, response.text
                assert response.json() == expected, (query, response.json(), expected)
                frozen = plan.freeze is not None and (not query["admin"] or query["frozen"])
                if frozen:
                    assert built.freeze_at is not None
                    assert response.headers["Questline-Frozen-At"] == iso(built.freeze_at)
                else:
                    assert "Questline-Frozen-At" not in response.headers
    finally:
        await app.state.questline.db.dispose()


async def check_around(
    client: httpx.AsyncClient,
    headers: dict[str, str],
    params: dict[str, Any],
    built: Built,
    query: dict[str, Any],
    expected: list[dict[str, Any]],
) -> None:
    """``around`` a team: the 3 entries centred on it (fewer at the edges), or 422 for a
    team that is not in the ranking (archived, or outside the bracket)."""
    team_id = built.team_ids[query["around"]]
    response = await client.get(
        "/leaderboard", params={**params, "around": team_id, "limit": 3}, headers=headers
    )
    position = next((i for i, r in enumerate(expected) if r["TeamId"] == team_id), None)
    if position is None:
        assert response.status_code == 422, response.text
        return
    assert response.status_code == 200, response.text
    assert response.json() == expected[max(0, position - 1) : position + 2], query


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
