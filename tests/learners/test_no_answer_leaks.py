"""No answer leaves the service where it does not belong: members' responses, log lines,
the audit log (and its CSV), webhooks' events, the progress CSV."""

from __future__ import annotations

import json
import logging

import pytest
from sqlalchemy import select

from questline.events.models import Event
from tests.factories import World
from tests.learners.factories import ANSWER, learners_game

pytestmark = pytest.mark.anyio

WRONG = "wrong-guess-7f3a"


async def test_no_answer_in_responses_logs_audit_events_or_csv(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    game = await learners_game(world)
    seen: list[str] = []
    for response in (
        await game.attempt(game.alice, "Answer task", WRONG),
        await game.attempt(game.alice, "Answer task", ANSWER),
        await game.attempt(game.bob, "Answer task", ANSWER),  # 409: already completed
        await game.client.get(f"/team/{game.team_id}/attempts", headers=game.alice),
        await game.client.get(f"/team/{game.team_id}/overview", headers=game.alice),
        await game.client.get(f"/discipline/{game.discipline['Id']}", headers=game.alice),
        await game.client.get(
            f"/team/{game.team_id}/progress", headers={**game.alice, "Accept": "text/csv"}
        ),
        await game.client.get("/audit", params={"limit": 1000}, headers=game.org.admin),
        await game.client.get(
            "/audit", params={"limit": 1000}, headers={**game.org.admin, "Accept": "text/csv"}
        ),
    ):
        assert response.status_code < 500
        seen.append(response.text)
    async with world.db.engine.connect() as connection:
        payloads = (
            await connection.scalars(
                select(Event.payload).where(Event.organization_id == game.org.id)
            )
        ).all()
    seen.append(json.dumps(payloads))
    seen.extend(record.getMessage() for record in caplog.records)
    seen.extend(str(record.__dict__) for record in caplog.records)
    everything = "\n".join(seen)
    assert ANSWER not in everything
    assert WRONG not in everything
    assert "Sesame" not in everything
