"""A ``from``/``to`` window cannot bypass a freeze: during a season's freeze, a member's
windowed leaderboard and graph whose window overlaps the season show what was recorded
before ``FreezesAt`` (as the season's own view does); admins see them live unless they
ask ``frozen=true``; a window clear of the season stays live."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import httpx
import pytest

from tests.factories import Org, World
from tests.seasons.support import (
    complete,
    create_season,
    create_task,
    in_time,
    iso,
    now,
    still_before,
)

pytestmark = pytest.mark.anyio

FROZEN = "Questline-Frozen-At"


async def board(org: Org, headers: dict[str, str], **params: Any) -> httpx.Response:
    response = await org.client.get("/leaderboard", params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response


def scores(response: httpx.Response) -> dict[str, int]:
    return {e["Name"]: e["Score"] for e in response.json()}


async def test_a_members_window_over_a_frozen_season_shows_the_frozen_standings(
    world: World,
) -> None:
    org = world.org()
    _, tasks = await create_task(org, [10, 20, 30, 40])
    a = await org.create_team("A")
    b = await org.create_team("B")
    await complete(org, a["Id"], tasks[0], now() - dt.timedelta(hours=1))
    await complete(org, b["Id"], tasks[1], now() - dt.timedelta(hours=1))
    freeze = now()
    season = await create_season(org, FreezesAt=iso(freeze))
    assert season["Phase"] == "Frozen"

    # A write after the freeze, back-dated into the season.
    await complete(org, a["Id"], tasks[2], now() - dt.timedelta(minutes=30))
    overlapping = [
        {"from": iso(now() - dt.timedelta(days=2)), "to": iso(now() + dt.timedelta(minutes=1))},
        {"from": iso(now() - dt.timedelta(days=2))},
        {"to": iso(now() + dt.timedelta(days=1))},
        # Starts before the season and ends inside it.
        {"from": iso(now() - dt.timedelta(days=60)), "to": iso(now())},
    ]
    for window in overlapping:
        member = await board(org, org.member, **window)
        assert scores(member) == {"A": 10, "B": 20}, window
        assert [e["Name"] for e in member.json()] == ["B", "A"]
        assert member.headers[FROZEN] == iso(freeze)
        admin = await board(org, org.admin, **window)
        assert scores(admin) == {"A": 40, "B": 20}, window
        assert FROZEN not in admin.headers
        asked = await board(org, org.admin, frozen="true", **window)
        assert asked.json() == member.json()
        assert member.headers["ETag"] != admin.headers["ETag"]
        # The other parameters combine with it.
        tagged = await board(org, org.member, by="perMember", **window)
        assert {e["Name"]: e["Score"] for e in tagged.json()} == {"A": 10, "B": 20}
        around = await board(org, org.member, around=a["Id"], **window)
        assert scores(around) == {"A": 10, "B": 20}

    # The graph over the window draws what the members' leaderboard counts.
    window = overlapping[0]
    graph = await org.client.get("/leaderboard/graph", params=window, headers=org.member)
    assert graph.status_code == 200, graph.text
    assert graph.headers[FROZEN] == iso(freeze)
    assert {s["Name"]: s["Points"][-1]["Score"] for s in graph.json()} == {"A": 10, "B": 20}
    live_graph = await org.client.get("/leaderboard/graph", params=window, headers=org.admin)
    assert {s["Name"]: s["Points"][-1]["Score"] for s in live_graph.json()} == {"A": 40, "B": 20}
    assert FROZEN not in live_graph.headers

    # A window clear of the season is not the season's: live.
    await complete(org, b["Id"], tasks[3], now() - dt.timedelta(days=50))
    clear = {"from": iso(now() - dt.timedelta(days=60)), "to": iso(now() - dt.timedelta(days=40))}
    before_season = await board(org, org.member, **clear)
    assert scores(before_season) == {"A": 0, "B": 40}
    assert FROZEN not in before_season.headers

    # The reveal ends it.
    revealed = await org.client.post(f"/season/{season['Id']}/reveal", headers=org.admin)
    assert revealed.status_code == 200, revealed.text
    after = await board(org, org.member, **overlapping[0])
    assert scores(after) == {"A": 40, "B": 20}
    assert FROZEN not in after.headers


async def test_a_kept_windowed_body_freezes_at_the_instant_with_no_write(world: World) -> None:
    await in_time(lambda window: _a_kept_windowed_body_freezes(world, window))


async def _a_kept_windowed_body_freezes(world: World, seconds: float) -> None:
    org = world.org()
    _, tasks = await create_task(org, [10])
    a = await org.create_team("A")
    await complete(org, a["Id"], tasks[0], now() - dt.timedelta(minutes=5))
    freeze = now() + dt.timedelta(seconds=seconds)
    await create_season(org, FreezesAt=iso(freeze))
    window = {"from": iso(now() - dt.timedelta(days=1))}
    first = await board(org, org.member, **window)
    still_before(freeze)
    assert FROZEN not in first.headers
    await asyncio.sleep(max(0.0, (freeze - now()).total_seconds()) + 0.1)
    second = await board(org, org.member, **window)
    assert second.headers[FROZEN] == iso(freeze)
    assert second.headers["ETag"] != first.headers["ETag"]
    stale = await org.client.get(
        "/leaderboard",
        params=window,
        headers={**org.member, "If-None-Match": first.headers["ETag"]},
    )
    assert stale.status_code == 200  # not a 304 for the live body of before the freeze
    assert stale.headers[FROZEN] == iso(freeze)
