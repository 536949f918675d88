"""Adjustments against a brute-force reference on random histories.

Each example builds a fresh organization through the API and applies a random sequence
of completions (at past times), withdrawals of completions, adjustments of either sign
(at past times) and withdrawals of adjustments; then compares, for every team, the
score history (``GET /team/{id}/graph``), the all-time leaderboard (scores, ranks and
``ReachedAt``: the tie rule) and windowed leaderboards with what the rules say,
computed in Python from the sequence alone.

Withdrawals count at the time they are made ("now"), after every past time of the
sequence; the reference knows their order, not their instant, and takes the instants
from the history (checked to rise, in the order made).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from questline.app import create_app
from questline.config import Settings
from questline.storage.db import utcnow
from tests.factories import World
from tests.support.harness import AppHarness

BASE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TASK_POINTS = [0, 5, 10]

Op = tuple[Any, ...]
"""("complete", team, task, minute) · ("uncomplete", team, task) ·
("adjust", team, points, minute) · ("unadjust", team, nth adjustment of the team)."""


def ops(teams: int) -> st.SearchStrategy[Op]:
    team = st.integers(0, teams - 1)
    minute = st.integers(0, 30)
    return st.one_of(
        st.tuples(st.just("complete"), team, st.integers(0, len(TASK_POINTS) - 1), minute),
        st.tuples(st.just("uncomplete"), team, st.integers(0, len(TASK_POINTS) - 1)),
        st.tuples(st.just("adjust"), team, st.integers(-25, 25).filter(lambda p: p != 0), minute),
        st.tuples(st.just("unadjust"), team, st.integers(0, 3)),
    )


@st.composite
def histories(draw: st.DrawFn) -> tuple[int, list[Op], list[tuple[int | None, int | None]]]:
    teams = draw(st.integers(1, 4))
    sequence = draw(st.lists(ops(teams), min_size=1, max_size=16))
    bound = st.one_of(st.none(), st.integers(-1, 31))
    windows = draw(st.lists(st.tuples(bound, bound), min_size=1, max_size=3))
    return teams, sequence, windows


def at(minute: int) -> dt.datetime:
    return BASE + dt.timedelta(minutes=minute)


def iso(value: dt.datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass
class Change:
    delta: int
    at: dt.datetime | None
    """``None``: a withdrawal, at the time it was made."""


@dataclass
class Standing:
    points: int
    at: dt.datetime
    task: bool
    withdrawn: bool = False


@dataclass
class Team:
    id: str
    name: str
    created_at: dt.datetime
    history: list[Change] = field(default_factory=list)
    standing: list[Standing] = field(default_factory=list)
    completed: dict[int, Standing] = field(default_factory=dict)
    adjustments: list[tuple[str, Standing]] = field(default_factory=list)


async def apply(client: httpx.AsyncClient, headers: dict[str, str], teams: list[Team],
                task_ids: list[str], op: Op) -> None:  # fmt: skip
    kind, index = op[0], op[1]
    team = teams[index]
    if kind == "complete":
        task, minute = op[2], op[3]
        response = await client.post(
            f"/team/{team.id}/progress",
            json={"TaskId": task_ids[task], "CompletedAt": iso(at(minute))},
            headers=headers,
        )
        if task in team.completed:
            assert response.status_code == 200, response.text
            return
        assert response.status_code == 201, response.text
        done = Standing(TASK_POINTS[task], at(minute), task=True)
        team.completed[task] = done
        team.standing.append(done)
        team.history.append(Change(done.points, done.at))
    elif kind == "uncomplete":
        task = op[2]
        response = await client.delete(
            f"/team/{team.id}/progress/{task_ids[task]}", headers=headers
        )
        if task not in team.completed:
            assert response.status_code == 404, response.text
            return
        assert response.status_code == 204, response.text
        done = team.completed.pop(task)
        done.withdrawn = True
        team.history.append(Change(-done.points, None))
    elif kind == "adjust":
        points, minute = op[2], op[3]
        response = await client.post(
            f"/team/{team.id}/adjustments",
            json={"Points": points, "Reason": "r", "At": iso(at(minute))},
            headers=headers,
        )
        assert response.status_code == 201, response.text
        made = Standing(points, at(minute), task=False)
        team.adjustments.append((response.json()["Id"], made))
        team.standing.append(made)
        team.history.append(Change(points, made.at))
    else:
        nth = op[2]
        if nth >= len(team.adjustments):
            return
        adjustment_id, made = team.adjustments[nth]
        response = await client.delete(
            f"/team/{team.id}/adjustments/{adjustment_id}", headers=headers
        )
        if made.withdrawn:
            assert response.status_code == 409, response.text
            return
        assert response.status_code == 204, response.text
        made.withdrawn = True
        team.history.append(Change(-made.points, None))


def collapse(points: list[tuple[dt.datetime, int]]) -> list[tuple[dt.datetime, int]]:
    """A step function's points, one per instant (the last value at each)."""
    found: dict[dt.datetime, int] = {}
    for when, score in points:
        found[when] = score
    return sorted(found.items())


