"""Recording and withdrawing a completion in as few statements as the backend allows.

A progress write used to cost ten statements through the ORM (discipline lock, team
lock, task, insert, score, history, version, read-back, event) — each a round trip, and
on SQLite three or four thread hops. Here:

* **PostgreSQL** — completing is two statements: ``LOOKUP_PG`` locks the task's
  discipline (``FOR KEY SHARE``, inside the lateral subquery, so *before* the team),
  then the team (``FOR UPDATE OF teams``, at the top of the plan), and reads the team's
  status and score, the task and any existing completion; ``COMPLETE_PG`` is one
  data-modifying CTE: insert the completion (``ON CONFLICT DO NOTHING``), add to the
  score, append the history step, append the outbox event (its JSON built in Python,
  the new score spliced in by SQL) and bump the organization's read-model version (its
  notification goes out after the commit: ``questline.storage.notify``). The lock
  order stays the one documented in
  ``service.hold_discipline_of_task``: discipline, then team, then completions.
  Withdrawing is one statement (``WITHDRAW_PG``: lock the team, delete, score,
  history, version) plus the event's insert.
* **SQLite** — the write transaction (``BEGIN IMMEDIATE``) holds the database's one
  write lock, so nothing changes between statements: the lookup decides, and the
  writes follow, all in one round trip to the driver's thread
  (``questline.storage.db.run_in_sqlite_thread``).

Both keep what ``service.complete_task`` promised: idempotent per team and task (only
the request that inserted the row changes the score), archived teams refuse (409), an
unknown or invisible task is 404, and the score changes atomically with its history.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from questline import events
from questline.events.service import as_payload
from questline.progress import schemas
from questline.progress.models import ScoreChange
from questline.progress.service import check_completed_at
from questline.readmodel.versions import BUMP_SQLITE, note_bump
from questline.storage.db import (
    SqliteBatch,
    new_id,
    parse_sqlite_time,
    run_in_sqlite_thread,
    utcnow,
)
from questline.teams.models import TeamStatus
from questline.web.errors import Conflict, not_found
from questline.web.metrics import TASKS_COMPLETED, TASKS_WITHDRAWN, count_on_commit


@dataclass(frozen=True, slots=True)
class Recorded:
    completion: schemas.Completion
    """With ``score``: the team's score after the request."""
    created: bool
    body: bytes | None = None
    """The completion's JSON as the API writes it, when already made (the group commit
    makes it once for the outbox event and the response)."""


@dataclass(frozen=True, slots=True)
class _Found:
    status: str
    score: int
    discipline_id: uuid.UUID | None
    points: int | None
    done_discipline_id: uuid.UUID | None
    done_points: int | None
    done_at: dt.datetime | None


def _refuse_archived(status: str) -> None:
    if status != TeamStatus.ACTIVE.value:
        raise Conflict("The team is archived and refuses progress; make it Active first.")


def _existing(found: _Found, team_id: uuid.UUID, task_id: uuid.UUID) -> schemas.Completion:
    """The completion the team already had (a repeat changes nothing)."""
    assert found.done_discipline_id is not None
    assert found.done_points is not None
    assert found.done_at is not None
    done = Done(found.done_discipline_id, found.done_points, found.done_at)
    return done.as_completion(team_id, task_id, found.score)


@dataclass(frozen=True, slots=True)
class Done:
    """A completion as stored: what it earned, and when."""

    discipline_id: uuid.UUID
    points: int
    completed_at: dt.datetime

    def as_completion(
        self, team_id: uuid.UUID, task_id: uuid.UUID, score: int | None
    ) -> schemas.Completion:
        return schemas.Completion(
            team_id=team_id,
            task_id=task_id,
            discipline_id=self.discipline_id,
            points=self.points,
            completed_at=self.completed_at,
            score=score,
        )


def _decide(found: _Found | None) -> None:
    """The refusals, in the order the API always gave them."""
    if found is None:
        raise not_found("team")
    _refuse_archived(found.status)
    if found.discipline_id is None:
        raise not_found("task")


def _event_prefix(completion: schemas.Completion) -> str:
    """The event's JSON up to its ``Score``: the statement appends the new score and ``}``."""
    payload = as_payload(completion)
    payload.pop("Score", None)
    return json.dumps(payload)[:-1] + ', "Score": '


# -- PostgreSQL -------------------------------------------------------------------

