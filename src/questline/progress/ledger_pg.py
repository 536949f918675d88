"""The progress ledger on PostgreSQL: a batch of writes in two statements, whatever its
size. The group commit runs a batch of many on the driver's connection, each statement
its own transaction; the route runs a batch of one in its session's transaction
(``record``). Both: ``write_batch``.

1. ``LOOKUP`` reads, in one snapshot, what ``ledger.Plan.see`` takes for each write
   (``ANSWER_LOOKUP`` for answers, with what they read beyond; a batch that mixes
   answers and progress writes reads both in one statement, ``mixed_lookup_sql``).
2. ``ledger.Plan`` decides every write in turn.
3. ``WRITE`` applies the net result in one statement: it first locks the disciplines
   of the tasks it completes (``FOR KEY SHARE``: a discipline's replace or delete waits
   for the commit), then every team it changes — in (organization, team) order — *if
   its version is still the one looked up*, then every task it completes *if its
   discipline and points are still those looked up* (``FOR KEY SHARE``). Only when
   every check held does it write the completions added and removed, each team's final
   score and counters, every history step, every outbox event
   (``events.outbox_sql``) and, last, one version bump per organization
   (``versions.bump_sql``).

Every write that changes a team's completions or score bumps its ``version`` (the
ledger, ``scores.apply_steps``, the ORM's version counter), so a check that holds means
nothing changed since the look-up: the batch is what it would have been under locks
taken at the look-up. When a check fails, nothing is written and the batch is looked up
and decided again (``ATTEMPTS``). Inside a transaction (the route), the teams are then
locked first (``hold``): the next attempt cannot fail on them.

Locks are taken in one global order: disciplines, then teams, then tasks, and the
version rows last — the order of a discipline's replace or delete too (the discipline,
its teams, then its tasks) — so a write may wait for another but never in a cycle.

The teams are found with ``id = ANY(ARRAY(…))``, not by joining the JSON rows: joined,
the planner estimates any ``json_to_recordset`` at 100 rows and hashes them against a
sequential scan of ``teams`` (docs/performance.md).

Writes to the same team in one batch apply in arrival order; they were concurrent
requests, so that is one order the clients could have seen.

An answer (``ledger.Answering``) changes no team row unless it is right, so the version
check cannot see another process's answers. A right answer steps the score and is
checked like any completion. A wrong one to a task whose attempts are unlimited needs
nothing else exact but the answerer's rate, which is exact within a process (one batch
at a time) and may let one more answer through when one member's answers land in two
processes' batches in the same instant. A task that limits its attempts is counted
exactly: outside a transaction the batch stops (``NeedsHolding``) and is run again in one
that holds its teams first, as the route does.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from questline.events.fanout import EVERYONE, Listeners
from questline.events.service import outbox_sql
from questline.members.callers import names_of
from questline.progress.answer_sight import COLUMNS, answer_sight, rate_windows
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
from questline.readmodel.http import dumps
from questline.readmodel.versions import bump_sql
from questline.storage.db import utcnow
from questline.web.identity import Role

SEEN = """{listened} AS listened, t.status, t.score, t.score_reached_at, t.version,
       EXISTS (SELECT 1 FROM score_events AS e
               WHERE e.organization_id = w.org AND e.team_id = w.team) AS has_history,
       k.discipline_id, k.points,
       c.discipline_id AS done_discipline_id, c.points AS done_points,
       c.completed_at AS done_at, c.member_id AS done_member_id,
       c.recorded_by AS done_recorded_by"""
"""What both look-ups read of each write's team, task (``k``: its discipline and points,
when the organization sees it) and completion (``_see``), from ``w``'s row."""

TEAM = "JOIN teams AS t ON t.organization_id = w.org AND t.id = w.team"
COMPLETION = """LEFT JOIN task_completions AS c
  ON c.organization_id = w.org AND c.team_id = w.team AND c.task_id = w.task"""

