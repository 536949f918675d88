"""The progress writes the fast lane answers (``questline.progress.early_write``): the
same answers as the route, its refusals included (the ledger's, access, the query);
anything unusual (a body the early answer does not take, a key) left to the route. Their group
commit: test_group_commit.py."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from questline.events.models import Event
from questline.progress.early_write import MAX_BODY
from questline.storage import tenancy
from questline.web.metrics import PROGRESS_BATCH_WRITES, PROGRESS_BATCHES
from questline.web.middleware import REQUESTS
from tests.events.factories import listened_to
from tests.factories import World
from tests.progress.factories import complete, make_discipline, score_of
from tests.progress.fast import Fast
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio

AT = "2026-01-02T03:04:05.678901Z"


def _answer(response: Any) -> tuple[int, Any, str | None, str]:
    body = response.json() if response.content else None
    return (
        response.status_code,
        body,
        response.headers.get("location"),
        response.headers.get("content-type", ""),
    )


async def _write_and_undo(world: World, tasks: list[str]) -> list[tuple[int, Any, Any, str]]:
    """A completion (with and without CompletedAt), its repeat and its withdrawal, on a
    new team; the answers with the team's id replaced (the two runs use two teams)."""
    org = world.orgs[0]
    team = await org.create_team()
    answers = [
        await complete(org, team["Id"], tasks[0], AT),
        await complete(org, team["Id"], tasks[0]),
        await org.client.delete(f"/team/{team['Id']}/progress/{tasks[0]}", headers=org.admin),
    ]
    shaped = []
    for response in answers:
        status, body, location, media = _answer(response)
        if isinstance(body, dict):
            body = {**body, "TeamId": "team"}
        shaped.append((status, body, (location or "").replace(team["Id"], "team"), media))
    return shaped


async def test_answers_as_the_route_answers(world: World, fast: Fast) -> None:
    org = world.org()
    await org.create_team()  # the organization is known
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 25]]])

    fast.enabled = False
    by_route = await _write_and_undo(world, tree.tasks)
    assert fast.answered == 0
    fast.enabled = True
    by_fast_path = await _write_and_undo(world, tree.tasks)
    assert fast.answered == 3, (fast.answered, fast.declined)
    assert fast.declined == 3  # the three the route answered while it was switched off

    assert by_fast_path == by_route
    assert [status for status, *_ in by_route] == [201, 200, 204]
    created = by_route[0][1]
    assert created["CompletedAt"] == AT
    assert created["Score"] == 10
    assert by_route[0][2].endswith(f"/team/team/progress/{tree.tasks[0]}")
    assert by_route[0][3] == "application/json"


async def test_the_write_is_recorded_like_the_routes(
    world: World, fast: Fast, app_state: AppHarness
) -> None:
    """Score, history (the graph), outbox event (the organization has a webhook: a
    consumer listens), read-model version, metrics."""
    org = world.org()
    await listened_to(org)
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 25]]])
    board = await org.client.get("/leaderboard", headers=org.member)
    assert board.status_code == 200
    version = await app_state.readmodel.version(org.id)
    counted = REQUESTS.labels("POST", "/team/{team_id}/progress", "201")._value.get()
    batches = PROGRESS_BATCHES._value.get()
    in_batches = PROGRESS_BATCH_WRITES._value.get()

    done = await complete(org, team["Id"], tree.task(0, 0, 1))
    assert done.status_code == 201, done.text
    assert fast.answered == 1
    assert PROGRESS_BATCHES._value.get() == batches + 1
    assert PROGRESS_BATCH_WRITES._value.get() == in_batches + 1

    assert REQUESTS.labels("POST", "/team/{team_id}/progress", "201")._value.get() == counted + 1
    assert await app_state.readmodel.version(org.id) == (version or 0) + 1
    # The writer's next read sees the write (the cached leaderboard is stale now).
    after = await org.client.get("/leaderboard", headers=org.member)
    assert [row["Score"] for row in after.json()] == [25]
    graph = await org.client.get(f"/team/{team['Id']}/graph", headers=org.member)
    assert graph.status_code == 200, graph.text
    assert "25" in graph.text
    with tenancy.acting_for(org.id):  # read directly: as the organization
        async with app_state.db.session(write=False) as session:
            events = (
                await session.scalars(select(Event).where(Event.organization_id == org.id))
            ).all()
    completed = [e for e in events if e.type == "progress.completed"]
    assert len(completed) == 1
    assert completed[0].payload["TaskId"] == tree.task(0, 0, 1)
    assert completed[0].payload["Score"] == 25
    assert completed[0].payload == done.json()  # the event carries what was answered