LOOKUP_PG = text(
    """
SELECT t.status, t.score, k.discipline_id, k.points,
       c.discipline_id AS done_discipline_id, c.points AS done_points,
       c.completed_at AS done_at
FROM teams AS t
LEFT JOIN LATERAL (
    SELECT tasks.discipline_id, tasks.points
    FROM tasks JOIN disciplines AS d ON d.id = tasks.discipline_id
    WHERE tasks.id = :task_id
      AND (d.organization_id IS NULL OR d.organization_id = :org_id)
    FOR KEY SHARE OF d
) AS k ON true
LEFT JOIN task_completions AS c
  ON c.organization_id = t.organization_id AND c.team_id = t.id AND c.task_id = :task_id
WHERE t.organization_id = :org_id AND t.id = :team_id
FOR UPDATE OF t
"""
)

_SCORE_PG = """
UPDATE teams SET
    score = teams.score + {delta},
    tasks_completed = teams.tasks_completed + {count},
    version = teams.version + 1,
    score_reached_at = CASE
        WHEN EXISTS (SELECT 1 FROM score_events AS e
                     WHERE e.organization_id = :org_id AND e.team_id = :team_id)
             AND teams.score_reached_at > CAST(:at AS timestamptz)
        THEN teams.score_reached_at ELSE CAST(:at AS timestamptz) END,
    updated_at = :now
FROM {source}
WHERE teams.organization_id = :org_id AND teams.id = :team_id
RETURNING teams.score
"""

_HISTORY_PG = """
INSERT INTO score_events (organization_id, id, team_id, task_id, discipline_id, kind,
                          delta, score_after, at, recorded_at)
SELECT :org_id, :history_id, :team_id, :task_id, {discipline}, :kind, {delta}, upd.score,
       CAST(:at AS timestamptz), :now
FROM {source}
"""

_BUMP_PG = """
INSERT INTO readmodel_versions (organization_id, version)
SELECT :org_id, 1 FROM upd
ON CONFLICT (organization_id) DO UPDATE SET version = readmodel_versions.version + 1
RETURNING version
"""

COMPLETE_PG = text(
    f"""
WITH ins AS (
    INSERT INTO task_completions (organization_id, team_id, task_id, discipline_id, points,
                                  completed_at, created_at)
    VALUES (:org_id, :team_id, :task_id, :discipline_id, :points, :at, :now)
    ON CONFLICT DO NOTHING
    RETURNING points
), upd AS (
    {_SCORE_PG.format(delta="ins.points", count="1", source="ins")}
), hist AS (
    {_HISTORY_PG.format(discipline=":discipline_id", delta=":points", source="upd")}
), ev AS (
    INSERT INTO events (organization_id, id, type, payload, created_at, pending)
    SELECT :org_id, :event_id, 'progress.completed',
           CAST(CAST(:prefix AS text) || upd.score || '}}' AS json), :now, true
    FROM upd
), bump AS (
    {_BUMP_PG}
)
SELECT upd.score, bump.version
FROM upd, bump
"""
)

WITHDRAW_PG = text(
    f"""
WITH tm AS (
    SELECT status FROM teams
    WHERE organization_id = :org_id AND id = :team_id
    FOR UPDATE
), del AS (
    DELETE FROM task_completions AS c USING tm
    WHERE c.organization_id = :org_id AND c.team_id = :team_id AND c.task_id = :task_id
      AND tm.status = 'Active'
    RETURNING c.discipline_id, c.points, c.completed_at
), upd AS (
    {_SCORE_PG.format(delta="-del.points", count="-1", source="del")}
), hist AS (
    {_HISTORY_PG.format(discipline="del.discipline_id", delta="-del.points", source="upd, del")}
), bump AS (
    {_BUMP_PG}
)
SELECT tm.status, del.discipline_id, del.points, del.completed_at, upd.score, bump.version
FROM tm
LEFT JOIN del ON true
LEFT JOIN upd ON true
LEFT JOIN bump ON true
"""
)

EVENT_PG = text(
    "INSERT INTO events (organization_id, id, type, payload, created_at, pending) "
    "VALUES (:org_id, :event_id, :type, CAST(:payload AS json), :now, true)"
)


