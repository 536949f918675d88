"""The progress ledger on SQLite: a batch of writes in the session's transaction, in ONE
round trip to the thread that owns the connection (``storage.db.run_in_sqlite_thread``).
The route runs a batch of one, the group commit a batch of many: ``write_batch``.

The transaction holds the database's one write lock (``BEGIN IMMEDIATE``), so nothing
changes between the statements: the look-up of each write (``LOOKUP``), then
``ledger.Plan`` decides them all, then the net result is written, a statement a row
(the outbox's and the version's SQL: ``events.outbox_sql``, ``versions.bump_sql``).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from questline.events.fanout import EVERYONE, Listeners
from questline.events.service import outbox_sql
from questline.members.callers import names_of
from questline.progress.answer_sight import answer_sight
from questline.progress.ledger import (
    Answering,
    Completing,
    Done,
    Outcome,
    Plan,
    Refused,
    TeamState,
    Write,
    Written,
    task_of,
    written,
)
from questline.progress.rates import RATE_WINDOW
from questline.readmodel.versions import bump_sql
from questline.storage.db import SqliteBatch, parse_sqlite_time, run_in_sqlite_thread, utcnow

LOOKUP = """
SELECT {listened}, t.status, t.score, t.score_reached_at, t.version,
       EXISTS (SELECT 1 FROM score_events AS e
               WHERE e.organization_id = t.organization_id AND e.team_id = t.id),
       k.discipline_id, k.points,
       c.discipline_id, c.points, c.completed_at, c.member_id, c.recorded_by,
       EXISTS (SELECT 1 FROM team_members AS m
               WHERE m.organization_id = t.organization_id AND m.team_id = t.id
                 AND m.member_id = ?)
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


@functools.lru_cache(maxsize=8)
def lookup_sql(listeners: Listeners) -> str:
    """``LOOKUP`` asking ``listeners`` whether the write's organization is listened to."""
    return LOOKUP.format(listened=listeners.sql("t.organization_id"))


ANSWER_LOOKUP = """
SELECT k.check_kind, k.max_attempts, k.answers, k.owner, k.level_id, k.sequential,
       k.discipline_id, k.points,
       CASE WHEN k.max_attempts IS NOT NULL THEN (
           SELECT count(*) FROM task_attempts AS a
           WHERE a.organization_id = ?1 AND a.team_id = ?2 AND a.task_id = ?3) END,
       (SELECT json_group_array(json_array(m.id, m.email_key, EXISTS (
                   SELECT 1 FROM team_members AS tm
                   WHERE tm.organization_id = m.organization_id AND tm.team_id = ?2
                     AND tm.member_id = m.id)))
        FROM members AS m
        WHERE m.organization_id = ?1 AND m.active IS NOT 0
          AND m.id IN (SELECT n.id FROM members AS n
                       WHERE n.organization_id = ?1
                         AND n.email_key IN (SELECT value FROM json_each(?4))
                       UNION ALL SELECT ?5)),
       l.title, p.id, p.title,
       (SELECT count(*) FROM tasks AS pt WHERE pt.level_id = p.id),
       (SELECT count(*) FROM task_completions AS c JOIN tasks AS pt ON pt.id = c.task_id
        WHERE c.organization_id = ?1 AND c.team_id = ?2 AND pt.level_id = p.id)
FROM (SELECT 1) AS one
LEFT JOIN (
    SELECT tasks.check_kind, tasks.max_attempts, tasks.answers, d.organization_id AS owner,
           tasks.level_id, d.sequential, tasks.discipline_id, tasks.points
    FROM tasks JOIN disciplines AS d ON d.id = tasks.discipline_id
    WHERE tasks.id = ?3 AND (d.organization_id IS NULL OR d.organization_id = ?1)
) AS k ON 1
LEFT JOIN levels AS l ON l.id = k.level_id
LEFT JOIN levels AS p ON k.sequential AND p.discipline_id = k.discipline_id
  AND p.position = (SELECT max(q.position) FROM levels AS q
                    WHERE q.discipline_id = k.discipline_id AND q.position < l.position)
"""
"""What an answer reads beyond ``LOOKUP`` (``answer_sight.COLUMNS``): ?1 organization,
?2 team, ?3 task, ?4 the caller's e-mail keys (a JSON array), ?5 its subject as a member
id."""

RECENT = """
SELECT at FROM task_attempts
WHERE organization_id = ? AND actor = ? AND at > ?
ORDER BY at DESC LIMIT ? OFFSET ?
"""
"""An actor's attempts within the minute that may be at its limit (``rates.window``)."""

