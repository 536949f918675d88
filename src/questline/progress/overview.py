"""A team's overview: its progress through every discipline its organization sees.

The counts are aggregated in SQL (one GROUP BY over quests ⟕ tasks ⟕ the team's
completions), so the overview costs the same few statements whatever the number of
disciplines, levels, quests and tasks.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

import orjson
from fastapi.requests import HTTPConnection
from sqlalchemy import Text, bindparam, func, literal, select, true
from sqlalchemy import cast as sql_cast
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from questline.disciplines.models import Discipline, Level, Quest, Task
from questline.disciplines.service import DOCUMENTS, visible_to, visible_versions
from questline.progress.learner_records import HintUnlock, TaskAttempt
from questline.progress.models import ScoreEvent, TaskCompletion
from questline.progress.pending import pending_submissions
from questline.progress.rank_memo import Ranks
from questline.readmodel.http import dumps
from questline.readmodel.lean import LeanRequest
from questline.readmodel.service import ReadModel
from questline.teams import service as teams_service
from questline.teams.models import Team, TeamStatus
from questline.teams.ranking import teams_ahead
from questline.web.errors import not_found
from questline.web.identity import Caller

# -- The read model's build: one statement a team, the tree once per organization version --


@dataclass(frozen=True, slots=True)
class TaskNode:
    id: uuid.UUID
    title: str
    position: int
    points: int
    kind: str
    max_attempts: int | None


@dataclass(frozen=True, slots=True)
class QuestNode:
    id: uuid.UUID
    title: str
    position: int
    tasks: int
    points: int
    items: tuple[TaskNode, ...] = ()


@dataclass(frozen=True, slots=True)
class LevelNode:
    id: uuid.UUID
    title: str
    position: int
    quests: list[QuestNode]


@dataclass(frozen=True, slots=True)
class DisciplineNode:
    id: uuid.UUID
    title: str
    color: str | None
    levels: list[LevelNode]
    sequential: bool = False


async def visible_tree(session: AsyncSession, *, org_id: uuid.UUID) -> list[DisciplineNode]:
    """Every discipline the organization sees, with its levels and quests and each
    quest's task and point totals (the same for every team: memoized per version)."""
    visible_ids = select(Discipline.id).where(visible_to(org_id))
    disciplines = (
        await session.execute(
            select(Discipline.id, Discipline.title, Discipline.color, Discipline.sequential)
            .where(visible_to(org_id))
            .order_by(Discipline.title, Discipline.id)
        )
    ).all()
    levels = (
        await session.execute(
            select(Level.id, Level.discipline_id, Level.position, Level.title)
            .where(Level.discipline_id.in_(visible_ids))
            .order_by(Level.discipline_id, Level.position, Level.id)
        )
    ).all()
    quests = (
        await session.execute(
            select(
                Quest.id,
                Quest.level_id,
                Quest.position,
                Quest.title,
                func.count(Task.id),
                func.coalesce(func.sum(Task.points), 0),
            )
            .outerjoin(Task, Task.quest_id == Quest.id)
            .where(Quest.discipline_id.in_(visible_ids))
            .group_by(Quest.id, Quest.level_id, Quest.position, Quest.title)
            .order_by(Quest.level_id, Quest.position, Quest.id)
        )
    ).all()
    tasks = (
        await session.execute(
            select(
                Task.id,
                Task.quest_id,
                Task.position,
                Task.title,
                Task.points,
                Task.check_kind,
                Task.max_attempts,
            )
            .where(Task.discipline_id.in_(visible_ids))
            .order_by(Task.quest_id, Task.position)
        )
    ).all()
    tasks_of: dict[uuid.UUID, list[TaskNode]] = defaultdict(list)
    for t in tasks:
        kind = t[5].value if hasattr(t[5], "value") else str(t[5])
        tasks_of[t[1]].append(TaskNode(t[0], t[3], t[2], int(t[4]), kind, t[6]))
    quests_of: dict[uuid.UUID, list[QuestNode]] = defaultdict(list)
    for q in quests:
        quests_of[q[1]].append(
            QuestNode(q[0], q[3], q[2], int(q[4]), int(q[5]), tuple(tasks_of.get(q[0], ())))
        )
    levels_of: dict[uuid.UUID, list[LevelNode]] = defaultdict(list)
    for lv in levels:
        levels_of[lv[1]].append(LevelNode(lv[0], lv[3], lv[2], quests_of.get(lv[0], [])))
    return [
        DisciplineNode(
            d[0], d[1], d[2].value if d[2] else None, levels_of.get(d[0], []), bool(d[3])
        )
        for d in disciplines
    ]