async def _complete_pg(
    session: AsyncSession, org_id: uuid.UUID, team_id: uuid.UUID, data: schemas.ProgressCreate
) -> Recorded:
    params: dict[str, Any] = {"org_id": org_id, "team_id": team_id, "task_id": data.task_id}
    row = (await session.execute(LOOKUP_PG, params)).one_or_none()
    found = None if row is None else _Found(*row)
    _decide(found)
    assert found is not None
    assert found.discipline_id is not None
    assert found.points is not None
    now = utcnow()
    completed_at = check_completed_at(data.completed_at, now)
    if found.done_at is None:
        completion = Done(found.discipline_id, found.points, completed_at).as_completion(
            team_id, data.task_id, None
        )
        written = (
            await session.execute(
                COMPLETE_PG,
                {
                    **params,
                    "discipline_id": found.discipline_id,
                    "points": found.points,
                    "at": completed_at,
                    "now": now,
                    "history_id": new_id(),
                    "kind": ScoreChange.COMPLETED.value,
                    "event_id": new_id(),
                    "prefix": _event_prefix(completion),
                },
            )
        ).one_or_none()
        if written is not None:
            note_written(session, org_id, int(written.version), TASKS_COMPLETED)
            return Recorded(completion.model_copy(update={"score": int(written.score)}), True)
        # A concurrent request completed it between our read and our insert.
        row = (await session.execute(LOOKUP_PG, params)).one()
        found = _Found(*row)
    return Recorded(_existing(found, team_id, data.task_id), False)


async def _withdraw_pg(
    session: AsyncSession, org_id: uuid.UUID, team_id: uuid.UUID, task_id: uuid.UUID
) -> schemas.Completion:
    now = utcnow()
    row = (
        await session.execute(
            WITHDRAW_PG,
            {
                "org_id": org_id,
                "team_id": team_id,
                "task_id": task_id,
                "at": now,
                "now": now,
                "history_id": new_id(),
                "kind": ScoreChange.WITHDRAWN.value,
            },
        )
    ).one_or_none()
    if row is None:
        raise not_found("team")
    _refuse_archived(row.status)
    if row.version is None:
        raise not_found("completion of this task by this team")
    withdrawn = Done(row.discipline_id, row.points, row.completed_at).as_completion(
        team_id, task_id, int(row.score)
    )
    await session.execute(
        EVENT_PG,
        {
            "org_id": org_id,
            "event_id": new_id(),
            "type": "progress.withdrawn",
            "payload": json.dumps(as_payload(withdrawn)),
            "now": now,
        },
    )
    note_written(session, org_id, int(row.version), TASKS_WITHDRAWN)
    return withdrawn


# -- SQLite -----------------------------------------------------------------------

LOOKUP_SQLITE = """
SELECT t.status, t.score, k.discipline_id, k.points,
       c.discipline_id, c.points, c.completed_at
FROM teams AS t
LEFT JOIN (
    SELECT tasks.discipline_id AS discipline_id, tasks.points AS points
    FROM tasks JOIN disciplines AS d ON d.id = tasks.discipline_id
    WHERE tasks.id = ? AND (d.organization_id IS NULL OR d.organization_id = ?)
) AS k ON 1
LEFT JOIN task_completions AS c
  ON c.organization_id = t.organization_id AND c.team_id = t.id AND c.task_id = ?
WHERE t.organization_id = ? AND t.id = ?
"""

INSERT_COMPLETION_SQLITE = """
INSERT INTO task_completions (organization_id, team_id, task_id, discipline_id, points,
                              completed_at, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
"""

SCORE_SQLITE = """
UPDATE teams SET
    score = score + ?,
    tasks_completed = tasks_completed + ?,
    version = version + 1,
    score_reached_at = CASE
        WHEN EXISTS (SELECT 1 FROM score_events AS e
                     WHERE e.organization_id = teams.organization_id AND e.team_id = teams.id)
             AND score_reached_at > ?
        THEN score_reached_at ELSE ? END,
    updated_at = ?
WHERE organization_id = ? AND id = ?
RETURNING score
"""

HISTORY_SQLITE = """
INSERT INTO score_events (organization_id, id, team_id, task_id, discipline_id, kind,
                          delta, score_after, at, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

EVENT_SQLITE = """
INSERT INTO events (organization_id, id, type, payload, created_at, pending)
VALUES (?, ?, ?, ?, ?, 1)
"""

WITHDRAW_SQLITE = """
DELETE FROM task_completions
WHERE organization_id = ? AND team_id = ? AND task_id = ?
RETURNING discipline_id, points, completed_at
"""


def _score_sqlite(
    batch: SqliteBatch,
    *,
    org_id: uuid.UUID,
    team_id: uuid.UUID,
    task_id: uuid.UUID,
    discipline_id: uuid.UUID,
    kind: ScoreChange,
    delta: int,
    at: dt.datetime,
    now: dt.datetime,
) -> int:
    """The score's change and its history step; returns the new score."""
    count = 1 if kind is ScoreChange.COMPLETED else -1
    (score,) = batch.one(SCORE_SQLITE, delta, count, at, at, now, org_id, team_id)
    batch.rows(
        HISTORY_SQLITE,
        org_id,
        new_id(),
        team_id,
        task_id,
        discipline_id,
        kind,
        delta,
        score,
        at,
        now,
    )
    return int(score)