ATTEMPT = """
INSERT INTO task_attempts (organization_id, id, team_id, task_id, member_id, actor, at,
                           correct, answer)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

ADD = """
INSERT INTO task_completions (organization_id, team_id, task_id, discipline_id, points,
                              completed_at, member_id, recorded_by, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
"""

REPLACE = """
UPDATE task_completions SET discipline_id = ?, points = ?, completed_at = ?, member_id = ?,
                            recorded_by = ?, created_at = ?
WHERE organization_id = ? AND team_id = ? AND task_id = ?
"""

REMOVE = """
DELETE FROM task_completions WHERE organization_id = ? AND team_id = ? AND task_id = ?
"""

SCORE = """
UPDATE teams SET
    score = ?, tasks_completed = tasks_completed + ?, version = version + ?,
    score_reached_at = ?, updated_at = ?
WHERE organization_id = ? AND id = ?
"""

HISTORY = """
INSERT INTO score_events (organization_id, id, team_id, task_id, discipline_id, kind,
                          delta, score_after, at, recorded_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


def _uuid(value: str | None) -> uuid.UUID | None:
    return None if value is None else uuid.UUID(value)


def _as_uuid(value: Any) -> uuid.UUID:
    return uuid.UUID(str(value))


def run(batch: SqliteBatch, writes: Sequence[Write], listeners: Listeners = EVERYONE) -> Written:
    """The batch's statements, in the driver's thread."""
    plan = Plan(now=utcnow())  # under the write lock: the history's times follow commits
    lookup = lookup_sql(listeners)
    for position, write in enumerate(writes):
        task_id = task_of(write)
        member_id = write.data.member_id if isinstance(write, Completing) else None
        row = batch.one(
            lookup, member_id, task_id, write.org_id, task_id, write.org_id, write.team_id
        )
        if row is None:
            continue
        discipline_id = _uuid(row[6])
        plan.see(
            position,
            write,
            team=TeamState(
                status=row[1],
                score=int(row[2]),
                reached_at=parse_sqlite_time(row[3]),
                version=int(row[4]),
                has_history=bool(row[5]),
            ),
            task=None if discipline_id is None else (discipline_id, int(row[7])),
            done=None
            if row[10] is None
            else Done(
                uuid.UUID(row[8]), int(row[9]), parse_sqlite_time(row[10]), _uuid(row[11]), row[12]
            ),
            member_of_team=bool(row[13]),
            listened=bool(row[0]),
        )
        if isinstance(write, Answering):
            keys, as_id = names_of(write.caller)
            found = batch.one(
                ANSWER_LOOKUP,
                write.org_id,
                write.team_id,
                task_id,
                orjson.dumps(keys).decode(),
                as_id,
            )
            plan.see_answer(position, answer_sight(task_id, found, _as_uuid))
    for org_id, actor, offset, count in plan.rate_looks(writes):
        stored = batch.rows(RECENT, org_id, actor, plan.now - RATE_WINDOW, count, offset)
        plan.see_recent(org_id, actor, offset, [parse_sqlite_time(row[0]) for row in stored])
    outcomes: list[Outcome | Refused] = [
        plan.decide(position, write) for position, write in enumerate(writes)
    ]
    if not plan.changes_anything:
        return written(plan, outcomes, {})
    changes = plan.changes()
    now = plan.now
    for key in changes.removed:
        batch.rows(REMOVE, key["organization_id"], key["team_id"], key["task_id"])
    for c in changes.added:
        batch.rows(ADD, *_completion(c), now)
    for c in changes.replaced:
        batch.rows(
            REPLACE,
            c["discipline_id"],
            c["points"],
            c["completed_at"],
            c["member_id"],
            c["recorded_by"],
            now,
            c["organization_id"],
            c["team_id"],
            c["task_id"],
        )
    for t in changes.teams:
        batch.rows(
            SCORE,
            t["score"],
            t["completed"],
            t["steps"],
            t["reached_at"],
            now,
            t["organization_id"],
            t["id"],
        )
    for h in changes.history:
        batch.rows(
            HISTORY,
            h["organization_id"],
            h["id"],
            h["team_id"],
            h["task_id"],
            h["discipline_id"],
            h["kind"],
            h["delta"],
            h["score_after"],
            h["at"],
            now,
        )
    for a in changes.attempts:
        batch.rows(
            ATTEMPT,
            a["organization_id"],
            a["id"],
            a["team_id"],
            a["task_id"],
            a["member_id"],
            a["actor"],
            a["at"],
            a["correct"],
            a["answer"],
        )
    outbox = outbox_sql("sqlite")
    for e in changes.events:
        batch.rows(outbox, e["organization_id"], e["id"], e["type"], e["payload"], now)
    bump = bump_sql("sqlite")
    versions: dict[uuid.UUID, int] = {}
    for org_id in changes.organizations:
        (_, version) = batch.one(bump, org_id)
        versions[org_id] = int(version)
    return written(plan, outcomes, versions)


def _completion(row: dict[str, Any]) -> tuple[Any, ...]:
    return (
        row["organization_id"],
        row["team_id"],
        row["task_id"],
        row["discipline_id"],
        row["points"],
        row["completed_at"],
        row["member_id"],
        row["recorded_by"],
    )


async def write_batch(
    session: AsyncSession, writes: Sequence[Write], *, listeners: Listeners = EVERYONE
) -> Written:
    """Decide and write ``writes`` in the session's transaction; each write's outcome,
    in order (a refusal: nothing written for it). ``listeners``: who may take the
    outbox events."""
    return await run_in_sqlite_thread(session, lambda batch: run(batch, writes, listeners))