LOOKUP = f"""
SELECT w.i, {SEEN},
       EXISTS (SELECT 1 FROM team_members AS m
               WHERE m.organization_id = w.org AND m.team_id = w.team
                 AND m.member_id = w.member) AS member_of_team
FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[])
     WITH ORDINALITY AS w(org, team, task, member, i)
{TEAM}
LEFT JOIN LATERAL (
    SELECT tasks.discipline_id, tasks.points
    FROM tasks JOIN disciplines AS d ON d.id = tasks.discipline_id
    WHERE tasks.id = w.task AND (d.organization_id IS NULL OR d.organization_id = w.org)
) AS k ON true
{COMPLETION}
"""


@functools.lru_cache(maxsize=8)
def lookup_sql(listeners: Listeners) -> str:
    """``LOOKUP`` asking ``listeners`` whether each write's organization is listened to."""
    return LOOKUP.format(listened=listeners.sql("w.org"))


ANSWER_LOOKUP = f"""
SELECT w.i, {SEEN}, false AS member_of_team,
       k.check_kind, k.max_attempts, k.answers, k.owner, k.level_id, k.sequential,
       k.discipline_id, k.points,
       CASE WHEN k.max_attempts IS NOT NULL THEN (
           SELECT count(*) FROM task_attempts AS a
           WHERE a.organization_id = w.org AND a.team_id = w.team AND a.task_id = w.task)
       END AS used,
       (SELECT json_agg(json_build_array(m.id, m.email_key, EXISTS (
                   SELECT 1 FROM team_members AS tm
                   WHERE tm.organization_id = m.organization_id AND tm.team_id = w.team
                     AND tm.member_id = m.id),
                   ({{recent_of_member}})))::text
        FROM members AS m
        WHERE m.organization_id = w.org AND m.active IS NOT false
          AND m.id = ANY(ARRAY(SELECT n.id FROM members AS n
                               WHERE n.organization_id = w.org
                                 AND n.email_key IN (w.key, w.other_key)
                               UNION ALL SELECT w.as_id))) AS named,
       ({{recent_of_subject}}) AS subject_recent,
       l.title AS level_title, p.id AS previous_id, p.title AS previous_title,
       CASE WHEN p.id IS NOT NULL THEN (
           SELECT count(*) FROM tasks AS pt WHERE pt.level_id = p.id) END AS previous_tasks,
       CASE WHEN p.id IS NOT NULL THEN (
           SELECT count(*) FROM task_completions AS c JOIN tasks AS pt ON pt.id = c.task_id
           WHERE c.organization_id = w.org AND c.team_id = w.team
             AND pt.level_id = p.id) END AS previous_done
FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::varchar[], $6::varchar[],
            $7::varchar[], $8::int[], $9::int[])
     WITH ORDINALITY AS w(org, team, task, as_id, key, other_key, subject, skip, take, i)
{TEAM}
LEFT JOIN LATERAL (
    SELECT tasks.check_kind, tasks.max_attempts, tasks.answers::text AS answers,
           d.organization_id AS owner, tasks.level_id, d.sequential, tasks.discipline_id,
           tasks.points
    FROM tasks JOIN disciplines AS d ON d.id = tasks.discipline_id
    WHERE tasks.id = w.task AND (d.organization_id IS NULL OR d.organization_id = w.org)
) AS k ON true
{COMPLETION}
LEFT JOIN levels AS l ON k.sequential AND l.id = k.level_id
LEFT JOIN LATERAL (
    SELECT q.id, q.title FROM levels AS q
    WHERE k.sequential AND q.discipline_id = k.discipline_id AND q.position < l.position
    ORDER BY q.position DESC LIMIT 1
) AS p ON true
"""
RECENT = """SELECT json_agg(r.at)::text FROM (
    SELECT a.at FROM task_attempts AS a
    WHERE a.organization_id = w.org AND a.actor = {actor} AND a.at > $10
    ORDER BY a.at DESC OFFSET w.skip LIMIT w.take) AS r"""
"""An actor's attempts within the minute that may be at its limit (``rates.window``)."""

