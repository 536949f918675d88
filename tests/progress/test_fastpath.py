"""The progress writes' fast path (``questline.progress.fastpath``) and their group
commit (``questline.progress.group_commit``): the same answers as the route, refusals and
anything unusual left to the route, concurrent writes sharing transactions."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import pytest
from fastapi import FastAPI
from sqlalchemy import select, text
from sqlalchemy.exc import OperationalError

from questline.events.models import Event
from questline.progress import ledger_pg, record, schemas
from questline.progress.fastpath import ANSWERED, DECLINED, FastWrites, match
from questline.progress.group_commit import BATCHES_GATHERED, GroupCommit
from questline.web.metrics import PROGRESS_BATCH_WRITES, PROGRESS_BATCHES
from questline.web.middleware import REQUESTS
from questline.web.paths import canonical_uuid
from questline.web.state import AppState
from tests.factories import World
from tests.progress.factories import complete, history, make_discipline, score_of

pytestmark = pytest.mark.anyio

AT = "2026-01-02T03:04:05.678901Z"


class Fast:
    """The app's fast path, with its answers counted from the fixture's start (the
    counters are the process's metrics)."""

    def __init__(self, path: FastWrites) -> None:
        self.path = path
        self.writes: GroupCommit = path.writes
        self._start = (ANSWERED._value.get(), DECLINED._value.get())

    @property
    def enabled(self) -> bool:
        return self.path.enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        self.path.enabled = value

    @property
    def answered(self) -> int:
        return int(ANSWERED._value.get() - self._start[0])

    @property
    def declined(self) -> int:
        return int(DECLINED._value.get() - self._start[1])


def _gathered() -> int:
    """Batches that waited for their writers, in this process."""
    return int(BATCHES_GATHERED._value.get())


@pytest.fixture
def fast(app: FastAPI) -> Fast:
    found: FastWrites = app.state.progress_fast_path
    assert found.enabled
    return Fast(found)


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
    assert fast.declined == 0

    assert by_fast_path == by_route
    assert [status for status, *_ in by_route] == [201, 200, 204]
    created = by_route[0][1]
    assert created["CompletedAt"] == AT
    assert created["Score"] == 10
    assert by_route[0][2].endswith(f"/team/team/progress/{tree.tasks[0]}")
    assert by_route[0][3] == "application/json"


async def test_the_write_is_recorded_like_the_routes(
    world: World, fast: Fast, app_state: AppState
) -> None:
    """Score, history (the graph), outbox event, read-model version, metrics."""
    org = world.org()
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
    async with app_state.db.session(write=False) as session:
        events = (await session.scalars(select(Event).where(Event.organization_id == org.id))).all()
    completed = [e for e in events if e.type == "progress.completed"]
    assert len(completed) == 1
    assert completed[0].payload["TaskId"] == tree.task(0, 0, 1)
    assert completed[0].payload["Score"] == 25
    assert completed[0].payload == done.json()  # the event carries what was answered


async def test_refusals_and_unusual_requests_take_the_route(
    world: World, fast: Fast, app_state: AppState
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

    refused = {
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
        "member": (
            await org.client.post(url, json={"TaskId": task}, headers=org.member),
            403,
        ),
        "no token": (await org.client.post(url, json={"TaskId": task}), 401),
        "unknown field": (
            await org.client.post(url, json={"TaskId": task, "Extra": 1}, headers=org.admin),
            422,
        ),
        "wrong type": (await org.client.post(url, json={"TaskId": 5}, headers=org.admin), 422),
        "not JSON": (await raw(b'{"TaskId": '), 400),
        "too deep": (await raw(b"[" * 40 + b"]" * 40), 400),
        "NUL": (await raw(b'{"TaskId": "\\u0000"}'), 422),
        "text/plain": (await raw(b"{}", "text/plain"), 415),
        "query": (
            await org.client.post(url + "?dryRun=1", json={"TaskId": task}, headers=org.admin),
            422,
        ),
    }
    for name, (response, status) in refused.items():
        assert response.status_code == status, (name, response.text)
        assert response.headers["content-type"] == "application/problem+json", name
    assert fast.answered == 0
    assert await score_of(org, team["Id"]) == 0
    assert await app_state.readmodel.version(org.id) == version

    archived = await org.client.patch(
        f"/team/{team['Id']}", json={"Status": "Archived"}, headers=org.admin
    )
    assert archived.status_code == 200, archived.text
    declined = fast.declined
    conflict = await complete(org, team["Id"], task)
    assert conflict.status_code == 409, conflict.text
    assert fast.declined == declined + 1
    assert fast.answered == 0


async def test_hostile_and_foreign_requests_write_nothing_through_the_fast_path(
    world: World, fast: Fast, app_state: AppState
) -> None:
    """Another organization's admin, Unicode-tricky ids, a body past the fast path's
    size or without a length: the route answers each (4xx problem, or the write itself
    for a valid large body), never a 5xx."""
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
    assert fast.answered == 0  # the batch refused both: nothing of another organization

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
    padded = b'{"TaskId": "' + task.encode() + b'"' + b" " * 2000 + b"}"
    large = await org.client.post(
        url, content=padded, headers={**org.admin, "Content-Type": "application/json"}
    )
    assert large.status_code == 201, large.text
    assert fast.answered == 1  # only the DELETE; both POSTs took the route
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


async def test_concurrent_writes_share_transactions(world: World, fast: Fast, app: FastAPI) -> None:
    org = world.org()
    teams = [await org.create_team() for _ in range(8)]
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[1, 2, 4, 8, 16]]])
    writes = app.state.progress_fast_path.writes
    before = (writes.batches, writes.writes)

    answers = await asyncio.gather(
        *(complete(org, team["Id"], task) for team in teams for task in tree.tasks)
    )
    assert {a.status_code for a in answers} == {201}, [a.text for a in answers]
    assert fast.answered == 40
    assert writes.writes - before[1] == 40
    assert writes.batches - before[0] < 40, "no two writes shared a transaction"
    for team in teams:
        assert await score_of(org, team["Id"]) == 31

    # The same completion asked for ten times at once: one 201, nine 200s, counted once;
    # then withdrawn by all ten: one 204, nine 404s.
    team, task = teams[0]["Id"], tree.tasks[0]
    gone = await org.client.delete(f"/team/{team}/progress/{task}", headers=org.admin)
    assert gone.status_code == 204
    again = await asyncio.gather(*(complete(org, team, task) for _ in range(10)))
    assert sorted(a.status_code for a in again) == [200] * 9 + [201]
    assert await score_of(org, team) == 31
    undone = await asyncio.gather(
        *(org.client.delete(f"/team/{team}/progress/{task}", headers=org.admin) for _ in range(10))
    )
    assert sorted(a.status_code for a in undone) == [204] + [404] * 9
    assert await score_of(org, team) == 30