def _finish_sqlite(
    batch: SqliteBatch, org_id: uuid.UUID, kind: str, completion: schemas.Completion
) -> int:
    """The outbox event and the version bump; returns the version."""
    now = utcnow()
    payload = json.dumps(as_payload(completion))
    batch.rows(EVENT_SQLITE, org_id, new_id(), kind, payload, now)
    (version,) = batch.one(BUMP_SQLITE, org_id)
    return int(version)


def complete_sqlite_work(
    org_id: uuid.UUID, team_id: uuid.UUID, data: schemas.ProgressCreate
) -> Callable[[SqliteBatch], tuple[Recorded, int] | BaseException]:
    """The statements of a completion, to run in the SQLite driver's thread: the
    completion and the version it bumped (0: a repeat, nothing written), or the refusal
    (404, 409, 422), raised on the event loop, with nothing written."""

    def work(batch: SqliteBatch) -> tuple[Recorded, int] | BaseException:
        now = utcnow()  # under the write lock: the history's times follow commit order
        row = batch.one(LOOKUP_SQLITE, data.task_id, org_id, data.task_id, org_id, team_id)
        found = None
        if row is not None:
            found = _Found(
                status=row[0],
                score=int(row[1]),
                discipline_id=None if row[2] is None else uuid.UUID(row[2]),
                points=row[3],
                done_discipline_id=None if row[4] is None else uuid.UUID(row[4]),
                done_points=row[5],
                done_at=None if row[6] is None else parse_sqlite_time(row[6]),
            )
        try:
            _decide(found)
            assert found is not None
            assert found.discipline_id is not None
            completed_at = check_completed_at(data.completed_at, now)
        except Exception as refused:  # 404, 409, 422: raised on the event loop
            return refused
        if found.done_at is not None:
            return Recorded(_existing(found, team_id, data.task_id), False), 0
        points = int(found.points or 0)
        batch.rows(
            INSERT_COMPLETION_SQLITE,
            org_id,
            team_id,
            data.task_id,
            found.discipline_id,
            points,
            completed_at,
            now,
        )
        score = _score_sqlite(
            batch,
            org_id=org_id,
            team_id=team_id,
            task_id=data.task_id,
            discipline_id=found.discipline_id,
            kind=ScoreChange.COMPLETED,
            delta=points,
            at=completed_at,
            now=now,
        )
        completion = Done(found.discipline_id, points, completed_at).as_completion(
            team_id, data.task_id, score
        )
        version = _finish_sqlite(batch, org_id, "progress.completed", completion)
        return Recorded(completion, True), version

    return work


def withdraw_sqlite_work(
    org_id: uuid.UUID, team_id: uuid.UUID, task_id: uuid.UUID
) -> Callable[[SqliteBatch], tuple[schemas.Completion, int] | BaseException]:
    """The statements of a withdrawal, to run in the SQLite driver's thread: the
    withdrawn completion and the version bumped, or the refusal (nothing written)."""

    def work(batch: SqliteBatch) -> tuple[schemas.Completion, int] | BaseException:
        team = batch.one(
            "SELECT status FROM teams WHERE organization_id = ? AND id = ?", org_id, team_id
        )
        try:
            if team is None:
                raise not_found("team")
            _refuse_archived(team[0])
        except Exception as refused:
            return refused
        removed = batch.one(WITHDRAW_SQLITE, org_id, team_id, task_id)
        if removed is None:
            return not_found("completion of this task by this team")
        discipline_id, points, completed_at = uuid.UUID(removed[0]), int(removed[1]), removed[2]
        now = utcnow()
        score = _score_sqlite(
            batch,
            org_id=org_id,
            team_id=team_id,
            task_id=task_id,
            discipline_id=discipline_id,
            kind=ScoreChange.WITHDRAWN,
            delta=-points,
            at=now,
            now=now,
        )
        done = Done(discipline_id, points, parse_sqlite_time(completed_at))
        withdrawn = done.as_completion(team_id, task_id, score)
        return withdrawn, _finish_sqlite(batch, org_id, "progress.withdrawn", withdrawn)

    return work


