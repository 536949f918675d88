"""Approving and rejecting submissions: the completion through the progress ledger,
resubmission, concurrent decisions, and the events and audit entries they leave."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from sqlalchemy import select

from questline.events.models import Event
from questline.storage import tenancy
from tests.events.factories import listened_to
from tests.factories import World
from tests.mail.support import outbox
from tests.submissions.support import (
    learner,
    review_discipline,
    score_of,
    submit,
    submitted,
)

pytestmark = pytest.mark.anyio


def decide(submission: dict[str, Any], verb: str) -> str:
    return f"/submission/{submission['Id']}/{verb}"


async def test_approval_completes_the_task_for_the_submitter(world: World) -> None:
    org = world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    made = await submitted(world.client, team["Id"], ada, tasks[1], url="https://example.org/a")
    assert await score_of(org, team["Id"]) == 0
    response = await world.client.post(
        decide(made, "approve"), json={"Comment": " Neat wiring. "}, headers=org.admin
    )
    assert response.status_code == 200, response.text
    approved = response.json()
    assert approved["State"] == "Approved"
    assert approved["DecidedBy"] == "admin"
    assert approved["Comment"] == "Neat wiring."
    assert approved["DecidedAt"] is not None
    assert await score_of(org, team["Id"]) == 20
    completion = await world.client.get(
        f"/team/{team['Id']}/progress/{tasks[1]}", headers=ada.headers
    )
    assert completion.status_code == 200
    assert completion.json()["CompletedAt"] == made["SubmittedAt"]
    assert completion.json()["MemberId"] == ada.id
    assert completion.json()["RecordedBy"] == "admin"
    graph = (await world.client.get(f"/team/{team['Id']}/graph", headers=ada.headers)).json()
    assert [p["Score"] for p in graph["Points"]] == [0, 20]
    board = (await world.client.get("/leaderboard", headers=ada.headers)).json()
    assert [(row["TeamId"], row["Score"]) for row in board] == [(team["Id"], 20)]
    seen = await world.client.get(f"/submission/{made['Id']}", headers=ada.headers)
    assert seen.json() == {**approved, "DecidedBy": None}  # members: not who reviewed
    listed = await world.client.get(f"/team/{team['Id']}/submissions", headers=ada.headers)
    assert listed.json() == [{**approved, "DecidedBy": None}]
    # Decided: neither decision applies again, and the completed task takes no more work.
    for verb in ("approve", "reject"):
        again = await world.client.post(
            decide(made, verb), json={"Comment": "x"}, headers=org.admin
        )
        assert again.status_code == 409, again.text
        assert again.json()["type"].endswith("/submission-decided")
    assert (await submit(world.client, team["Id"], ada, tasks[1])).status_code == 409
    assert await score_of(org, team["Id"]) == 20


async def test_approval_needs_no_body(world: World) -> None:
    org = world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    made = await submitted(world.client, team["Id"], ada, tasks[0])
    response = await world.client.post(decide(made, "approve"), headers=org.admin)
    assert response.status_code == 200, response.text
    assert response.json()["Comment"] is None
    assert await score_of(org, team["Id"]) == 10


async def test_a_rejected_team_submits_again(world: World) -> None:
    org = world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    bea = await learner(world, org, team["Id"], "Bea")
    first = await submitted(world.client, team["Id"], ada, tasks[0])
    for body in (None, {}, {"Comment": "   "}, {"Comment": "x" * 2001}, {"Reason": "x"}):
        refused = await world.client.post(decide(first, "reject"), json=body, headers=org.admin)
        assert refused.status_code == 422, (body, refused.text)
    rejected = await world.client.post(
        decide(first, "reject"), json={"comment": "The photo is blurry."}, headers=org.admin
    )
    assert rejected.status_code == 200, rejected.text
    assert rejected.json()["State"] == "Rejected"
    assert rejected.json()["Comment"] == "The photo is blurry."
    assert await score_of(org, team["Id"]) == 0
    second = await submitted(world.client, team["Id"], bea, tasks[0], text="Sharper photo.")
    approved = await world.client.post(decide(second, "approve"), headers=org.admin)
    assert approved.status_code == 200
    assert await score_of(org, team["Id"]) == 10
    history = await world.client.get(f"/team/{team['Id']}/submissions", headers=ada.headers)
    assert [(s["Id"], s["State"]) for s in history.json()] == [
        (first["Id"], "Rejected"),
        (second["Id"], "Approved"),
    ]
    completion = await world.client.get(
        f"/team/{team['Id']}/progress/{tasks[0]}", headers=org.admin
    )
    assert completion.json()["MemberId"] == bea.id


async def test_members_cannot_decide(world: World) -> None:
    org, elsewhere = world.org(), world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    made = await submitted(world.client, team["Id"], ada, tasks[0])
    for headers, expected in ((ada.headers, 403), (org.member, 403), (elsewhere.admin, 404)):
        for verb in ("approve", "reject"):
            refused = await world.client.post(
                decide(made, verb), json={"Comment": "x"}, headers=headers
            )
            assert refused.status_code == expected, refused.text
    still = await world.client.get(f"/submission/{made['Id']}", headers=org.admin)
    assert still.json()["State"] == "Pending"
    assert await score_of(org, team["Id"]) == 0


@pytest.mark.parametrize(
    "verbs", [("approve", "reject"), ("approve", "approve"), ("reject", "reject")]
)
async def test_concurrent_decisions_one_wins(world: World, verbs: tuple[str, str]) -> None:
    org = world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    made = await submitted(world.client, team["Id"], ada, tasks[0])
    answers = await asyncio.gather(
        *(
            world.client.post(decide(made, verb), json={"Comment": "x"}, headers=org.admin)
            for verb in verbs
        )
    )
    assert sorted(a.status_code for a in answers) == [200, 409], [a.text for a in answers]
    winner = next(a.json() for a in answers if a.status_code == 200)
    final = (await world.client.get(f"/submission/{made['Id']}", headers=org.admin)).json()
    assert final == winner
    # The score grew once, or not at all.
    expected = 10 if winner["State"] == "Approved" else 0
    assert await score_of(org, team["Id"]) == expected
    progress = (await world.client.get(f"/team/{team['Id']}/progress", headers=org.admin)).json()
    assert len(progress) == (1 if expected else 0)


async def test_an_archived_team_cannot_be_approved_but_can_be_rejected(world: World) -> None:
    org = world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    first = await submitted(world.client, team["Id"], ada, tasks[0])
    second = await submitted(world.client, team["Id"], ada, tasks[1])
    await world.client.patch(f"/team/{team['Id']}", json={"Status": "Archived"}, headers=org.admin)
    refused = await world.client.post(decide(first, "approve"), headers=org.admin)
    assert refused.status_code == 409
    pending = await world.client.get(f"/submission/{first['Id']}", headers=org.admin)
    assert pending.json()["State"] == "Pending"
    rejected = await world.client.post(
        decide(second, "reject"), json={"Comment": "Season over."}, headers=org.admin
    )
    assert rejected.status_code == 200


async def test_a_submitter_who_left_is_credited_to_nobody(world: World) -> None:
    org = world.org()
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    made = await submitted(world.client, team["Id"], ada, tasks[0])
    left = await world.client.delete(f"/team/{team['Id']}/members/{ada.id}", headers=org.admin)
    assert left.status_code == 204
    approved = await world.client.post(decide(made, "approve"), headers=org.admin)
    assert approved.status_code == 200, approved.text
    assert approved.json()["MemberId"] == ada.id
    completion = await world.client.get(
        f"/team/{team['Id']}/progress/{tasks[0]}", headers=org.admin
    )
    assert completion.json()["MemberId"] is None
    assert await score_of(org, team["Id"]) == 10


async def test_events_and_audit_entries(world: World) -> None:
    org = world.org()
    await listened_to(org)  # a consumer listens: its events are recorded
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    first = await submitted(world.client, team["Id"], ada, tasks[0], text="Secret sauce")
    second = await submitted(world.client, team["Id"], ada, tasks[1])
    await world.client.post(decide(first, "approve"), headers=org.admin)
    await world.client.post(
        decide(second, "reject"), json={"Comment": "Try again."}, headers=org.admin
    )
    with tenancy.acting_for(org.id):  # read directly: as the organization
        async with world.db.session(write=False) as session:
            rows = (
                await session.scalars(
                    select(Event).where(Event.organization_id == org.id).order_by(Event.id)
                )
            ).all()
    mine = [(e.type, e.payload) for e in rows if e.type.startswith("submission.")]
    assert [t for t, _ in mine] == [
        "submission.created",
        "submission.created",
        "submission.approved",
        "submission.rejected",
    ]
    assert mine[0][1]["Id"] == first["Id"]
    assert mine[0][1]["State"] == "Pending"
    assert mine[2][1]["State"] == "Approved"
    assert mine[3][1]["Comment"] == "Try again."
    completed = [e for e in rows if e.type == "progress.completed"]
    assert [e.payload["TaskId"] for e in completed] == [tasks[0]]
    log = (await world.client.get("/audit", headers=org.admin)).json()
    decisions = {e["Action"]: e for e in log if e["Action"].startswith("submission.")}
    assert set(decisions) == {"submission.approved", "submission.rejected"}
    approved = decisions["submission.approved"]
    assert approved["TargetType"] == "submission"
    assert approved["TargetId"] == first["Id"]
    assert approved["Actor"] == "admin"
    assert approved["Changes"]["State"] == {"Before": "Pending", "After": "Approved"}
    assert decisions["submission.rejected"]["Changes"]["Comment"]["After"] == "Try again."
    assert await outbox(world.db) == []  # this service sends no e-mail: none is queued


async def test_a_removed_task_takes_its_submissions(world: World) -> None:
    org = world.org()
    discipline_id, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    made = await submitted(world.client, team["Id"], ada, tasks[0])
    gone = await world.client.delete(f"/discipline/{discipline_id}", headers=org.admin)
    assert gone.status_code == 204, gone.text
    assert (
        await world.client.get(f"/submission/{made['Id']}", headers=org.admin)
    ).status_code == 404
    assert (await world.client.get("/submission", headers=org.admin)).json() == []
    unknown = await world.client.post(f"/submission/{uuid.uuid4()}/approve", headers=org.admin)
    assert unknown.status_code == 404


async def test_a_webhook_subscribes_to_every_event_and_gets_the_submissions(
    world: World,
) -> None:
    from questline.app import outbox_consumers
    from questline.config import Settings
    from questline.events.service import EVENT_TYPES
    from questline.webhooks.dispatcher import Dispatcher

    org = world.org()
    hook = await world.client.post(
        "/webhook",
        json={"url": "https://93.184.215.14/hook", "events": list(EVENT_TYPES)},
        headers=org.admin,
    )
    assert hook.status_code == 201, hook.text
    _, tasks = await review_discipline(org)
    team = await org.create_team()
    ada = await learner(world, org, team["Id"])
    made = await submitted(world.client, team["Id"], ada, tasks[0])
    await world.client.post(decide(made, "approve"), headers=org.admin)
    settings = Settings(_env_file=None)
    await Dispatcher(settings, world.db, consumers=outbox_consumers(settings)).fan_out()
    deliveries = await world.client.get(
        f"/webhook/{hook.json()['Id']}/deliveries", headers=org.admin
    )
    types = {d["Event"] for d in deliveries.json()}
    assert {"submission.created", "submission.approved", "progress.completed"} <= types