def check_history(team: Team, graph: dict[str, Any], started: dt.datetime) -> dt.datetime:
    """The team's graph against its history; returns the time of its latest change."""
    got = [(parse(p["At"]), p["Score"]) for p in graph["Points"]]
    past = sorted((c for c in team.history if c.at is not None), key=lambda c: c.at or BASE)
    withdrawals = [c for c in team.history if c.at is None]
    origin = min([team.created_at, *(c.at for c in past[:1] if c.at is not None)])
    running, expected = 0, [(origin, 0)]
    for change in past:
        running += change.delta
        assert change.at is not None
        expected.append((change.at, running))
    expected = collapse(expected)
    tail = got[len(got) - len(withdrawals) :] if withdrawals else []
    head = got[: len(got) - len(withdrawals)]
    assert collapse(head) == expected, (head, expected)
    times = [when for when, _ in tail]
    assert times == sorted(times)
    assert all(when >= started for when in times)
    for change, (_, score) in zip(withdrawals, tail, strict=True):
        running += change.delta
        assert score == running
    latest = [when for when, _ in got[1:]]
    return max(latest) if latest else team.created_at


def reference_board(teams: list[Team], reached: dict[str, dt.datetime]) -> list[dict[str, Any]]:
    rows = [
        {
            "TeamId": t.id,
            "Name": t.name,
            "Score": sum(c.delta for c in t.history),
            "TasksCompleted": len(t.completed),
            "ReachedAt": iso(reached[t.id]),
        }
        for t in teams
    ]
    rows.sort(key=lambda r: (-r["Score"], parse(r["ReachedAt"]), r["Name"].casefold()))
    return [{"Rank": i + 1, **row} for i, row in enumerate(rows)]


def reference_window(teams: list[Team], start: int | None, end: int | None) -> list[dict[str, Any]]:
    rows = []
    for t in teams:
        counted = [
            s
            for s in t.standing
            if not s.withdrawn
            and (start is None or s.at >= at(start))
            and (end is None or s.at <= at(end))
        ]
        moved = [s.at for s in counted if s.points != 0]
        rows.append(
            {
                "TeamId": t.id,
                "Name": t.name,
                "Score": sum(s.points for s in counted),
                "TasksCompleted": sum(s.task for s in counted),
                "ReachedAt": iso(max(moved)) if moved else None,
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


async def check(
    settings_: Settings, count: int, sequence: list[Op], windows: list[tuple[Any, Any]]
) -> None:
    app = create_app(settings_)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://q.test") as client:
            world = World(client=client, tokens=AppHarness(app).tokens, db=app.state.questline.db)
            org = world.org()
            headers = org.admin
            body = {
                "Title": "D",
                "Description": "x",
                "Levels": [{"Title": "L", "Quests": [{"Title": "Q", "Tasks": [
                    {"Title": f"T{i}", "Points": p} for i, p in enumerate(TASK_POINTS)
                ]}]}],
            }  # fmt: skip
            created = await client.post("/discipline", json=body, headers=headers)
            assert created.status_code == 201, created.text
            task_ids = [t["Id"] for t in created.json()["Levels"][0]["Quests"][0]["Tasks"]]
            teams = []
            for i in range(count):
                made = await org.create_team(f"Team {chr(65 + i)}")
                teams.append(Team(made["Id"], made["Name"], parse(made["CreatedAt"])))
            started = utcnow()
            for op in sequence:
                await apply(client, headers, teams, task_ids, op)
            reached = {}
            for team in teams:
                graph = await client.get(f"/team/{team.id}/graph", headers=org.member)
                assert graph.status_code == 200
                reached[team.id] = check_history(team, graph.json(), started)
            board = await client.get("/leaderboard", headers=org.member)
            assert board.json() == reference_board(teams, reached)
            for start, end in windows:
                if start is not None and end is not None and start > end:
                    continue
                params = {
                    name: iso(at(value))
                    for name, value in (("from", start), ("to", end))
                    if value is not None
                }
                if not params:
                    continue
                got = await client.get("/leaderboard", params=params, headers=org.member)
                assert got.status_code == 200, got.text
                assert got.json() == reference_window(teams, start, end), params
    finally:
        await app.state.questline.db.dispose()


@pytest.mark.slow
def test_adjustments_match_the_brute_force_reference(settings: Settings) -> None:
    @hypothesis_settings(
        max_examples=25,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(history=histories())
    def run(history: tuple[int, list[Op], list[tuple[int | None, int | None]]]) -> None:
        anyio.run(check, settings, *history)

    run()
