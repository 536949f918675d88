"""No answer leaves the service where it does not belong: members' responses, log lines,
the audit log (and its CSV), webhooks' events, the progress CSV."""

from __future__ import annotations

import functools
import json
import logging
import uuid

import pytest
from sqlalchemy import select

from questline.config import Settings
from questline.disciplines.checks import answer_keys
from questline.events.models import Event
from questline.progress.ledger import Answering
from questline.web.identity import Caller, Role
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


def test_an_answer_is_not_in_its_writes_representation() -> None:
    """A batch's writes may be logged (a failed batch says what it held): an answer's
    text, its caller's token claims and its keys stay out of ``repr``."""
    settings = Settings(_env_file=None, jwt_secret="s" * 48)
    caller = Caller(subject="sub", role=Role.MEMBER, org_id=uuid.uuid4(), email="a@example.org")
    write = Answering(
        org_id=uuid.uuid4(),
        team_id=uuid.uuid4(),
        task_id=uuid.uuid4(),
        answer=WRONG,
        caller=caller,
        keys=functools.partial(answer_keys, settings),
        per_minute=10,
    )
    shown = repr(write)
    assert str(write.task_id) in shown
    for secret in (WRONG, "s" * 48, "a@example.org"):
        assert secret not in shown