class _HeldBatches:
    """Records each batch's size; holds the first one until ``release`` (so that writes
    queue behind it)."""

    def __init__(self, writes: Any) -> None:
        self.sizes: list[int] = []
        self.entered = asyncio.Event()
        self.released = asyncio.Event()
        self._commit = writes._commit

    async def __call__(self, batch: Any) -> Any:
        self.sizes.append(len(batch))
        if len(self.sizes) == 1:
            self.entered.set()
            await self.released.wait()
        return await self._commit(batch)


async def _queued(writes: Any, count: int) -> None:
    for _ in range(1000):
        if len(writes._queue) >= count:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{count} writes never queued")


@pytest.mark.parametrize("others_come_back", [True, False])
async def test_a_batch_gathers_the_writers_of_the_last_one(
    world: World, fast: Fast, monkeypatch: pytest.MonkeyPatch, others_come_back: bool
) -> None:
    """Three writes commit together while a fourth queues: a round of four. The next
    batch waits for four writes, and leaves the moment they are there (a window of a
    minute is never reached); if they never come, it leaves when the window ends with
    the one it has. Shutting down ends a wait."""
    org = world.org()
    teams = [await org.create_team() for _ in range(7)]
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[3]]])
    task = tree.task(0, 0, 0)
    writes = fast.writes
    monkeypatch.setattr(writes, "gather_window", 60.0 if others_come_back else 0.05)
    held = _HeldBatches(writes)
    monkeypatch.setattr(writes, "_commit", held)
    gathered = _gathered()

    first = [asyncio.create_task(complete(org, t["Id"], task)) for t in teams[:3]]
    await held.entered.wait()
    fourth = asyncio.create_task(complete(org, teams[3]["Id"], task))
    await _queued(writes, 1)
    held.released.set()
    answers = await asyncio.gather(*first)
    later = [fourth]
    if others_come_back:
        later += [asyncio.create_task(complete(org, t["Id"], task)) for t in teams[4:]]
    answers += await asyncio.wait_for(asyncio.gather(*later), 20)

    assert [a.status_code for a in answers] == [201] * len(answers), [a.text for a in answers]
    assert held.sizes == ([3, 4] if others_come_back else [3, 1])
    # Then the runner waits for the next round of four (it ends at shutdown).
    assert _gathered() == gathered + (2 if others_come_back else 1)
    for team in teams[: len(answers)]:
        assert await score_of(org, team["Id"]) == 3