ANSWER_LOOKUP = ANSWER_LOOKUP.format(
    listened="{listened}",  # filled by answer_lookup_sql
    recent_of_member=RECENT.format(actor="m.id::text"),
    recent_of_subject=RECENT.format(actor="w.subject"),
)
"""The answers' ``LOOKUP``, and what they read beyond it (``answer_sight.COLUMNS``
after ``member_of_team``), in one statement: the arrays of organizations, teams,
tasks, the callers' subjects as member ids, their e-mail keys (a caller has at most
two: its e-mail's and its subject's), their subjects, the windows of their rates
(``rates.window``), a minute ago. A batch of answers alone is then looked up in one
statement, as a batch of progress writes is. The named members are found by index
(``= ANY(ARRAY(…))``): as a join or an ``IN``, the planner walked the organization's
members once for each."""


@functools.lru_cache(maxsize=8)
def answer_lookup_sql(listeners: Listeners) -> str:
    """``ANSWER_LOOKUP`` asking ``listeners`` whether each answer's organization is
    listened to."""
    return ANSWER_LOOKUP.format(listened=listeners.sql("w.org"))


PARAMETER = re.compile(r"\$(\d+)")


def _shifted(sql: str, by: int) -> str:
    """``sql`` with its parameters renumbered ``$n`` to ``$(n + by)``."""
    return PARAMETER.sub(lambda found: f"${int(found.group(1)) + by}", sql)


LOOKUP_PARAMETERS = max(int(n) for n in PARAMETER.findall(LOOKUP))
"""``LOOKUP``'s parameters: ``ANSWER_LOOKUP``'s follow them in ``mixed_lookup_sql``."""


@functools.lru_cache(maxsize=8)
def mixed_lookup_sql(listeners: Listeners) -> str:
    """``LOOKUP``'s rows (its parameters first) and ``ANSWER_LOOKUP``'s (its parameters
    after them) in one statement, told apart by ``answering``: a batch that mixes
    progress writes and answers is looked up in one round trip, as either alone is. The
    progress writes' rows carry no answer columns (``NULL``, typed by the other side)."""
    # Named apart from ``LOOKUP``'s columns: a name twice in a row reads the last one.
    nothing = ", ".join(f"NULL AS answer_{name}" for name in COLUMNS)
    answers = _shifted(answer_lookup_sql(listeners), LOOKUP_PARAMETERS)
    return (
        f"SELECT false AS answering, p.*, {nothing} FROM ({lookup_sql(listeners)}) AS p\n"
        f"UNION ALL\nSELECT true, a.* FROM ({answers}) AS a"
    )


_WRITTEN_FIRST = """(SELECT ok FROM ok)
  AND (SELECT count(*) FROM added) + (SELECT count(*) FROM replaced)
      + (SELECT count(*) FROM removed) + (SELECT count(*) FROM scored)
      + (SELECT count(*) FROM history) + (SELECT count(*) FROM outbox)
      + (SELECT count(*) FROM attempted) >= 0"""