async def test_refusals_are_answered_early_and_unusual_requests_take_the_route(
    world: World, fast: Fast, app_state: AppHarness
) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10]]])
    other = world.org()
    foreign = await make_discipline(world.db, org_id=other.id, shape=[[[7]]])
    task = tree.task(0, 0, 0)
    url = f"/team/{team['Id']}/progress"
    version = await app_state.readmodel.version(org.id)

    async def raw(body: bytes, media: str = "application/json") -> Any:
        return await org.client.post(
            url, content=body, headers={**org.admin, "Content-Type": media}
        )

    answered_early = {
        "hidden task": (await complete(org, team["Id"], foreign.task(0, 0, 0)), 404),
        "unknown team": (
            await complete(org, "00000000-0000-7000-8000-000000000000", task),
            404,
        ),
        "future": (await complete(org, team["Id"], task, "2999-01-01T00:00:00Z"), 422),
        "nothing to withdraw": (
            await org.client.delete(f"{url}/{task}", headers=org.admin),
            404,
        ),
        "no token": (await org.client.post(url, json={"TaskId": task}), 401),
        "query": (
            await org.client.post(url + "?dryRun=1", json={"TaskId": task}, headers=org.admin),
            422,
        ),
    }
    assert (fast.answered, fast.declined) == (len(answered_early), 0)
    routed = {
        "member": (
            await org.client.post(url, json={"TaskId": task}, headers=org.member),
            403,
        ),
        "unknown field": (
            await org.client.post(url, json={"TaskId": task, "Extra": 1}, headers=org.admin),
            422,
        ),
        "wrong type": (await org.client.post(url, json={"TaskId": 5}, headers=org.admin), 422),
        "not JSON": (await raw(b'{"TaskId": '), 400),
        "too deep": (await raw(b"[" * 40 + b"]" * 40), 400),
        "NUL": (await raw(b'{"TaskId": "\\u0000"}'), 422),
        "text/plain": (await raw(b"{}", "text/plain"), 415),
    }
    for name, (response, status) in {**answered_early, **routed}.items():
        assert response.status_code == status, (name, response.text)
        assert response.headers["content-type"] == "application/problem+json", name
    assert fast.answered == len(answered_early)  # a body the lane does not take: the route's
    assert await score_of(org, team["Id"]) == 0
    assert await app_state.readmodel.version(org.id) == version

    archived = await org.client.patch(
        f"/team/{team['Id']}", json={"Status": "Archived"}, headers=org.admin
    )
    assert archived.status_code == 200, archived.text
    conflict = await complete(org, team["Id"], task)
    assert conflict.status_code == 409, conflict.text
    assert fast.answered == len(answered_early) + 1


async def test_hostile_and_foreign_requests_write_nothing_through_the_fast_path(
    world: World, fast: Fast, app_state: AppHarness
) -> None:
    """Another organization's admin (refused early: 404), Unicode-tricky ids, a body past
    the fast path's size or without a length: the route answers each (4xx problem, or the
    write itself for a valid large body), never a 5xx."""
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10]]])
    task = tree.task(0, 0, 0)
    url = f"/team/{team['Id']}/progress"
    other = world.org()
    await other.create_team()  # known to the process: its token passes the fast path's check

    foreign = await other.client.post(url, json={"TaskId": task}, headers=other.admin)
    assert foreign.status_code == 404, foreign.text
    foreign_undo = await other.client.delete(f"{url}/{task}", headers=other.admin)
    assert foreign_undo.status_code == 404, foreign_undo.text
    # The batch refused both (nothing of another organization), answered as the route does.
    assert fast.answered == 2

    tricky = [
        rb'{"TaskId": "\ud800"}',  # a lone surrogate
        '{"TaskId": "\uff10\uff11\uff12"}'.encode(),  # full-width digits
        b'{"TaskId": "' + task.encode() + rb'\u200b"}',  # a zero-width space
        rb'{"\u0054askId": 5}',  # an escaped key, a wrong type
    ]
    for body in tricky:
        answer = await org.client.post(
            url, content=body, headers={**org.admin, "Content-Type": "application/json"}
        )
        assert answer.status_code in (400, 422), (body, answer.text)
        assert answer.headers["content-type"] == "application/problem+json"
    assert await score_of(org, team["Id"]) == 0

    async def chunked() -> Any:
        yield b'{"TaskId": '
        yield f'"{task}"}}'.encode()

    no_length = await org.client.post(
        url, content=chunked(), headers={**org.admin, "Content-Type": "application/json"}
    )
    assert no_length.status_code == 201, no_length.text  # the route wrote it
    gone = await org.client.delete(f"{url}/{task}", headers=org.admin)
    assert gone.status_code == 204
    padded = b'{"TaskId": "' + task.encode() + b'"' + b" " * MAX_BODY + b"}"
    large = await org.client.post(
        url, content=padded, headers={**org.admin, "Content-Type": "application/json"}
    )
    assert large.status_code == 201, large.text
    assert fast.answered == 3  # the two refusals and the DELETE; both POSTs took the route
    assert await score_of(org, team["Id"]) == 10


async def test_an_idempotency_key_takes_the_route(world: World, fast: Fast) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10]]])
    first = await complete(org, team["Id"], tree.task(0, 0, 0), **{"Idempotency-Key": "k-1"})
    again = await complete(org, team["Id"], tree.task(0, 0, 0), **{"Idempotency-Key": "k-1"})
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json() == first.json()
    assert fast.answered == 0


async def test_only_canonical_ids_are_answered_early(world: World, fast: Fast) -> None:
    """A path the route accepts in another spelling (upper-case, without dashes) is
    answered by the route, never by the fast lane; paths of other routes are not taken."""
    org = world.org()
    team = (await org.create_team())["Id"]
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10]]])
    task = tree.task(0, 0, 0)
    for spelling in (team.upper(), team.replace("-", "")):
        answer = await org.client.post(
            f"/team/{spelling}/progress", json={"TaskId": task}, headers=org.admin
        )
        assert answer.status_code in (200, 201, 404), answer.text
    assert fast.answered == 0
    assert fast.declined == 2
    for path in (f"/team/{team}/progress/", f"/teams/{team}/progress", f"//team/{team}/progress"):
        answer = await org.client.post(path, json={"TaskId": task}, headers=org.admin)
        assert answer.status_code in (307, 404, 405), (path, answer.text)
    assert fast.answered == 0