async def _complete_sqlite(
    session: AsyncSession, org_id: uuid.UUID, team_id: uuid.UUID, data: schemas.ProgressCreate
) -> Recorded:
    outcome = await run_in_sqlite_thread(session, complete_sqlite_work(org_id, team_id, data))
    recorded = _settled(session, org_id, outcome)
    assert isinstance(recorded, Recorded)
    return recorded


async def _withdraw_sqlite(
    session: AsyncSession, org_id: uuid.UUID, team_id: uuid.UUID, task_id: uuid.UUID
) -> schemas.Completion:
    outcome = await run_in_sqlite_thread(session, withdraw_sqlite_work(org_id, team_id, task_id))
    withdrawn = _settled(session, org_id, outcome)
    assert isinstance(withdrawn, schemas.Completion)
    return withdrawn


def _settled(
    session: AsyncSession,
    org_id: uuid.UUID,
    outcome: tuple[Recorded | schemas.Completion, int] | BaseException,
) -> Recorded | schemas.Completion:
    """A SQLite work's outcome back on the event loop: its refusal raised, its write
    noted for the commit (a repeated completion wrote nothing)."""
    if isinstance(outcome, BaseException):
        raise outcome
    result, version = outcome
    if isinstance(result, schemas.Completion):
        note_written(session, org_id, version, TASKS_WITHDRAWN)
    elif result.created:
        note_written(session, org_id, version, TASKS_COMPLETED)
    return result


# -- both -------------------------------------------------------------------------


def note_written(session: AsyncSession, org_id: uuid.UUID, version: int, counter: Any) -> None:
    """After the statements wrote: what the commit hands on (read model, dispatcher,
    metrics)."""
    note_bump(session, org_id, version)
    events.note_recorded(session)
    count_on_commit(session, counter)


def _is_sqlite(session: AsyncSession) -> bool:
    return session.get_bind().dialect.name == "sqlite"


async def complete(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, data: schemas.ProgressCreate
) -> Recorded:
    """Record that the team completed the task; a repeat changes nothing (``created``
    False, the completion as first recorded, the current score)."""
    if _is_sqlite(session):
        return await _complete_sqlite(session, org_id, team_id, data)
    return await _complete_pg(session, org_id, team_id, data)


async def withdraw(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, task_id: uuid.UUID
) -> schemas.Completion:
    """Take back a completion (minus its points, appended to the history); returns it
    with the team's new score. 404 for an unknown team or completion, 409 archived."""
    if _is_sqlite(session):
        return await _withdraw_sqlite(session, org_id, team_id, task_id)
    return await _withdraw_pg(session, org_id, team_id, task_id)


# -- many writes in one transaction (the group commit of ``progress.batching``) ---


@dataclass(frozen=True, slots=True)
class Completing:
    org_id: uuid.UUID
    team_id: uuid.UUID
    data: schemas.ProgressCreate


@dataclass(frozen=True, slots=True)
class Withdrawing:
    org_id: uuid.UUID
    team_id: uuid.UUID
    task_id: uuid.UUID


Write = Completing | Withdrawing
Outcome = Recorded | schemas.Completion | None
"""What a write of a batch did: ``Recorded`` (completed, or found done), the withdrawn
``Completion``, or ``None``: refused, nothing written (the route answers it)."""


async def record_many_sqlite(session: AsyncSession, writes: Sequence[Write]) -> list[Outcome]:
    """Run ``writes`` in the session's transaction, in one round trip to the SQLite
    driver's thread (SQLite has one writer: nothing waits for locks in between); each
    write's outcome, in order (``None``: refused, nothing written for it). On
    PostgreSQL: ``progress.batchwrite``."""
    works = [
        complete_sqlite_work(w.org_id, w.team_id, w.data)
        if isinstance(w, Completing)
        else withdraw_sqlite_work(w.org_id, w.team_id, w.task_id)
        for w in writes
    ]
    done = await run_in_sqlite_thread(session, lambda batch: [work(batch) for work in works])
    return [
        None if isinstance(outcome, BaseException) else _settled(session, write.org_id, outcome)
        for write, outcome in zip(writes, done, strict=True)
    ]