async def shared_tree(
    session: AsyncSession, memos: ReadModel, *, org_id: uuid.UUID
) -> list[DisciplineNode]:
    """``visible_tree``, kept once for every organization that sees the same disciplines
    at the same versions (all those with only the global ones): one small statement
    (``visible_versions``) instead of the tree's three when another organization, or
    this one at an earlier version, already built it."""
    seen = await visible_versions(session, org_id=org_id)
    name = "tree:" + hashlib.blake2b(repr(seen).encode(), digest_size=16).hexdigest()

    async def build() -> list[DisciplineNode]:
        return await visible_tree(session, org_id=org_id)

    tree: list[DisciplineNode] = await memos.memo(DOCUMENTS, name, 0, build)
    return tree


def _rank_expression() -> Any:
    """1 + the ranked teams ahead of the outer team row (three tight index ranges)."""
    ahead = aliased(Team)

    def count(*bounds: Any) -> Any:
        return (
            select(func.count())
            .select_from(ahead)
            .where(
                ahead.organization_id == Team.organization_id,
                ahead.is_ranked == true(),
                *bounds,
            )
            .correlate(Team)
            .scalar_subquery()
        )

    first, second, third = (count(*bounds) for bounds in teams_ahead(ahead, Team))
    return first + second + third


def _counts(done: int, total: int, earned: int, points: int) -> dict[str, int]:
    return {
        "TasksCompleted": done,
        "TasksTotal": total,
        "PointsEarned": earned,
        "PointsTotal": points,
        "Percent": 100 * done // total if total else 0,
    }


async def overview_json(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    team_id: uuid.UUID,
    tree: list[DisciplineNode],
    ranked: Ranks,
) -> dict[str, Any]:
    """A ``schemas.Overview`` as its JSON object, in one statement (``overview_query``)."""
    query = overview_query(session.get_bind().dialect.name, ranked.counted_in_sql)
    row = (await session.execute(query, {"org": org_id, "team": team_id})).one_or_none()
    if row is None:
        raise not_found("team")
    found = overview_from_row(row, tree, ranked)
    if found is None:
        raise RuntimeError("a ranked team missing from its organization's ranks")
    return found


def overview_from_row(
    row: Sequence[Any], tree: list[DisciplineNode], ranked: Ranks
) -> dict[str, Any] | None:
    """The overview from ``overview_query``'s row (shared with the read model's lean
    miss): the per-quest completions come as a JSON array of ``[quest, count, points]``.
    None: the team is ranked but not in ``ranked`` (built at another version)."""
    # Keyed by the id's 32 hex digits: SQLite's JSON has them bare, PostgreSQL's with
    # hyphens (cheaper than parsing a UUID each, profiled).
    per_quest = {
        str(quest_id).replace("-", ""): (int(count), int(points))
        for quest_id, count, points in orjson.loads(row[11] or "[]")
    }
    ahead = row[10]
    if not ranked.counted_in_sql and row[6]:
        ahead = ranked.position(_id_bytes(row[0]))
        if ahead is None:
            return None
    return _assemble(row, per_quest, tree, ahead, TeamTaskState.of(row[12:]))


def _hex(value: Any) -> str:
    return str(value).replace("-", "")


