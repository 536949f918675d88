"""A season's stream on live server processes: a member's stream holds still during the
freeze while completions arrive (an admin's follows them), and the reveal sends the
live standings to every stream, whichever process it is on."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from tests.factories import World
from tests.leaderboard.test_stream import complete, open_stream, servers, setup_org
from tests.seasons.support import iso, now
from tests.support.live import LiveServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

__all__ = ["servers"]  # the fixture, shared with the leaderboard's stream tests


async def test_a_members_stream_holds_still_until_the_reveal(
    world: World, servers: list[LiveServer]
) -> None:
    org = world.org()
    reader_url, writer_url = servers[0].url, servers[-1].url
    teams, tasks = await setup_org(writer_url, org)
    await complete(writer_url, org, teams[0]["Id"], tasks[1])
    async with httpx.AsyncClient(base_url=writer_url, headers=org.admin) as client:
        created = await client.post(
            "/season",
            json={
                "Name": "Cup",
                "StartsAt": iso(now() - dt.timedelta(days=1)),
                "FreezesAt": iso(now()),
                "EndsAt": iso(now() + dt.timedelta(days=1)),
            },
        )
        assert created.status_code == 201, created.text
    season = created.json()["Id"]
    async with (
        open_stream(reader_url, org.member, season=season) as (_, member),
        open_stream(reader_url, org.admin, season=season) as (_, admin),
    ):
        frozen = (await member.event()).json()
        assert [(e["Name"], e["Score"]) for e in frozen] == [("Ants", 5), ("Bees", 0)]
        assert (await admin.event()).json() == frozen
        await complete(writer_url, org, teams[1]["Id"], tasks[0])
        live = (await admin.event()).json()
        assert [(e["Name"], e["Score"]) for e in live] == [("Bees", 10), ("Ants", 5)]
        # The member's stream sends heartbeats only (QUESTLINE_STREAM_HEARTBEAT_SECONDS
        # is 0.3 s in these servers): nothing it shows changed.
        for _ in range(3):
            beat = await member.message()
            assert beat.event is None
            assert beat.comments == ["heartbeat"]
        async with httpx.AsyncClient(base_url=writer_url, headers=org.admin) as client:
            revealed = await client.post(f"/season/{season}/reveal")
            assert revealed.status_code == 200, revealed.text
        assert (await member.event()).json() == live
