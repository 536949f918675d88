"""``answered`` statements of learners' attempts, sent to a real Ralph LRS on loopback
and read back through its ``GET /xAPI/statements``: one per counted attempt, with
``result.success``, and never what was submitted."""

from __future__ import annotations

import json
import logging
import uuid

import pytest
from sqlalchemy import select

from questline.config import Settings
from questline.events.models import Event
from questline.members.models import Member
from questline.storage import tenancy
from questline.xapi.models import StatementKind, StatementStatus, XapiStatement
from questline.xapi.statements import statement_id
from tests.factories import World
from tests.learners.factories import ANSWER, learners_game
from tests.support.harness import AppHarness
from tests.support.ralph_lrs import RalphServer, RalphUser
from tests.xapi.support import deliver, fan_out, register, rows

pytestmark = pytest.mark.anyio

BASE = "https://questline.test/xapi/activities"
ANSWERED = "http://adlnet.gov/expapi/verbs/answered"
COMPLETED = "http://adlnet.gov/expapi/verbs/completed"
WRONG = "wrong-guess-5c1e"


async def _email(app_state: AppHarness, member_id: str) -> str:
    with tenancy.for_every_organization():  # the member by id, whichever organization's
        async with app_state.db.session(write=False) as session:
            email = await session.scalar(
                select(Member.email).where(Member.id == uuid.UUID(member_id))
            )
    assert email is not None
    return str(email)


async def test_a_wrong_and_a_right_attempt_are_answered_with_their_success(
    world: World,
    app_state: AppHarness,
    settings: Settings,
    ralph: RalphServer,
    lrs_user: RalphUser,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    game = await learners_game(world)
    await register(game.org, ralph, lrs_user)
    wrong = await game.attempt(game.alice, "Answer task", WRONG)
    assert wrong.status_code == 200, wrong.text
    right = await game.attempt(game.bob, "Answer task", ANSWER)
    assert right.status_code == 201, right.text

    # The outbox rows, before the fan-out hands them on.
    with tenancy.acting_for(game.org.id):
        async with app_state.db.session(write=False) as session:
            outbox = (
                await session.scalars(
                    select(Event.payload).where(Event.organization_id == game.org.id)
                )
            ).all()
    assert outbox, "the attempts' events are in the outbox"

    await deliver(settings, app_state.db)

    made = await rows(app_state.db, game.org.id)
    answered = [r for r in made if r.kind is StatementKind.ANSWERED]
    assert len(answered) == 2
    assert all(r.status is StatementStatus.SENT for r in made)
    assert all(r.id == statement_id(r.event_id) for r in answered)
    stored = {s["id"]: s for s in ralph.statements(lrs_user)}
    assert {str(r.id) for r in made} == set(stored)

    task = game.task("Answer task")
    by_actor = {stored[str(r.id)]["actor"].get("mbox"): stored[str(r.id)] for r in answered}
    alice = by_actor[f"mailto:{await _email(app_state, game.alice_id)}"]
    bob = by_actor[f"mailto:{await _email(app_state, game.bob_id)}"]
    for statement, success in ((alice, False), (bob, True)):
        assert statement["verb"]["id"] == ANSWERED
        assert statement["object"]["id"] == f"{BASE}/task/{task}"
        assert statement["result"] == {"success": success}
        assert statement["context"]["team"]["account"]["name"] == f"team/{game.team_id}"
        parents = [p["id"] for p in statement["context"]["contextActivities"]["parent"]]
        assert parents[-1] == f"{BASE}/discipline/{game.discipline['Id']}"
    # The right answer's completion has its own statement, as an admin's would.
    completed = [s for s in stored.values() if s["verb"]["id"] == COMPLETED]
    assert [s["object"]["id"] for s in completed] == [f"{BASE}/task/{task}"]

    everything = "\n".join(
        [
            json.dumps(list(stored.values())),
            json.dumps([r.statement for r in made]),
            json.dumps(list(outbox)),
            *(record.getMessage() for record in caplog.records),
            *(str(record.__dict__) for record in caplog.records),
        ]
    )
    assert ANSWER not in everything
    assert WRONG not in everything


async def test_attempts_make_no_statement_without_a_registration(
    world: World, app_state: AppHarness, settings: Settings
) -> None:
    game = await learners_game(world)
    assert (await game.attempt(game.alice, "Answer task", WRONG)).status_code == 200
    assert (await game.attempt(game.alice, "Answer task", ANSWER)).status_code == 201
    await fan_out(settings, app_state.db)
    with tenancy.acting_for(game.org.id):
        async with app_state.db.session(write=False) as session:
            statements = await session.scalars(
                select(XapiStatement.id).where(XapiStatement.organization_id == game.org.id)
            )
            assert list(statements.all()) == []
            pending = await session.scalars(
                select(Event.id).where(
                    Event.organization_id == game.org.id, Event.pending.is_(True)
                )
            )
            assert list(pending.all()) == []