@dataclass(frozen=True, slots=True)
class TeamTaskState:
    """The team's state of each task, from ``overview_query``'s last four columns."""

    completed: frozenset[str]
    attempts: dict[str, int]
    hints: dict[str, list[int]]
    pending: dict[str, str]

    @classmethod
    def of(cls, columns: Sequence[Any]) -> TeamTaskState:
        completed, attempts, hints, pending = (orjson.loads(c or "[]") for c in columns)
        unlocked: dict[str, list[int]] = defaultdict(list)
        for task_id, index in hints:
            unlocked[_hex(task_id)].append(int(index))
        return cls(
            completed=frozenset(_hex(t) for (t,) in completed),
            attempts={_hex(t): int(n) for t, n in attempts},
            hints={t: sorted(v) for t, v in unlocked.items()},
            pending={_hex(t): str(uuid.UUID(str(s))) for t, s in pending},
        )

    def task(self, node: TaskNode, *, locked: bool) -> dict[str, Any]:
        key = node.id.hex
        left = None
        if node.max_attempts is not None:
            left = max(0, node.max_attempts - self.attempts.get(key, 0))
        return {
            "TaskId": node.id,
            "Title": node.title,
            "Order": node.position,
            "Points": node.points,
            "Check": node.kind,
            "Completed": key in self.completed,
            "Locked": locked,
            "AttemptsLeft": left,
            "PendingSubmission": self.pending.get(key),
            "UnlockedHints": self.hints.get(key, []),
        }


def _id_bytes(value: Any) -> bytes:
    return value.bytes if isinstance(value, uuid.UUID) else uuid.UUID(str(value)).bytes


async def lean_overview(request: LeanRequest) -> tuple[bytes, dict[str, str]] | None:
    """``GET /team/{id}/overview`` on a read-model miss, without a session
    (``readmodel.lean``): one statement, with the organization's discipline tree and
    ranks as the route memoized them at this version. None (the route answers): no
    memo at this version yet, or no such team in the caller's organization (its 404)."""
    if request.role != "member":
        return None  # admins and the team's own members see contributions: the route's
    org_id, version = request.organization_id, request.version
    tree = request.memos.memo_at(org_id, "tree", version)
    ranked = request.memos.memo_at(org_id, "ranks", version)
    if tree is None or ranked is None:
        return None
    reader = request.reader
    dialect = reader.db.engine.dialect.name
    in_sql = ranked.counted_in_sql
    statement = reader.statement(
        f"overview-{in_sql}", lambda: overview_query(dialect, rank_in_sql=in_sql)
    )
    rows = await reader.fetch(statement, {"org": org_id, "team": request.resource_id})
    if not rows:
        return None
    found = overview_from_row(rows[0], tree, ranked)
    return None if found is None else (dumps(found), {})


@functools.cache
def overview_query(dialect: str, rank_in_sql: bool = True) -> Any:
    """The team's row (rank, member count, last activity) and, in its last column, its
    completions per quest aggregated to JSON in SQL (``json_agg`` on PostgreSQL,
    ``json_group_array`` on SQLite): one statement, one row.
    Built once: composing a statement costs more CPU than running it (profiled)."""
    org: Any = bindparam("org")
    team: Any = bindparam("team")
    last_activity = (
        select(func.max(ScoreEvent.at))
        .where(ScoreEvent.organization_id == Team.organization_id, ScoreEvent.team_id == Team.id)
        .correlate(Team)
        .scalar_subquery()
    )
    done = TaskCompletion
    grouped = (
        select(
            Task.quest_id.label("quest_id"),
            func.count().label("done"),
            func.sum(done.points).label("earned"),
        )
        .select_from(done)
        .join(Task, Task.id == done.task_id)
        .where(done.organization_id == org, done.team_id == team)
        .group_by(Task.quest_id)
        .subquery("per_quest")
    )
    if dialect == "postgresql":
        element = func.json_build_array(grouped.c.quest_id, grouped.c.done, grouped.c.earned)
        aggregated = func.json_agg(element)
    else:
        element = func.json_array(grouped.c.quest_id, grouped.c.done, grouped.c.earned)
        aggregated = func.json_group_array(element)
    per_quest = select(sql_cast(aggregated, Text)).select_from(grouped).scalar_subquery()

    def as_json(*columns: Any, where: Any, group: Any = None) -> Any:
        """The rows of ``columns`` as one JSON array of arrays (text), in SQL."""
        inner = select(*columns).where(*where)
        if group is not None:
            inner = inner.group_by(group)
        rows = inner.subquery()
        if dialect == "postgresql":
            aggregate = func.json_agg(func.json_build_array(*rows.c))
        else:
            aggregate = func.json_group_array(func.json_array(*rows.c))
        return select(sql_cast(aggregate, Text)).select_from(rows).scalar_subquery()

    completed = as_json(done.task_id, where=(done.organization_id == org, done.team_id == team))
    attempted = as_json(
        TaskAttempt.task_id,
        func.count().label("n"),
        where=(TaskAttempt.organization_id == org, TaskAttempt.team_id == team),
        group=TaskAttempt.task_id,
    )
    unlocked = as_json(
        HintUnlock.task_id,
        HintUnlock.hint_index,
        where=(HintUnlock.organization_id == org, HintUnlock.team_id == team),
    )
    return select(
        Team.id,
        Team.name,
        Team.status,
        Team.is_admin_team,
        Team.is_survey_completed,
        Team.score,
        Team.is_ranked,
        Team.tasks_completed,
        teams_service.member_count_column(),
        last_activity,
        _rank_expression() if rank_in_sql else literal(0),
        per_quest,
        completed,
        attempted,
        unlocked,
        pending_submissions(dialect, org, team),
    ).where(Team.organization_id == org, Team.id == team)


