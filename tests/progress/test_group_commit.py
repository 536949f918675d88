"""The progress writes' group commit (``questline.progress.group_commit``), through the
fast lane: concurrent writes sharing transactions, the gather window, failed batches
and batches that meet concurrent changes (``questline.progress.ledger_pg``)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import pytest
from fastapi import FastAPI
from sqlalchemy.exc import OperationalError

from questline.progress import ledger_pg, record, schemas
from questline.storage import tenancy
from tests.events.factories import listened_to, recorded
from tests.factories import World
from tests.learners.factories import ANSWER, learners_game
from tests.progress.factories import complete, history, make_discipline, score_of
from tests.progress.fast import Fast, batches_gathered
from tests.support.hang import HANG_GUARD
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def test_concurrent_writes_share_transactions(world: World, fast: Fast, app: FastAPI) -> None:
    org = world.org()
    teams = [await org.create_team() for _ in range(8)]
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[1, 2, 4, 8, 16]]])
    writes = AppHarness(app).progress_writes
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
    monkeypatch.setattr(writes, "gather_window", 3600.0 if others_come_back else 0.05)
    held = _HeldBatches(writes)
    monkeypatch.setattr(writes, "_commit", held)
    gathered = batches_gathered()

    first = [asyncio.create_task(complete(org, t["Id"], task)) for t in teams[:3]]
    await held.entered.wait()
    fourth = asyncio.create_task(complete(org, teams[3]["Id"], task))
    await _queued(writes, 1)
    held.released.set()
    answers = await asyncio.gather(*first)
    later = [fourth]
    if others_come_back:
        later += [asyncio.create_task(complete(org, t["Id"], task)) for t in teams[4:]]
    async with asyncio.timeout(HANG_GUARD):
        answers += await asyncio.gather(*later)

    assert [a.status_code for a in answers] == [201] * len(answers), [a.text for a in answers]
    assert held.sizes == ([3, 4] if others_come_back else [3, 1])
    # Then the runner waits for the next round of four (it ends at shutdown).
    assert batches_gathered() == gathered + (2 if others_come_back else 1)
    for team in teams[: len(answers)]:
        assert await score_of(org, team["Id"]) == 3


async def test_answers_and_progress_writes_share_a_batch(
    world: World, fast: Fast, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An admin's completion and withdrawal and two members' answers (one wrong, one
    right) queued behind a held batch commit as one batch, each decided as it would be
    alone (PostgreSQL looks the four up in one statement: ``ledger_pg.mixed_lookup_sql``)."""
    game = await learners_game(world, max_attempts=None)
    org, team = game.org, game.team_id
    assert (await complete(org, team, game.task("Self task"))).status_code == 201
    before = await game.score()
    spare = await org.create_team()
    writes = fast.writes
    held = _HeldBatches(writes)
    monkeypatch.setattr(writes, "_commit", held)

    first = asyncio.create_task(complete(org, spare["Id"], game.task("Admin task")))
    await held.entered.wait()
    queued = [
        asyncio.create_task(complete(org, team, game.task("Admin task"))),
        asyncio.create_task(
            org.client.delete(f"/team/{team}/progress/{game.task('Self task')}", headers=org.admin)
        ),
        asyncio.create_task(game.attempt(game.alice, "Answer task", "not it")),
        asyncio.create_task(game.attempt(game.bob, "Answer task", ANSWER)),
    ]
    await _queued(writes, len(queued))
    held.released.set()
    async with asyncio.timeout(HANG_GUARD):
        answers = await asyncio.gather(first, *queued)

    assert [a.status_code for a in answers] == [201, 201, 204, 200, 201], [a.text for a in answers]
    assert held.sizes == [1, 4]
    assert answers[3].json() == {"Correct": False, "AttemptsLeft": None}
    assert answers[4].json()["Completion"]["MemberId"] == game.bob_id
    assert await game.score() == before + 5 - 7 + 20
    listed = await game.client.get(f"/team/{team}/attempts", headers=org.admin)
    assert [(a["Correct"], a["MemberId"]) for a in listed.json()] == [
        (False, game.alice_id),
        (True, game.bob_id),
    ]


async def test_a_write_with_nobody_around_never_waits(
    world: World, fast: Fast, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[1, 2, 4]]])
    monkeypatch.setattr(fast.writes, "gather_window", 3600.0)
    gathered = batches_gathered()
    for task in tree.tasks:
        async with asyncio.timeout(HANG_GUARD):
            done = await complete(org, team["Id"], task)
        assert done.status_code == 201, done.text
    assert batches_gathered() == gathered
    assert await score_of(org, team["Id"]) == 7


