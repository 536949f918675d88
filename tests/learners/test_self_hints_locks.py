"""Self-check through `POST /team/{id}/progress`, hints and their cost in the score
history, sequential levels refusing every action."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from questline.audit.models import AuditEntry
from questline.events.models import Event
from questline.storage import tenancy
from tests.events.factories import listened_to
from tests.factories import World
from tests.learners.factories import ANSWER, learners_game

pytestmark = pytest.mark.anyio


async def test_a_member_marks_a_self_task_done_and_nothing_else(world: World) -> None:
    game = await learners_game(world)
    done = await game.complete(game.alice, "Self task")
    assert done.status_code == 201, done.text
    assert done.json()["MemberId"] == game.alice_id
    assert await game.score() == 7
    again = await game.complete(game.bob, "Self task")
    assert again.status_code == 200  # already done: nothing changes
    assert await game.score() == 7
    for title in ("Admin task", "Answer task", "Review task"):
        assert (await game.complete(game.alice, title)).status_code == 403
    assert (await game.complete(game.outsider, "Later self")).status_code == 403
    # A member does not backdate or name another member.
    backdated = await game.client.post(
        f"/team/{game.team_id}/progress",
        json={"TaskId": game.task("Later self"), "CompletedAt": "2020-01-01T00:00:00Z"},
        headers=game.alice,
    )
    assert backdated.status_code == 422
    # Admins keep recording any task.
    assert (await game.complete(game.org.admin, "Review task")).status_code == 201
    assert await game.score() == 16


async def test_a_hint_costs_once_as_a_step_of_the_history(world: World) -> None:
    game = await learners_game(world)
    await listened_to(game.org)  # a consumer listens: its events are recorded
    await game.complete(game.alice, "Self task")  # score 7
    unlocked = await game.hint(game.alice, "Answer task", 0)
    assert unlocked.status_code == 201, unlocked.text
    body = unlocked.json()
    assert (body["Text"], body["Cost"], body["Index"]) == ("Secret hint text", 4, 0)
    assert body["MemberId"] == game.alice_id
    assert body["Score"] == 3
    assert await game.score() == 3

    again = await game.hint(game.bob, "Answer task", 0)
    assert again.status_code == 200
    assert again.json()["Text"] == "Secret hint text"
    assert await game.score() == 3  # no second charge

    free = await game.hint(game.bob, "Answer task", 1)
    assert free.status_code == 201
    assert await game.score() == 3
    assert (await game.hint(game.bob, "Answer task", 2)).status_code == 422
    assert (await game.hint(game.outsider, "Answer task", 0)).status_code == 403

    # The score is the sum of its history, with the hint's step in the graph.
    graph = await game.client.get(f"/team/{game.team_id}/graph", headers=game.alice)
    scores = [p["Score"] for p in graph.json()["Points"]]
    assert scores[-2:] == [7, 3]
    board = await game.client.get("/leaderboard", headers=game.alice)
    assert next(i for i in board.json() if i["TeamId"] == game.team_id)["Score"] == 3

    listed = await game.client.get(f"/team/{game.team_id}/hints", headers=game.bob)
    assert [(h["Index"], h["Text"]) for h in listed.json()] == [
        (0, "Secret hint text"),
        (1, "Free hint text"),
    ]
    assert (
        await game.client.get(f"/team/{game.team_id}/hints", headers=game.outsider)
    ).status_code == 403

    # Withdrawing the completion keeps the invariant: score = sum of the history.
    withdrawn = await game.client.delete(
        f"/team/{game.team_id}/progress/{game.task('Self task')}", headers=game.org.admin
    )
    assert withdrawn.status_code == 204
    assert await game.score() == -4
    graph = await game.client.get(f"/team/{game.team_id}/graph", headers=game.alice)
    assert graph.json()["Points"][-1]["Score"] == -4

    # Read directly: as the organization (row security).
    with tenancy.acting_for(game.org.id):
        async with world.db.session(write=False) as connection:
            payloads = (
                await connection.scalars(
                    select(Event.payload).where(
                        Event.organization_id == game.org.id, Event.type == "hint.unlocked"
                    )
                )
            ).all()
            audit = (
                await connection.scalars(
                    select(AuditEntry.action).where(AuditEntry.organization_id == game.org.id)
                )
            ).all()
    assert [p["Cost"] for p in payloads] == [4, 0]
    assert "Secret hint text" not in json.dumps(payloads)
    assert audit.count("hint.unlocked") == 2


async def test_members_read_no_hint_text_they_did_not_unlock(world: World) -> None:
    game = await learners_game(world)
    document = await game.client.get(f"/discipline/{game.discipline['Id']}", headers=game.alice)
    assert "Secret hint text" not in document.text
    assert ANSWER not in document.text
    await game.hint(game.alice, "Answer task", 0)
    document = await game.client.get(f"/discipline/{game.discipline['Id']}", headers=game.alice)
    assert "Secret hint text" not in document.text  # the text is the team's, not the document's


async def test_a_locked_level_refuses_all_four_actions_until_the_previous_is_done(
    world: World,
) -> None:
    game = await learners_game(world, sequential=True)
    refusals = [
        await game.complete(game.alice, "Later self"),
        await game.attempt(game.alice, "Later answer", "later"),
        await game.hint(game.alice, "Later answer", 0),
    ]
    for refused in refusals:
        assert refused.status_code == 409, refused.text
        assert refused.json()["type"].endswith("locked")
        assert "'First'" in refused.json()["detail"]
        assert "'Second'" in refused.json()["detail"]
    assert await game.score() == 0
    listed = await game.client.get(f"/team/{game.team_id}/attempts", headers=game.org.admin)
    assert listed.json() == []

    # Finishing the first level opens the second.
    for title in ("Admin task", "Review task"):
        assert (await game.complete(game.org.admin, title)).status_code == 201
    assert (await game.complete(game.alice, "Self task")).status_code == 201
    assert (await game.attempt(game.alice, "Answer task", ANSWER)).status_code == 201
    assert (await game.complete(game.alice, "Later self")).status_code == 201
    assert (await game.attempt(game.bob, "Later answer", "later")).status_code == 201
    # A discipline that is not sequential has no locks.
    free = await learners_game(world)
    assert (await free.complete(free.alice, "Later self")).status_code == 201