def _assemble(
    row: Any,
    per_quest: dict[str, tuple[int, int]],
    tree: list[DisciplineNode],
    ahead: Any,
    state: TeamTaskState,
) -> dict[str, Any]:
    disciplines = []
    for discipline in tree:
        levels = []
        d_totals = [0, 0, 0, 0]
        current = None
        # Whether the team completed every task of the previous level: a sequential
        # discipline opens a level then (progress.locks, the actions' rule).
        previous_done = True
        for level in discipline.levels:
            quests = []
            l_totals = [0, 0, 0, 0]
            locked = discipline.sequential and not previous_done
            for quest in level.quests:
                q_done, q_earned = per_quest.get(quest.id.hex, (0, 0))
                quests.append(
                    {
                        **_counts(q_done, quest.tasks, q_earned, quest.points),
                        "QuestId": quest.id,
                        "Title": quest.title,
                        "Order": quest.position,
                        "Tasks": [state.task(t, locked=locked) for t in quest.items],
                    }
                )
                for i, value in enumerate((q_done, quest.tasks, q_earned, quest.points)):
                    l_totals[i] += value
            if current is None and l_totals[0] < l_totals[1]:
                current = level.id
            previous_done = l_totals[0] >= l_totals[1]
            levels.append(
                {
                    **_counts(*l_totals),
                    "LevelId": level.id,
                    "Title": level.title,
                    "Order": level.position,
                    "Quests": quests,
                }
            )
            for i in range(4):
                d_totals[i] += l_totals[i]
        disciplines.append(
            {
                **_counts(*d_totals),
                "DisciplineId": discipline.id,
                "Title": discipline.title,
                "Color": discipline.color,
                "CurrentLevelId": current,
                "Levels": levels,
            }
        )
    status = row[2]
    return {
        "TeamId": row[0],
        "Name": row[1],
        "Status": status.value if isinstance(status, TeamStatus) else status,
        "IsAdminTeam": row[3],
        "IsSurveyCompleted": row[4],
        "Score": row[5],
        "Rank": int(ahead) + 1 if row[6] else None,
        "MemberCount": int(row[8]),
        "TasksCompleted": int(row[7]),
        "LastActivityAt": _utc(row[9]),
        "Disciplines": disciplines,
        "Contributions": None,  # filled in for admins and the team's own members
    }


def _utc(value: Any) -> Any:
    """``max(at)`` comes back as text on SQLite (an aggregate loses the column type)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


class SeasonRank(Protocol):
    """The team's rank in a season as the caller sees it, and the headers of a season's
    body (its own ``ETag``, ``Questline-Frozen-At``, how long it may be kept)."""

    async def __call__(
        self,
        session: AsyncSession,
        *,
        readmodel: ReadModel,
        caller: Caller,
        team_id: uuid.UUID,
        season_id: uuid.UUID,
        version: int,
    ) -> tuple[int | None, dict[str, str]]: ...


def season_rank_of(connection: HTTPConnection) -> SeasonRank:
    """How ``?season=`` ranks a team: the leaderboard's rankings, which build on this
    domain, so the application hands them in (kept on ``app.state.season_rank``)."""
    return cast(SeasonRank, connection.app.state.season_rank)
