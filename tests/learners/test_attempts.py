"""`POST/GET /team/{id}/attempts`: right and wrong answers, the team's attempts, the
per-member rate, concurrent right answers, who may answer."""

from __future__ import annotations

import datetime as dt
import json

import anyio
import httpx
import pytest
from sqlalchemy import select

from questline.events.models import Event
from questline.progress.learner_records import TaskAttempt
from questline.storage import tenancy
from questline.storage.db import utcnow
from questline.web.identity import Role
from tests.events.factories import listened_to
from tests.factories import World, bearer
from tests.learners.factories import ANSWER, Game, learners_game

pytestmark = pytest.mark.anyio


async def test_a_wrong_then_a_right_answer(world: World) -> None:
    game = await learners_game(world)
    before = await game.score()
    wrong = await game.attempt(game.alice, "Answer task", "hunter2")
    assert wrong.status_code == 200, wrong.text
    assert wrong.json() == {"Correct": False, "AttemptsLeft": 2}
    assert await game.score() == before

    right = await game.attempt(game.bob, "Answer task", ANSWER)
    assert right.status_code == 201, right.text
    body = right.json()
    assert (body["Correct"], body["AttemptsLeft"]) == (True, 1)
    completion = body["Completion"]
    assert completion["MemberId"] == game.bob_id
    assert completion["TaskId"] == game.task("Answer task")
    assert completion["Points"] == 20
    assert completion["Score"] == before + 20
    assert await game.score() == before + 20

    # The completion is the ledger's: listed, graphed, on the leaderboard.
    progress = await game.client.get(f"/team/{game.team_id}/progress", headers=game.alice)
    assert [c["TaskId"] for c in progress.json()] == [game.task("Answer task")]
    graph = await game.client.get(f"/team/{game.team_id}/graph", headers=game.alice)
    assert graph.json()["Points"][-1]["Score"] == before + 20
    board = await game.client.get("/leaderboard", headers=game.alice)
    assert any(i["TeamId"] == game.team_id and i["Score"] == 20 for i in board.json())

    again = await game.attempt(game.alice, "Answer task", ANSWER)
    assert again.status_code == 409
    assert again.json()["type"].endswith("already-completed")

    listed = await game.client.get(f"/team/{game.team_id}/attempts", headers=game.alice)
    assert listed.status_code == 200
    items = listed.json()
    assert [(i["Correct"], i["MemberId"]) for i in items] == [
        (False, game.alice_id),
        (True, game.bob_id),
    ]
    assert all("Answer" not in i for i in items)
    assert ANSWER not in listed.text
    assert "hunter2" not in listed.text
    as_admin = await game.client.get(f"/team/{game.team_id}/attempts", headers=game.org.admin)
    assert [i["Answer"] for i in as_admin.json()] == ["hunter2", ANSWER]


@pytest.mark.parametrize(
    ("answer", "correct"),
    [
        ("  sesame ", True),
        ("SESAME", True),
        ("sesam", False),
        ("flag{abc}", True),
        ("xflag{abc}", False),  # a full match
        ("flag{abc}x", False),
        (" Hunter2", False),  # Exact keeps spaces
    ],
)
async def test_each_match(world: World, answer: str, correct: bool) -> None:
    game = await learners_game(world, max_attempts=None)
    response = await game.attempt(game.alice, "Answer task", answer)
    assert response.json()["Correct"] is correct, response.text
    assert response.json()["AttemptsLeft"] is None


async def test_attempts_are_counted_for_the_team(world: World) -> None:
    game = await learners_game(world, max_attempts=2)
    assert (await game.attempt(game.alice, "Answer task", "a")).json()["AttemptsLeft"] == 1
    assert (await game.attempt(game.bob, "Answer task", "b")).json()["AttemptsLeft"] == 0
    refused = await game.attempt(game.alice, "Answer task", ANSWER)
    assert refused.status_code == 409
    assert refused.json()["type"].endswith("no-attempts-left")
    listed = await game.client.get(f"/team/{game.team_id}/attempts", headers=game.org.admin)
    assert len(listed.json()) == 2  # the refused one is neither counted nor listed
    assert ANSWER not in refused.text


async def test_one_member_is_limited_per_minute(world: World) -> None:
    game = await learners_game(world, max_attempts=None)
    for n in range(10):
        response = await game.attempt(game.alice, "Answer task", f"guess {n}")
        assert response.status_code == 200, response.text
    refused = await game.attempt(game.alice, "Answer task", ANSWER)
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    # Another member of the team is not held back by the first one's pace.
    assert (await game.attempt(game.bob, "Answer task", ANSWER)).status_code == 201
    listed = await game.client.get(f"/team/{game.team_id}/attempts", headers=game.org.admin)
    assert len(listed.json()) == 11


async def test_the_rate_counts_the_last_minute_only(world: World) -> None:
    game = await learners_game(world, max_attempts=None)
    for n in range(10):
        response = await game.attempt(game.alice, "Answer task", f"guess {n}")
        assert response.status_code == 200, response.text

    async def made_ago(seconds: int) -> None:
        # Setup writes the rows directly: as the organization (row security).
        with tenancy.acting_for(game.org.id):
            async with world.db.session(write=True) as session:
                rows = await session.scalars(
                    select(TaskAttempt).where(TaskAttempt.organization_id == game.org.id)
                )
                for row in rows.all():
                    row.at = utcnow() - dt.timedelta(seconds=seconds)

    await made_ago(30)  # all ten within the minute: they leave it in at most 30 s
    refused = await game.attempt(game.alice, "Answer task", "eleven")
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 30
    await made_ago(61)  # over a minute ago: none of them counts any more
    assert (await game.attempt(game.alice, "Answer task", "eleven")).status_code == 200