WRITE = f"""
WITH disciplines_held AS (
    SELECT d.id FROM disciplines AS d
    WHERE d.id = ANY(ARRAY(SELECT r.discipline_id
                           FROM json_to_recordset($8::json) AS r(discipline_id uuid)))
    ORDER BY d.id
    FOR KEY SHARE OF d
), held AS (
    SELECT t.id FROM teams AS t
    WHERE t.organization_id = ANY(ARRAY(
            SELECT r.organization_id FROM json_to_recordset($4::json) AS r(organization_id uuid)))
      AND t.id = ANY(ARRAY(SELECT r.id FROM json_to_recordset($4::json) AS r(id uuid)))
      AND t.version = (
            SELECT r.seen
            FROM json_to_recordset($4::json) AS r(organization_id uuid, id uuid, seen int)
            WHERE r.organization_id = t.organization_id AND r.id = t.id)
      AND (SELECT count(*) FROM disciplines_held) >= 0  -- after the disciplines
    ORDER BY t.organization_id, t.id
    FOR UPDATE OF t
), kept AS (
    SELECT k.id FROM tasks AS k
    WHERE k.id = ANY(ARRAY(SELECT r.id FROM json_to_recordset($8::json) AS r(id uuid)))
      AND EXISTS (SELECT 1
                  FROM json_to_recordset($8::json) AS r(id uuid, discipline_id uuid, points int)
                  WHERE r.id = k.id AND r.discipline_id = k.discipline_id
                    AND r.points = k.points)
      AND (SELECT count(*) FROM held) >= 0  -- after the teams
    ORDER BY k.id
    FOR KEY SHARE OF k
), ok AS (
    SELECT (SELECT count(*) FROM disciplines_held)
               = (SELECT count(DISTINCT r.discipline_id)
                  FROM json_to_recordset($8::json) AS r(discipline_id uuid))
           AND (SELECT count(*) FROM held) = json_array_length($4::json)
           AND (SELECT count(*) FROM kept) = json_array_length($8::json) AS ok
), added AS (
    INSERT INTO task_completions (organization_id, team_id, task_id, discipline_id, points,
                                  completed_at, member_id, recorded_by, created_at)
    SELECT r.organization_id, r.team_id, r.task_id, r.discipline_id, r.points,
           r.completed_at, r.member_id, r.recorded_by, $1::timestamptz
    FROM json_to_recordset($2::json) AS r(
        organization_id uuid, team_id uuid, task_id uuid, discipline_id uuid, points int,
        completed_at timestamptz, member_id uuid, recorded_by text)
    WHERE (SELECT ok FROM ok)
    RETURNING 1
), replaced AS (
    UPDATE task_completions AS c SET
        discipline_id = r.discipline_id, points = r.points, completed_at = r.completed_at,
        member_id = r.member_id, recorded_by = r.recorded_by, created_at = $1::timestamptz
    FROM json_to_recordset($9::json) AS r(
        organization_id uuid, team_id uuid, task_id uuid, discipline_id uuid, points int,
        completed_at timestamptz, member_id uuid, recorded_by text)
    WHERE c.organization_id = r.organization_id AND c.team_id = r.team_id
      AND c.task_id = r.task_id AND (SELECT ok FROM ok)
    RETURNING 1
), removed AS (
    DELETE FROM task_completions AS c
    USING json_to_recordset($3::json) AS r(
        organization_id uuid, team_id uuid, task_id uuid)
    WHERE c.organization_id = r.organization_id AND c.team_id = r.team_id
      AND c.task_id = r.task_id AND (SELECT ok FROM ok)
    RETURNING 1
), scored AS (
    UPDATE teams AS t
    SET (score, tasks_completed, version, score_reached_at, updated_at) = (
        SELECT r.score, t.tasks_completed + r.completed, t.version + r.steps, r.reached_at,
               $1::timestamptz
        FROM json_to_recordset($4::json) AS r(
            organization_id uuid, id uuid, score bigint, completed int, steps int,
            reached_at timestamptz)
        WHERE r.organization_id = t.organization_id AND r.id = t.id)
    WHERE t.organization_id = ANY(ARRAY(
            SELECT r.organization_id FROM json_to_recordset($4::json) AS r(organization_id uuid)))
      AND t.id = ANY(ARRAY(SELECT r.id FROM json_to_recordset($4::json) AS r(id uuid)))
      AND (SELECT ok FROM ok)
    RETURNING 1
), history AS (
    INSERT INTO score_events (organization_id, id, team_id, task_id, discipline_id, kind,
                              delta, score_after, at, recorded_at)
    SELECT r.organization_id, r.id, r.team_id, r.task_id, r.discipline_id, r.kind, r.delta,
           r.score_after, r.at, $1::timestamptz
    FROM json_to_recordset($5::json) AS r(
        organization_id uuid, id uuid, team_id uuid, task_id uuid, discipline_id uuid,
        kind text, delta int, score_after bigint, at timestamptz)
    WHERE (SELECT ok FROM ok)
    RETURNING 1
), attempted AS (
    INSERT INTO task_attempts (organization_id, id, team_id, task_id, member_id, actor, at,
                               correct, answer)
    SELECT r.organization_id, r.id, r.team_id, r.task_id, r.member_id, r.actor, r.at,
           r.correct, r.answer
    FROM json_to_recordset($10::json) AS r(
        organization_id uuid, id uuid, team_id uuid, task_id uuid, member_id uuid,
        actor text, at timestamptz, correct boolean, answer text)
    WHERE (SELECT ok FROM ok)
    RETURNING 1
), outbox AS (
    {outbox_sql("postgresql", rows="$6", created_at="$1", when="(SELECT ok FROM ok)")}
    RETURNING 1
)
-- The version rows after every other change (the subqueries of the condition run
-- first): they stay locked only for the end of the statement and its commit. Nothing
-- when a check failed.
{bump_sql("postgresql", organizations="$7", when=_WRITTEN_FIRST)}
"""

