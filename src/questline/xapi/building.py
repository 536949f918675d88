"""The statement builder: looks up what a statement names (team, members, the task's
tree) and inserts the statements of one event, in the fan-out's transaction (the
consumer is ``consumer``; the JSON shapes are ``statements``)."""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BindParameter, Select, and_, bindparam, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from questline.disciplines.models import Discipline, Level, Quest, Task
from questline.members.models import Member, TeamMembership, membership_of_member
from questline.progress.models import TaskCompletion
from questline.storage.db import utcnow
from questline.teams.models import Team
from questline.xapi import statements
from questline.xapi.models import StatementKind, StatementStatus, XapiStatement
from questline.xapi.statements import Iris, Node, TeamOf

ADJUSTMENT_EVENTS = frozenset({"team.adjusted", "team.adjustment_withdrawn"})
ATTEMPT_EVENT = "attempt.created"
"""A counted attempt at an ``Answer`` task: an ``answered`` statement. Its payload says
who, when and whether it was right, never what was submitted."""


def _uuid(payload: dict[str, Any], key: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(payload[key]))
    except (KeyError, ValueError):
        return None


def _time(value: Any, default: dt.datetime) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return default


@dataclass(frozen=True, slots=True)
class _TaskTree:
    task: Node
    points: int
    quest: Node
    level: Node
    discipline: Node


@functools.cache
def _node_completion(kind: StatementKind) -> Select[*tuple[Any, ...]]:
    """Whether a team's completion of a task completed its level (or discipline), in
    one statement built once: the standing statement of that node if one was made
    (``already``), when this completion was recorded (``mine``: none when withdrawn
    since), the node's tasks and points, and the team's completions of them (count,
    points, the latest ``CompletedAt`` and the latest recording). Attributed to the
    completion that completed it: when completions of the node were recorded after
    this one (all fanned out together), the last one's event makes the statement."""
    level = kind is StatementKind.LEVEL
    column = Task.level_id if level else Task.discipline_id
    mark = XapiStatement.level_id if level else XapiStatement.discipline_id
    org: BindParameter[uuid.UUID] = bindparam("org")
    team: BindParameter[uuid.UUID] = bindparam("team")
    node: BindParameter[uuid.UUID] = bindparam("node")
    already = (
        select(XapiStatement.id)
        .where(
            XapiStatement.organization_id == org,
            XapiStatement.team_id == team,
            XapiStatement.kind == kind,
            mark == node,
            XapiStatement.voided.is_(False),
        )
        .limit(1)
        .scalar_subquery()
    )
    mine = (
        select(TaskCompletion.created_at)
        .where(
            TaskCompletion.organization_id == org,
            TaskCompletion.team_id == team,
            TaskCompletion.task_id == bindparam("task"),
        )
        .scalar_subquery()
    )
    tasks = select(func.count(Task.id)).where(column == node).scalar_subquery()
    total = select(func.coalesce(func.sum(Task.points), 0)).where(column == node).scalar_subquery()
    return select(
        already,
        mine,
        tasks,
        total,
        func.count(TaskCompletion.task_id),
        func.coalesce(func.sum(TaskCompletion.points), 0),
        func.max(TaskCompletion.completed_at),
        func.max(TaskCompletion.created_at),
    ).where(
        TaskCompletion.organization_id == org,
        TaskCompletion.team_id == team,
        TaskCompletion.task_id.in_(select(Task.id).where(column == node)),
    )