async def test_two_right_answers_at_once_complete_once(world: World) -> None:
    game = await learners_game(world)
    responses: list[httpx.Response] = []

    async def answer(headers: dict[str, str]) -> None:
        responses.append(await game.attempt(headers, "Answer task", ANSWER))

    async with anyio.create_task_group() as group:
        group.start_soon(answer, game.alice)
        group.start_soon(answer, game.bob)
    assert sorted(r.status_code for r in responses) == [201, 409], [r.text for r in responses]
    assert await game.score() == 20
    history = await game.client.get(f"/team/{game.team_id}/graph", headers=game.org.admin)
    assert [p["Score"] for p in history.json()["Points"]][-1] == 20
    listed = await game.client.get(f"/team/{game.team_id}/attempts", headers=game.org.admin)
    assert [i["Correct"] for i in listed.json()] == [True]


async def test_who_may_answer(world: World) -> None:
    game = await learners_game(world)
    other = await learners_game(world)
    # A member of another team of the organization: 403.
    assert (await game.attempt(game.outsider, "Answer task", "x")).status_code == 403
    # A member token naming no member: 403.
    nobody = bearer(world.tokens.mint(role=Role.MEMBER, org_id=game.org.id, subject="nobody"))
    assert (await game.attempt(nobody, "Answer task", "x")).status_code == 403
    # Another organization's member, on this team: 404 (the team is not theirs to see).
    assert (await game.attempt(other.alice, "Answer task", "x")).status_code == 404
    # Another organization's task on one's own team: 404.
    response = await game.client.post(
        f"/team/{game.team_id}/attempts",
        json={"TaskId": other.task("Answer task"), "Answer": "x"},
        headers=game.alice,
    )
    assert response.status_code == 404
    # Not an Answer task: 422.
    assert (await game.attempt(game.alice, "Self task", "x")).status_code == 422
    # An admin may answer (no member of the team: MemberId null).
    right = await game.attempt(game.org.admin, "Answer task", ANSWER)
    assert right.status_code == 201
    assert right.json()["Completion"]["MemberId"] is None
    # Reading the attempts: the team's members and admins only.
    url = f"/team/{game.team_id}/attempts"
    assert (await game.client.get(url, headers=game.outsider)).status_code == 403
    assert (await game.client.get(url, headers=other.alice)).status_code == 404


async def test_an_archived_team_refuses_answers(world: World) -> None:
    game = await learners_game(world)
    archived = await game.client.patch(
        f"/team/{game.team_id}", json={"Status": "Archived"}, headers=game.org.admin
    )
    assert archived.status_code == 200, archived.text
    assert (await game.attempt(game.alice, "Answer task", ANSWER)).status_code == 409


async def test_paging_and_no_answer_at_rest(world: World) -> None:
    game = await learners_game(world, max_attempts=None)
    await listened_to(game.org)  # a consumer listens: its events are recorded
    for n in range(3):
        await game.attempt(game.alice, "Answer task", f"plain-guess-{n}")
    url = f"/team/{game.team_id}/attempts"
    first = await game.client.get(url, params={"limit": 2}, headers=game.alice)
    assert len(first.json()) == 2
    assert 'rel="next"' in first.headers["Link"]
    # Read directly: as the organization (row security).
    with tenancy.acting_for(game.org.id):
        async with world.db.session(write=False) as connection:
            stored = (await connection.scalars(select(TaskAttempt.answer))).all()
            payloads = (
                await connection.scalars(
                    select(Event.payload).where(
                        Event.organization_id == game.org.id, Event.type == "attempt.created"
                    )
                )
            ).all()
    assert stored
    assert all("plain-guess" not in value for value in stored)
    assert len(payloads) == 3
    assert "plain-guess" not in json.dumps(payloads)
    assert {p["Correct"] for p in payloads} == {False}


async def _guess(game: Game, headers: dict[str, str], n: int, statuses: list[int]) -> None:
    statuses.append((await game.attempt(headers, "Answer task", f"guess {n}")).status_code)


async def test_concurrent_answers_keep_the_rate_and_the_attempts_limit(world: World) -> None:
    """Answers sent at once share a group commit's batch: the batch counts each against
    the member's rate and the team's attempts as the route would, one at a time."""
    game = await learners_game(world, max_attempts=None)
    statuses: list[int] = []
    async with anyio.create_task_group() as group:
        for n in range(13):
            group.start_soon(_guess, game, game.alice, n, statuses)
    assert sorted(statuses) == [200] * 10 + [429] * 3, statuses
    listed = await game.client.get(f"/team/{game.team_id}/attempts", headers=game.org.admin)
    assert len(listed.json()) == 10

    limited = await learners_game(world, max_attempts=3)
    statuses.clear()
    async with anyio.create_task_group() as group:
        for n in range(4):
            group.start_soon(_guess, limited, limited.alice, n, statuses)
            group.start_soon(_guess, limited, limited.bob, n, statuses)
    assert sorted(statuses) == [200] * 3 + [409] * 5, statuses
    url = f"/team/{limited.team_id}/attempts"
    assert len((await limited.client.get(url, headers=limited.org.admin)).json()) == 3