HOLD = """
SELECT t.id FROM teams AS t
WHERE t.organization_id = ANY($1::uuid[]) AND t.id = ANY($2::uuid[])
ORDER BY t.organization_id, t.id
FOR UPDATE OF t
"""
"""Inside a transaction, after a failed check: the batch's teams locked, in the
``WRITE``'s order (a failed ``WRITE`` already holds the disciplines)."""

Fetch = Callable[..., Awaitable[Sequence[Any]]]
"""Runs one statement (SQL with ``$n`` parameters, then the arguments); returns its
rows, by column name."""

ATTEMPTS = 3
"""Look-ups and decisions of one batch at most, when teams or tasks change between its
look-up and its write; then ``Contended``."""


class Contended(Exception):
    """The batch's teams or tasks kept changing between its look-up and its write."""


class NeedsHolding(Exception):
    """A batch outside a transaction answers a task that limits its attempts: counting
    them exactly takes the batch's teams held, in a transaction (nothing was written)."""


def _limits_attempts(plan: Plan) -> bool:
    return any(
        sight.check is not None and sight.check.max_attempts is not None
        for sight in plan.answers.values()
    )


async def write_batch(
    fetch: Fetch,
    writes: Sequence[Write],
    *,
    in_transaction: bool,
    listeners: Listeners = EVERYONE,
) -> Written:
    """Decide and write ``writes`` (two statements through ``fetch``); each write's
    outcome, in order (a refusal: nothing written for it). ``in_transaction``: the
    statements share one transaction (the route's), so a failed check locks the teams
    before the next attempt. ``listeners``: who may take the outbox events."""
    answers = [(p, w) for p, w in enumerate(writes) if isinstance(w, Answering)]
    others = [p for p, w in enumerate(writes) if not isinstance(w, Answering)]
    for attempt in range(ATTEMPTS):
        if in_transaction and (attempt or answers):
            # An answer counts what the team's attempts were: the teams are held first,
            # as the route always held its team (an answer changes no team row, so the
            # write's version check cannot see another one).
            await fetch(HOLD, [w.org_id for w in writes], [w.team_id for w in writes])
        plan = Plan(now=utcnow())
        await _look_up(fetch, listeners, writes, others, answers, plan)
        if answers and not in_transaction and _limits_attempts(plan):
            raise NeedsHolding
        outcomes: list[Outcome | Refused] = [
            plan.decide(position, write) for position, write in enumerate(writes)
        ]
        if not plan.changes_anything:
            return written(plan, outcomes, {})
        versions = await _write(fetch, plan)
        if versions is not None:
            return written(plan, outcomes, versions)
    raise Contended(f"{len(writes)} progress writes met concurrent changes {ATTEMPTS} times")