async def test_a_write_with_nobody_around_never_waits(
    world: World, fast: Fast, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[1, 2, 4]]])
    monkeypatch.setattr(fast.writes, "gather_window", 60.0)
    gathered = _gathered()
    for task in tree.tasks:
        done = await asyncio.wait_for(complete(org, team["Id"], task), 20)
        assert done.status_code == 201, done.text
    assert _gathered() == gathered
    assert await score_of(org, team["Id"]) == 7


async def test_a_failed_batch_is_answered_by_the_route(
    world: World, fast: Fast, app_state: AppState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch that fails (here: the first one) leaves nothing written; each of its
    requests runs again through the route. On SQLite the failure comes after the
    batch's statements (its transaction rolls back); on PostgreSQL the connection is
    lost before them (each statement there is its own transaction)."""
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10]]])
    sqlite = app_state.db.is_sqlite
    target: Any = record if sqlite else ledger_pg
    name = "write_in_session" if sqlite else "write_batch"
    run = getattr(target, name)
    failures = []

    async def failing_once(first: Any, writes: Any, **options: Any) -> Any:
        if not failures:
            failures.append(len(writes))
            if not sqlite:
                raise asyncpg.ConnectionDoesNotExistError("the connection was closed")
            await run(first, writes)  # it wrote; the rollback must undo it
            raise OperationalError("COMMIT", {}, Exception("the database went away"))
        return await run(first, writes, **options)  # the route's write too

    monkeypatch.setattr(target, name, failing_once)
    done = await complete(org, team["Id"], tree.task(0, 0, 0))
    assert done.status_code == 201, done.text
    assert done.json()["Score"] == 10
    assert failures == [1]
    assert fast.writes.failed_batches == 1
    assert fast.declined == 1
    assert await score_of(org, team["Id"]) == 10


@pytest.mark.postgres_only
async def test_a_change_between_look_up_and_write_is_seen(
    world: World, fast: Fast, app_state: AppState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL: the batch looks up without locks. A completion that another request
    commits between the batch's look-up and its write fails the write's check (the
    team's version moved): nothing is written, and the batch is decided again."""
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 25]]])
    team_id = uuid.UUID(team["Id"])
    write = ledger_pg._write
    interleaved: list[int] = []

    async def after_the_look_up(fetch: Any, plan: Any) -> Any:
        if not interleaved:  # another request completes the other task, and commits
            interleaved.append(0)  # (its own write, a batch of one, passes through here)
            async with app_state.db.session() as session:
                other = schemas.ProgressCreate(TaskId=uuid.UUID(tree.task(0, 0, 1)))
                found = await record.complete(session, org_id=org.id, team_id=team_id, data=other)
            interleaved[0] = int(found.completion.score or 0)
        return await write(fetch, plan)

    monkeypatch.setattr(ledger_pg, "_write", after_the_look_up)
    statements: list[str] = []
    fast.writes.listeners.append(statements.append)
    done = await complete(org, team["Id"], tree.task(0, 0, 0))
    assert done.status_code == 201, done.text
    assert interleaved == [25]
    assert done.json()["Score"] == 35  # decided again after the other completion
    assert [sql.split()[0] for sql in statements] == ["SELECT", "WITH", "SELECT", "WITH"]
    assert fast.answered == 1
    assert await score_of(org, team["Id"]) == 35
    history = await org.client.get(f"/team/{team['Id']}/graph", headers=org.member)
    assert history.status_code == 200, history.text
    assert "35" in history.text


