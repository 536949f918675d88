"""A season's freeze: members see the standings as at ``FreezesAt`` while completions go
on being recorded (their own team's progress stays live), admins see them live, and a
reveal shows the live standings at once, on every process."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.factories import Org, World
from tests.seasons.support import (
    complete,
    create_season,
    create_task,
    in_time,
    iso,
    now,
    recorded_instants,
    still_before,
)
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio

FROZEN = "Questline-Frozen-At"


async def board(org: Org, headers: dict[str, str], **params: Any) -> httpx.Response:
    response = await org.client.get("/leaderboard", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response


def scores(response: httpx.Response) -> dict[str, int]:
    return {e["Name"]: e["Score"] for e in response.json()}


async def test_members_view_holds_still_while_completions_arrive(world: World) -> None:
    org = world.org()
    _, tasks = await create_task(org, [10, 20, 30, 40, 50])
    a = await org.create_team("A")
    b = await org.create_team("B")
    await complete(org, a["Id"], tasks[0], now() - dt.timedelta(hours=1))
    await complete(org, b["Id"], tasks[1], now() - dt.timedelta(hours=1))
    freeze = now()
    season = await create_season(org, FreezesAt=iso(freeze))
    assert season["Phase"] == "Frozen"
    sid = season["Id"]

    before = await board(org, org.member, season=sid)
    assert before.headers[FROZEN] == iso(freeze)
    assert scores(before) == {"A": 10, "B": 20}
    overview_before = await world.client.get(
        f"/team/{a['Id']}/overview", params={"season": sid}, headers=org.member
    )
    assert overview_before.json()["Rank"] == 2

    # During the freeze: a back-dated completion inside the window, a new one, and the
    # withdrawal of a completion recorded before the freeze.
    await complete(org, b["Id"], tasks[2], now() - dt.timedelta(hours=2))
    await complete(org, a["Id"], tasks[3])
    await complete(org, a["Id"], tasks[4])
    gone = await world.client.delete(f"/team/{b['Id']}/progress/{tasks[1]}", headers=org.admin)
    assert gone.status_code == 204

    during = await board(org, org.member, season=sid)
    assert during.json() == before.json()
    assert during.headers[FROZEN] == iso(freeze)
    assert (await board(org, org.admin, season=sid, frozen="true")).json() == before.json()
    live = await board(org, org.admin, season=sid)
    assert FROZEN not in live.headers
    assert scores(live) == {"A": 100, "B": 30}

    # The team's own progress is live; its season rank is the frozen one.
    overview = await world.client.get(
        f"/team/{a['Id']}/overview", params={"season": sid}, headers=org.member
    )
    assert overview.status_code == 200
    assert overview.json()["Score"] == 100
    assert overview.json()["Rank"] == 2
    assert overview.headers[FROZEN] == iso(freeze)
    progress = await world.client.get(f"/team/{a['Id']}/progress", headers=org.member)
    assert {c["TaskId"] for c in progress.json()} == {tasks[0], tasks[3], tasks[4]}
    graph = await world.client.get("/leaderboard/graph", params={"season": sid}, headers=org.member)
    assert graph.headers[FROZEN] == iso(freeze)
    assert {s["Name"]: s["Points"][-1]["Score"] for s in graph.json()} == {"A": 10, "B": 20}
    assert [e["Name"] for e in graph.json()] == ["B", "A"]

    revealed = await world.client.post(f"/season/{sid}/reveal", headers=org.admin)
    assert revealed.status_code == 200
    after = await board(org, org.member, season=sid)
    assert FROZEN not in after.headers
    assert after.json() == live.json()


async def test_a_cached_view_freezes_at_the_instant_with_no_write(world: World) -> None:
    await in_time(lambda window: _a_cached_view_freezes(world, window))


async def _a_cached_view_freezes(world: World, window: float) -> None:
    org = world.org()
    _, tasks = await create_task(org, [10, 20])
    a = await org.create_team("A")
    await complete(org, a["Id"], tasks[0], now() - dt.timedelta(minutes=5))
    freeze = now() + dt.timedelta(seconds=window)
    season = await create_season(org, FreezesAt=iso(freeze))
    first = await board(org, org.member, season=season["Id"])
    still_before(freeze)
    assert FROZEN not in first.headers
    await asyncio.sleep(max(0.0, (freeze - now()).total_seconds()) + 0.1)
    second = await board(org, org.member, season=season["Id"])
    assert second.headers[FROZEN] == iso(freeze)
    assert second.headers["ETag"] != first.headers["ETag"]
    again = await world.client.get(
        "/leaderboard",
        params={"season": season["Id"]},
        headers={**org.member, "If-None-Match": second.headers["ETag"]},
    )
    assert again.status_code == 304


async def test_the_freeze_boundary_is_the_exact_recording_instant(
    world: World, app_state: AppHarness
) -> None:
    org = world.org()
    _, tasks = await create_task(org, [10, 20])
    a = await org.create_team("A")
    await complete(org, a["Id"], tasks[0], now() - dt.timedelta(minutes=5))
    await complete(org, a["Id"], tasks[1], now() - dt.timedelta(minutes=5))
    recorded = await recorded_instants(app_state.db, org.id)
    second = recorded[1]
    assert recorded[0] < second
    season = await create_season(org, FreezesAt=iso(second))
    at_instant = await board(org, org.member, season=season["Id"])
    assert scores(at_instant) == {"A": 10}  # recorded at the instant: not before it
    just_after = second + dt.timedelta(microseconds=1)
    moved = await world.client.patch(
        f"/season/{season['Id']}", json={"FreezesAt": iso(just_after)}, headers=org.admin
    )
    assert moved.status_code == 200
    assert scores(await board(org, org.member, season=season["Id"])) == {"A": 30}


async def test_after_the_end_everyone_sees_the_final_standings(world: World) -> None:
    org = world.org()
    _, tasks = await create_task(org, [10, 20, 30])
    a = await org.create_team("A")
    b = await org.create_team("B")
    start, end = now() - dt.timedelta(days=2), now() - dt.timedelta(days=1)
    await complete(org, a["Id"], tasks[0], start)  # at StartsAt: counts
    await complete(org, b["Id"], tasks[1], end)  # at EndsAt: does not
    season = await create_season(
        org,
        StartsAt=iso(start),
        EndsAt=iso(end),
        FreezesAt=iso(start + dt.timedelta(hours=1)),
    )
    assert season["Phase"] == "Ended"
    final = await board(org, org.member, season=season["Id"])
    assert FROZEN not in final.headers
    assert scores(final) == {"A": 10, "B": 0}
    await complete(org, b["Id"], tasks[2])  # after the end: changes nothing
    assert (await board(org, org.member, season=season["Id"])).json() == final.json()
    assert (await board(org, org.admin, season=season["Id"])).json() == final.json()


async def test_a_reveal_is_seen_at_once_by_another_process(
    world: World, other_app: FastAPI
) -> None:
    org = world.org()
    _, tasks = await create_task(org, [10, 20])
    a = await org.create_team("A")
    await complete(org, a["Id"], tasks[0], now() - dt.timedelta(minutes=5))
    season = await create_season(org, FreezesAt=iso(now()))
    await complete(org, a["Id"], tasks[1], now() - dt.timedelta(minutes=5))
    other = AppHarness(other_app)
    transport = httpx.ASGITransport(app=other_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://q.test") as client:
        params = {"season": season["Id"]}
        frozen = await client.get("/leaderboard", params=params, headers=org.member)
        assert frozen.headers[FROZEN]
        assert scores(frozen) == {"A": 10}
        seen = await other.readmodel.version(org.id)
        assert seen is not None
        revealed = await world.client.post(f"/season/{season['Id']}/reveal", headers=org.admin)
        assert revealed.status_code == 200
        # The version the reveal committed reaches the other process (SQLite: its next
        # read; PostgreSQL: the notification, or the read's confirmation round trip).
        await other.readmodel.changes.wait(org.id, seen, timeout=10)
        live = await client.get("/leaderboard", params=params, headers=org.member)
        assert FROZEN not in live.headers
        assert scores(live) == {"A": 30}


async def test_items_at_the_freeze_and_end_instants(world: World) -> None:
    """``FreezesAt`` and ``EndsAt`` exactly: an item whose time is ``FreezesAt`` counts in
    the window, in the frozen view only if recorded before that instant; an item at
    ``EndsAt`` never counts; at ``StartsAt`` it does."""
    await in_time(lambda window: _items_at_the_freeze_and_end(world, window))


async def _items_at_the_freeze_and_end(world: World, window: float) -> None:
    org = world.org()
    _, tasks = await create_task(org, [10, 20, 40, 80])
    a = await org.create_team("A")
    b = await org.create_team("B")
    start = now() - dt.timedelta(days=1)
    freeze = now() + dt.timedelta(seconds=window)
    end = freeze + dt.timedelta(seconds=window)
    season = await create_season(org, StartsAt=iso(start), FreezesAt=iso(freeze), EndsAt=iso(end))
    sid = season["Id"]
    still_before(freeze)  # then the season was Running when it was created
    assert season["Phase"] == "Running"
    # Recorded before the freeze: at StartsAt, and at FreezesAt (a clock a little ahead).
    await complete(org, a["Id"], tasks[0], start)
    await complete(org, a["Id"], tasks[1], freeze)
    adjusted = await world.client.post(
        f"/team/{b['Id']}/adjustments",
        json={"Points": 3, "Reason": "at the freeze", "At": iso(freeze)},
        headers=org.admin,
    )
    assert adjusted.status_code == 201, adjusted.text
    still_before(freeze)
    await asyncio.sleep(max(0.0, (freeze - now()).total_seconds()) + 0.05)
    # Recorded during the freeze: back-dated to FreezesAt, and at EndsAt exactly.
    await complete(org, b["Id"], tasks[2], freeze)
    await complete(org, b["Id"], tasks[3], end)

    frozen = await board(org, org.member, season=sid)
    live = await board(org, org.admin, season=sid)
    still_before(end)
    assert frozen.headers[FROZEN] == iso(freeze)
    assert scores(frozen) == {"A": 30, "B": 3}
    assert FROZEN not in live.headers
    assert scores(live) == {"B": 43, "A": 30}

    await asyncio.sleep(max(0.0, (end - now()).total_seconds()) + 0.05)
    final = await board(org, org.member, season=sid)
    assert FROZEN not in final.headers
    assert final.json() == live.json()
    # The overall scores count everything, the item at EndsAt too.
    overall = await board(org, org.member)
    assert scores(overall) == {"B": 123, "A": 30}
