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
from questline.progress.answer_sight import answer_sight, rate_windows
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
from questline.web.identity import Role

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
SELECT {{listened}}, t.status, t.score, t.score_reached_at, t.version,
       EXISTS (SELECT 1 FROM score_events AS e
               WHERE e.organization_id = t.organization_id AND e.team_id = t.id),
       k.discipline_id, k.points,
       c.discipline_id, c.points, c.completed_at, c.member_id, c.recorded_by, 0,
       k.check_kind, k.max_attempts, k.answers, k.owner, k.level_id, k.sequential,
       k.discipline_id, k.points,
       CASE WHEN k.max_attempts IS NOT NULL THEN (
           SELECT count(*) FROM task_attempts AS a
           WHERE a.organization_id = ?1 AND a.team_id = ?2 AND a.task_id = ?3) END,
       (SELECT json_group_array(json_array(m.id, m.email_key, EXISTS (
                   SELECT 1 FROM team_members AS tm
                   WHERE tm.organization_id = m.organization_id AND tm.team_id = ?2
                     AND tm.member_id = m.id),
                   ({recent_of_member})))
        FROM members AS m
        WHERE m.organization_id = ?1 AND m.active IS NOT 0
          AND m.id IN (SELECT n.id FROM members AS n
                       WHERE n.organization_id = ?1
                         AND n.email_key IN (SELECT value FROM json_each(?4))
                       UNION ALL SELECT ?5)),
       CASE WHEN ?6 IS NOT NULL THEN ({recent_of_subject}) END,
       l.title, p.id, p.title,
       CASE WHEN p.id IS NOT NULL THEN (
           SELECT count(*) FROM tasks AS pt WHERE pt.level_id = p.id) END,
       CASE WHEN p.id IS NOT NULL THEN (
           SELECT count(*) FROM task_completions AS pc JOIN tasks AS pt ON pt.id = pc.task_id
           WHERE pc.organization_id = ?1 AND pc.team_id = ?2 AND pt.level_id = p.id) END
FROM teams AS t
LEFT JOIN (
    SELECT tasks.check_kind, tasks.max_attempts, tasks.answers, d.organization_id AS owner,
           tasks.level_id, d.sequential, tasks.discipline_id, tasks.points
    FROM tasks JOIN disciplines AS d ON d.id = tasks.discipline_id
    WHERE tasks.id = ?3 AND (d.organization_id IS NULL OR d.organization_id = ?1)
) AS k ON 1
LEFT JOIN task_completions AS c
  ON c.organization_id = t.organization_id AND c.team_id = t.id AND c.task_id = ?3
LEFT JOIN levels AS l ON k.sequential AND l.id = k.level_id
LEFT JOIN levels AS p ON k.sequential AND p.discipline_id = k.discipline_id
  AND p.position = (SELECT max(q.position) FROM levels AS q
                    WHERE q.discipline_id = k.discipline_id AND q.position < l.position)
WHERE t.organization_id = ?1 AND t.id = ?2
"""

RECENT = """SELECT json_group_array(r.at) FROM (
    SELECT a.at FROM task_attempts AS a
    WHERE a.organization_id = ?1 AND a.actor = {actor} AND a.at > ?7
    ORDER BY a.at DESC LIMIT ?9 OFFSET ?8) AS r"""
"""An actor's attempts within the minute that may be at its limit (``rates.window``)."""

_MEMBER_ACTOR = (
    "lower(substr(hex_id, 1, 8) || '-' || substr(hex_id, 9, 4) || '-' || substr(hex_id, 13, 4)"
    " || '-' || substr(hex_id, 17, 4) || '-' || substr(hex_id, 21))"
).replace("hex_id", "m.id")
"""A member's id as ``str(uuid)`` writes it, which is how an attempt names its actor
(SQLite keeps ids as 32 hex digits)."""

ANSWER_LOOKUP = ANSWER_LOOKUP.format(
    recent_of_member=RECENT.format(actor=_MEMBER_ACTOR), recent_of_subject=RECENT.format(actor="?6")
)
"""An answer's ``LOOKUP`` and what it reads beyond (``answer_sight.COLUMNS``), in one
statement: ?1 organization, ?2 team, ?3 task, ?4 the caller's e-mail keys (a JSON array),
?5 its subject as a member id, ?6 its subject when it may be the actor (an admin's; a
member acts as its member), ?7 a minute ago, ?8 and ?9 the window of the actor's rate
(``rates.window``), for each member named and for the subject."""


@functools.lru_cache(maxsize=8)
def answer_lookup_sql(listeners: Listeners) -> str:
    """``ANSWER_LOOKUP`` asking ``listeners`` whether the organization is listened to."""
    return ANSWER_LOOKUP.format(listened=listeners.sql("t.organization_id"))


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
    windows = rate_windows(writes)
    for position, write in enumerate(writes):
        task_id = task_of(write)
        if isinstance(write, Answering):
            row = _answer_row(batch, write, listeners, plan, windows[position])
        else:
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
            offset = windows[position][0]
            plan.see_answer(position, answer_sight(task_id, row[14:], _as_uuid, offset))
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


def _answer_row(
    batch: SqliteBatch,
    write: Answering,
    listeners: Listeners,
    plan: Plan,
    window: tuple[int, int],
) -> Any:
    keys, as_id = names_of(write.caller)
    return batch.one(
        answer_lookup_sql(listeners),
        write.org_id,
        write.team_id,
        write.task_id,
        orjson.dumps(keys).decode(),
        as_id,
        None if write.caller.role is Role.MEMBER else write.caller.subject,
        plan.now - RATE_WINDOW,
        *window,
    )


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