@pytest.mark.postgres_only
async def test_a_discipline_deleted_between_look_up_and_write(
    world: World, fast: Fast, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write's check finds the task's discipline gone: nothing is written, the
    batch is decided again and refuses (the route answers 404)."""
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10]]])
    write = ledger_pg._write
    deleted: list[int] = []

    async def after_the_look_up(fetch: Any, plan: Any) -> Any:
        if not deleted:
            gone = await org.client.delete(f"/discipline/{tree.id}", headers=org.admin)
            deleted.append(gone.status_code)
        return await write(fetch, plan)

    monkeypatch.setattr(ledger_pg, "_write", after_the_look_up)
    done = await complete(org, team["Id"], tree.task(0, 0, 0))
    assert deleted == [204]
    assert done.status_code == 404, done.text
    assert (fast.answered, fast.declined) == (0, 1)
    assert await score_of(org, team["Id"]) == 0


@pytest.mark.postgres_only
async def test_a_batch_that_keeps_meeting_changes_takes_the_route(
    world: World, fast: Fast, app_state: AppState, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10]]])
    write = ledger_pg._write
    moved = []

    async def always_moved(fetch: Any, plan: Any) -> Any:
        if len(moved) == ledger_pg.ATTEMPTS:  # the route's write (a batch of one)
            return await write(fetch, plan)
        async with app_state.db.session() as session:  # a rename: the version moves
            await session.execute(
                text("UPDATE teams SET version = version + 1 WHERE id = :id"),
                {"id": uuid.UUID(team["Id"])},
            )
        moved.append(1)
        return await write(fetch, plan)

    monkeypatch.setattr(ledger_pg, "_write", always_moved)
    done = await complete(org, team["Id"], tree.task(0, 0, 0))
    assert done.status_code == 201, done.text
    assert len(moved) == ledger_pg.ATTEMPTS
    assert (fast.answered, fast.declined, fast.writes.failed_batches) == (0, 1, 1)
    assert await score_of(org, team["Id"]) == 10


async def test_completions_racing_a_forced_discipline_delete(world: World, fast: Fast) -> None:
    """The batch locks the discipline of what it completes (as the route does): the
    delete waits for it, or it finds the task gone (404 through the route); never a
    5xx, never a completion left behind."""
    org = world.org()
    teams = [(await org.create_team())["Id"] for _ in range(4)]
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[1, 2, 4, 8]]])
    for team in teams:  # the delete has completions to withdraw
        assert (await complete(org, team, tree.tasks[0])).status_code == 201
    writes = [complete(org, team, task) for team in teams for task in tree.tasks[1:]]
    delete = org.client.delete(f"/discipline/{tree.id}?force=true", headers=org.admin)
    answers = await asyncio.gather(*writes[:6], delete, *writes[6:])
    deleted = answers.pop(6)
    assert deleted.status_code == 204, deleted.text
    assert {a.status_code for a in answers} <= {201, 404}, [a.text for a in answers]
    for team in teams:
        assert await score_of(org, team) == 0
        left = await org.client.get(f"/team/{team}/progress", headers=org.member)
        assert left.json() == []
        assert sum(step.delta for step in await history(world.db, team)) == 0


def test_only_canonical_paths_match() -> None:
    team = "0190a0b1-0000-7000-8000-000000000001"
    task = "0190a0b1-0000-7000-8000-000000000002"
    assert match("POST", f"/team/{team}/progress") == (canonical_uuid(team), None)
    assert match("DELETE", f"/team/{team}/progress/{task}") == (
        canonical_uuid(team),
        canonical_uuid(task),
    )
    for method, path in [
        ("POST", f"/team/{team.upper()}/progress"),
        ("POST", f"/team/{team}/progress/"),
        ("POST", f"/team/{team}/progress/{task}"),
        ("DELETE", f"/team/{team}/progress"),
        ("PUT", f"/team/{team}/progress"),
        ("POST", f"/team/{team.replace('-', '')}/progress"),
        ("POST", f"/teams/{team}/progress"),
        ("POST", f"//team/{team}/progress"),
    ]:
        assert match(method, path) is None, path