async def test_a_failed_batch_is_answered_by_the_route(
    world: World, fast: Fast, app_state: AppHarness, monkeypatch: pytest.MonkeyPatch
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
    failures: list[int] = []

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
    world: World, fast: Fast, app_state: AppHarness, monkeypatch: pytest.MonkeyPatch
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
            with tenancy.acting_for(org.id):  # another request: acts for its organization
                async with app_state.db.session() as session:
                    other = schemas.ProgressCreate(TaskId=uuid.UUID(tree.task(0, 0, 1)))
                    found = await record.complete(
                        session, org_id=org.id, team_id=team_id, data=other
                    )
            interleaved[0] = int(found.completion.score or 0)
        return await write(fetch, plan)

    monkeypatch.setattr(ledger_pg, "_write", after_the_look_up)
    statements: list[str] = []
    fast.writes.listeners.append(statements.append)
    done = await complete(org, team["Id"], tree.task(0, 0, 0))
    assert done.status_code == 201, done.text
    assert interleaved == [25]
    assert done.json()["Score"] == 35  # decided again after the other completion
    # Look-up, write; again. Where the batch is one transaction (row security behind a
    # transaction pooler), the second look-up first locks the teams (ledger_pg.HOLD).
    shared = app_state.db.statements_share_a_transaction
    again = ["SELECT", "SELECT"] if shared else ["SELECT"]
    assert [sql.split()[0] for sql in statements] == ["SELECT", "WITH", *again, "WITH"]
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
    batch is decided again and refuses: the fast lane answers the 404."""
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
    assert (fast.answered, fast.declined) == (1, 0)
    assert await score_of(org, team["Id"]) == 0


@pytest.mark.postgres_only
async def test_a_batch_that_keeps_meeting_changes_takes_the_route(
    world: World, fast: Fast, app_state: AppHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every attempt of the batch finds the team's version moved between its look-up and
    its write: the batch fails and the route writes the completion.

    Where each statement of the batch is its own transaction, the version moves in
    another one, as a concurrent rename would. Where the batch is one transaction (row
    security behind a transaction pooler) it holds the team after a failed check
    (``ledger_pg.HOLD``): a rename from another transaction would wait for the batch,
    which waits for it, so the version moves inside the batch's transaction instead —
    the same check, failing the same way."""
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10]]])
    write = ledger_pg._write
    moved: list[int] = []
    rename = "UPDATE teams SET version = version + 1 WHERE organization_id = $1 AND id = $2"
    ids = (org.id, uuid.UUID(team["Id"]))

    async def always_moved(fetch: Any, plan: Any) -> Any:
        if len(moved) == ledger_pg.ATTEMPTS:  # the route's write (a batch of one)
            return await write(fetch, plan)
        db = app_state.db
        if db.statements_share_a_transaction:  # in the batch's own transaction (see above)
            await fetch(rename, *ids)
        else:  # a rename in another transaction: the version moves
            elsewhere = db.driver_acting_for(org.id) if db.row_security else db.driver_connection()
            async with elsewhere as driver:
                await driver.execute(rename, *ids)
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


@pytest.mark.parametrize("fast_path", [True, False], ids=["group-commit", "route"])
async def test_events_are_recorded_for_the_organizations_a_consumer_listens_to(
    world: World, app_state: AppHarness, fast_path: bool
) -> None:
    """The group commit and the route record no outbox event for an organization no
    consumer listens to (nothing would take it); the other organization's events of the
    same batches are recorded."""
    app_state.configure(progress_fast_path_enabled=fast_path)
    quiet, listened = world.org(), world.org()
    await listened_to(listened)
    trees = {
        org.id: await make_discipline(world.db, org_id=org.id, shape=[[[1, 2]]])
        for org in (quiet, listened)
    }
    teams = {org.id: [await org.create_team() for _ in range(3)] for org in (quiet, listened)}

    answers = await asyncio.gather(
        *(
            complete(org, team["Id"], task)
            for org in (quiet, listened)
            for team in teams[org.id]
            for task in trees[org.id].tasks
        )
    )
    assert {a.status_code for a in answers} == {201}, [a.text for a in answers]
    team = teams[quiet.id][0]["Id"]
    gone = await quiet.client.delete(
        f"/team/{team}/progress/{trees[quiet.id].tasks[0]}", headers=quiet.admin
    )
    assert gone.status_code == 204

    progress = [e for e in await recorded(app_state) if e.type.startswith("progress.")]
    by_org = {
        org.id: [e.type for e in progress if e.organization_id == org.id]
        for org in (quiet, listened)
    }
    assert by_org[listened.id] == ["progress.completed"] * 6
    assert by_org[quiet.id] == []
    for org in (quiet, listened):  # the scores do not depend on it
        assert [await score_of(org, t["Id"]) for t in teams[org.id]][1:] == [3, 3]
    assert await score_of(quiet, team) == 2