class StatementBuilder:
    """Looks up what a statement names (team, members, the task's tree) and inserts the
    statements of one event, in the fan-out's transaction."""

    def __init__(self, session: AsyncSession, iris: Iris) -> None:
        self.session = session
        self.iris = iris
        self._teams: dict[tuple[uuid.UUID, uuid.UUID], TeamOf] = {}
        # What a fan-out's events name again and again (a team's completions name the
        # same tasks and members): looked up once per pass, in its transaction.
        self._trees: dict[uuid.UUID, _TaskTree | None] = {}
        self._members: dict[tuple[uuid.UUID, uuid.UUID], tuple[str, str] | None] = {}
        self._nodes_made: set[tuple[uuid.UUID, uuid.UUID, StatementKind, uuid.UUID]] = set()
        """The levels and disciplines whose statement this pass made (not yet flushed)."""

    async def statements_of(self, event: Any) -> int:
        payload: dict[str, Any] = event.payload
        team_id = _uuid(payload, "TeamId")
        if team_id is None:
            return 0
        if event.type in ADJUSTMENT_EVENTS:
            team = await self._team(event.organization_id, team_id)
            return await self._adjustment(event, team, payload)
        task_id = _uuid(payload, "TaskId")
        if task_id is None:
            return 0
        team = await self._team(event.organization_id, team_id)
        if event.type == "progress.completed":
            return await self._completed(event, team, task_id, payload)
        if event.type == ATTEMPT_EVENT:
            return await self._answered(event, team, task_id, payload)
        return await self._withdrawn(event, team, task_id)

    async def _team(self, org_id: uuid.UUID, team_id: uuid.UUID) -> TeamOf:
        key = (org_id, team_id)
        if key not in self._teams:
            name = await self.session.scalar(
                select(Team.name).where(Team.organization_id == org_id, Team.id == team_id)
            )
            members = (
                await self.session.execute(
                    select(Member.given_name, Member.email)
                    .join(TeamMembership, membership_of_member())
                    .where(
                        TeamMembership.organization_id == org_id,
                        TeamMembership.team_id == team_id,
                    )
                    .order_by(Member.email)
                )
            ).all()
            self._teams[key] = TeamOf(
                id=team_id, name=name or "", members=tuple((n, e) for n, e in members)
            )
        return self._teams[key]

    async def _member(self, org_id: uuid.UUID, payload: dict[str, Any]) -> tuple[str, str] | None:
        """The member the completion names (``MemberId``) as ``(name, e-mail)``, or None
        when it names nobody (or a member deleted since): the team is the actor then."""
        member_id = _uuid(payload, "MemberId")
        if member_id is None:
            return None
        key = (org_id, member_id)
        if key not in self._members:
            row = (
                await self.session.execute(
                    select(Member.given_name, Member.email).where(
                        Member.organization_id == org_id, Member.id == member_id
                    )
                )
            ).first()
            self._members[key] = None if row is None else (row[0], row[1])
        return self._members[key]

    async def _tree(self, task_id: uuid.UUID) -> _TaskTree | None:
        if task_id not in self._trees:
            self._trees[task_id] = await self._look_up_tree(task_id)
        return self._trees[task_id]

    async def _look_up_tree(self, task_id: uuid.UUID) -> _TaskTree | None:
        row = (
            await self.session.execute(
                select(
                    Task.title,
                    Task.points,
                    Quest.id,
                    Quest.title,
                    Level.id,
                    Level.title,
                    Discipline.id,
                    Discipline.title,
                )
                .join(Quest, Quest.id == Task.quest_id)
                .join(Level, Level.id == Task.level_id)
                .join(Discipline, Discipline.id == Task.discipline_id)
                .where(Task.id == task_id)
            )
        ).first()
        if row is None:
            return None
        title, points, quest_id, quest, level_id, level, discipline_id, discipline = row
        return _TaskTree(
            task=Node("task", task_id, title),
            points=int(points),
            quest=Node("quest", quest_id, quest),
            level=Node("level", level_id, level),
            discipline=Node("discipline", discipline_id, discipline),
        )

    def _add(
        self,
        event: Any,
        *,
        id: uuid.UUID,
        kind: StatementKind,
        team: TeamOf,
        statement: dict[str, Any],
        tree: _TaskTree | None = None,
    ) -> None:
        now = utcnow()
        self.session.add(
            XapiStatement(
                organization_id=event.organization_id,
                id=id,
                event_id=event.id,
                kind=kind,
                team_id=team.id,
                task_id=tree.task.id if tree is not None and kind is StatementKind.TASK else None,
                level_id=tree.level.id if tree is not None else None,
                discipline_id=tree.discipline.id if tree is not None else None,
                voided=False,
                statement=statement,
                status=StatementStatus.PENDING,
                alone=False,
                attempts=0,
                next_attempt_at=now,
                created_at=now,
            )
        )

    async def _completed(
        self, event: Any, team: TeamOf, task_id: uuid.UUID, payload: dict[str, Any]
    ) -> int:
        tree = await self._tree(task_id)
        if tree is None:
            return 0  # the task was deleted before the fan-out: nothing left to name
        completed_at = _time(payload.get("CompletedAt"), event.created_at)
        points = payload.get("Points")
        raw = points if isinstance(points, int) else tree.points
        self._add(
            event,
            id=statements.statement_id(event.id),
            kind=StatementKind.TASK,
            team=team,
            tree=tree,
            statement=statements.completed(
                self.iris,
                id=statements.statement_id(event.id),
                team=team,
                member=await self._member(event.organization_id, payload),
                object=tree.task,
                parents=[tree.quest, tree.level, tree.discipline],
                raw=raw,
                max=max(tree.points, raw),
                timestamp=completed_at,
            ),
        )
        level = await self._node_completed(
            event, team, tree, StatementKind.LEVEL, tree.level, [tree.discipline]
        )
        if level is None:
            # The level's tasks are the discipline's too: it is not complete either.
            return 1
        discipline = await self._node_completed(
            event, team, tree, StatementKind.DISCIPLINE, tree.discipline, []
        )
        return 1 + level + (discipline or 0)

    async def _answered(
        self, event: Any, team: TeamOf, task_id: uuid.UUID, payload: dict[str, Any]
    ) -> int:
        correct = payload.get("Correct")
        if not isinstance(correct, bool):
            return 0
        tree = await self._tree(task_id)
        if tree is None:
            return 0  # the task was deleted before the fan-out: nothing left to name
        id = statements.statement_id(event.id)
        self._add(
            event,
            id=id,
            kind=StatementKind.ANSWERED,
            team=team,
            tree=tree,
            statement=statements.answered(
                self.iris,
                id=id,
                team=team,
                member=await self._member(event.organization_id, payload),
                object=tree.task,
                parents=[tree.quest, tree.level, tree.discipline],
                success=correct,
                timestamp=_time(payload.get("At"), event.created_at),
            ),
        )
        return 1

    async def _node_completed(
        self,
        event: Any,
        team: TeamOf,
        tree: _TaskTree,
        kind: StatementKind,
        node: Node,
        parents: list[Node],
    ) -> int | None:
        """A ``completed`` statement of the level or discipline when the team has now
        completed all of its tasks (once, until a withdrawal voids it): the statements
        made (0 or 1), or None when the node is not complete with this completion."""
        values = {
            "org": event.organization_id,
            "team": team.id,
            "node": node.id,
            "task": tree.task.id,
        }
        # The statements of the pass are written together when it ends (one insert for
        # all): this look-up does not flush them, and the nodes this pass completed are
        # known here.
        with self.session.no_autoflush:
            already, mine, tasks, total, done, raw, last, newest = (
                await self.session.execute(_node_completion(kind), values)
            ).one()
        made = (event.organization_id, team.id, kind, node.id)
        if already is not None or made in self._nodes_made:
            return 0
        if mine is None or not tasks or done < tasks:
            return None  # withdrawn since, or still incomplete
        if _as_utc(newest) > _as_utc(mine):
            return 0
        id = statements.statement_id(event.id, kind.value)
        self._nodes_made.add(made)
        self._add(
            event,
            id=id,
            kind=kind,
            team=team,
            tree=tree,
            statement=statements.completed(
                self.iris,
                id=id,
                team=team,
                member=None,
                object=node,
                parents=parents,
                raw=int(raw),
                max=max(int(total), int(raw)),
                timestamp=_as_utc(last) if last is not None else event.created_at,
            ),
        )
        return 1

    async def _adjustment(self, event: Any, team: TeamOf, payload: dict[str, Any]) -> int:
        """``scored`` for an adjustment, ``voided`` (of that statement) for its withdrawal.
        The adjustment's statement id derives from the adjustment (not its event), so that
        the withdrawal finds it without a lookup table."""
        adjustment_id = _uuid(payload, "Id")
        points = payload.get("Points")
        if adjustment_id is None or not isinstance(points, int):
            return 0
        original = statements.statement_id(adjustment_id, "adjustment")
        if event.type == "team.adjusted":
            at = _time(payload.get("At"), event.created_at)
            node = Node("adjustment", adjustment_id, str(payload.get("Reason") or ""))
            self._add(
                event,
                id=original,
                kind=StatementKind.ADJUSTED,
                team=team,
                statement=statements.adjusted(
                    self.iris, id=original, team=team, adjustment=node, points=points, at=at
                ),
            )
            await self.session.flush()
            return 1
        return await self._void(event, team, [original])

    async def _void(self, event: Any, team: TeamOf, targets: list[uuid.UUID]) -> int:
        """A ``voided`` statement for each of ``targets`` that was made and still stands
        (one made before the LRS was registered has nothing to void)."""
        # The look-up below flushes what this pass made: for this team the database
        # says again which level and discipline statements stand.
        self._nodes_made = {
            made
            for made in self._nodes_made
            if (made[0], made[1]) != (event.organization_id, team.id)
        }
        standing = set(
            (
                await self.session.scalars(
                    select(XapiStatement.id).where(
                        XapiStatement.organization_id == event.organization_id,
                        XapiStatement.id.in_(targets),
                        XapiStatement.voided.is_(False),
                    )
                )
            ).all()
        )
        targets = [t for t in targets if t in standing]
        for index, target in enumerate(targets):
            id = statements.statement_id(event.id, "" if index == 0 else f"voids/{target}")
            self._add(
                event,
                id=id,
                kind=StatementKind.VOIDED,
                team=team,
                statement=statements.voided(
                    self.iris, id=id, team=team, target=target, timestamp=event.created_at
                ),
            )
        await self.session.execute(
            update(XapiStatement)
            .where(
                XapiStatement.organization_id == event.organization_id,
                XapiStatement.id.in_(targets),
            )
            .values(voided=True)
            .execution_options(synchronize_session=False)
        )
        await self.session.flush()
        return len(targets)

    async def _withdrawn(self, event: Any, team: TeamOf, task_id: uuid.UUID) -> int:
        """A ``voided`` statement for the task's completion statement, and for the level
        and discipline completions it was part of."""
        originals = list(
            (
                await self.session.execute(
                    select(XapiStatement.id, XapiStatement.level_id, XapiStatement.discipline_id)
                    .where(
                        XapiStatement.organization_id == event.organization_id,
                        XapiStatement.team_id == team.id,
                        XapiStatement.kind == StatementKind.TASK,
                        XapiStatement.task_id == task_id,
                        XapiStatement.voided.is_(False),
                    )
                    .order_by(XapiStatement.created_at)
                )
            ).all()
        )
        if not originals:
            return 0  # completed before the LRS was registered: nothing to void
        containing_completions = list(
            (
                await self.session.scalars(
                    select(XapiStatement.id).where(
                        XapiStatement.organization_id == event.organization_id,
                        XapiStatement.team_id == team.id,
                        XapiStatement.voided.is_(False),
                        or_(
                            and_(
                                XapiStatement.kind == StatementKind.LEVEL,
                                XapiStatement.level_id.in_({o.level_id for o in originals}),
                            ),
                            and_(
                                XapiStatement.kind == StatementKind.DISCIPLINE,
                                XapiStatement.discipline_id.in_(
                                    {o.discipline_id for o in originals}
                                ),
                            ),
                        ),
                    )
                )
            ).all()
        )
        return await self._void(event, team, [o.id for o in originals] + containing_completions)


def _as_utc(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