async def _look_up(
    fetch: Fetch,
    listeners: Listeners,
    writes: Sequence[Write],
    others: Sequence[int],
    answers: Sequence[tuple[int, Answering]],
    plan: Plan,
) -> None:
    """The batch's look-up, in one statement: ``LOOKUP`` of the progress writes (at
    ``others``), ``ANSWER_LOOKUP`` of the answers, or both (``mixed_lookup_sql``)."""
    windows = rate_windows(writes) if answers else {}
    if not answers:
        rows = await fetch(lookup_sql(listeners), *_lookup_arguments(writes, others))
    elif not others:
        rows = await fetch(answer_lookup_sql(listeners), *_answer_arguments(answers, windows, plan))
    else:
        rows = await fetch(
            mixed_lookup_sql(listeners),
            *_lookup_arguments(writes, others),
            *_answer_arguments(answers, windows, plan),
        )
    for row in rows:
        if answers and (not others or row["answering"]):
            position, write = answers[int(row["i"]) - 1]
            _see(plan, position, write, row)
            values = list(row.values())[-ANSWER_COLUMNS:]
            sight = answer_sight(write.task_id, values, _uuid, windows[position][0])
            plan.see_answer(position, sight)
        else:
            position = others[int(row["i"]) - 1]
            _see(plan, position, writes[position], row)


def _lookup_arguments(writes: Sequence[Write], positions: Sequence[int]) -> list[Any]:
    """``LOOKUP``'s parameters for the progress writes at ``positions``."""
    chosen = [writes[p] for p in positions]
    return [
        [w.org_id for w in chosen],
        [w.team_id for w in chosen],
        [task_of(w) for w in chosen],
        [w.data.member_id if isinstance(w, Completing) else None for w in chosen],
    ]


def _see(plan: Plan, position: int, write: Write, row: Any) -> None:
    """What a look-up's row (``LOOKUP``'s columns) found for the write at ``position``."""
    discipline_id = row["discipline_id"]
    done_at = row["done_at"]
    plan.see(
        position,
        write,
        team=TeamState(
            status=row["status"],
            version=int(row["version"]),
            score=int(row["score"]),
            reached_at=row["score_reached_at"],
            has_history=bool(row["has_history"]),
        ),
        task=None if discipline_id is None else (_uuid(discipline_id), int(row["points"])),
        done=None
        if done_at is None
        else Done(
            _uuid(row["done_discipline_id"]),
            int(row["done_points"]),
            done_at,
            None if row["done_member_id"] is None else _uuid(row["done_member_id"]),
            row["done_recorded_by"],
        ),
        member_of_team=bool(row["member_of_team"]),
        listened=bool(row["listened"]),
    )


ANSWER_COLUMNS = len(COLUMNS)


def _answer_arguments(
    answers: Sequence[tuple[int, Answering]], windows: dict[int, tuple[int, int]], plan: Plan
) -> list[Any]:
    """``ANSWER_LOOKUP``'s parameters for the batch's answers."""
    names = [names_of(w.caller) for _, w in answers]
    return [
        [w.org_id for _, w in answers],
        [w.team_id for _, w in answers],
        [w.task_id for _, w in answers],
        [as_id for _, as_id in names],
        [keys[0] if keys else None for keys, _ in names],
        [keys[1] if len(keys) > 1 else None for keys, _ in names],
        [None if w.caller.role is Role.MEMBER else w.caller.subject for _, w in answers],
        [windows[p][0] for p, _ in answers],
        [windows[p][1] for p, _ in answers],
        plan.now - RATE_WINDOW,
    ]


def _uuid(value: Any) -> uuid.UUID:
    """asyncpg's UUID (a subclass of its own) as the standard one."""
    return value if type(value) is uuid.UUID else uuid.UUID(bytes=value.bytes)


def _json(rows: list[dict[str, Any]]) -> str:
    return dumps(rows).decode()


async def _write(fetch: Fetch, plan: Plan) -> dict[uuid.UUID, int] | None:
    """The plan's net changes in one statement; the versions bumped, or None when a
    team or task had changed since the look-up (then nothing was written)."""
    changes = plan.changes()
    rows = await fetch(
        WRITE,
        plan.now,
        _json(changes.added),
        _json(changes.removed),
        _json(changes.teams),
        _json(changes.history),
        _json(changes.events),
        changes.organizations,
        _json(changes.tasks),
        _json(changes.replaced),
        _json(changes.attempts),
    )
    versions = {_uuid(row["organization_id"]): int(row["version"]) for row in rows}
    if not versions and changes.organizations:
        return None
    return versions
