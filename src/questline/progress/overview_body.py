"""A team's overview as its JSON object, from ``overview_query``'s row, the
organization's discipline tree and the ranks: the counts summed per quest, level and
discipline, each task's state, the team's rank."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from typing import Any

import orjson

from questline.progress.discipline_tree import DisciplineNode
from questline.progress.rank_memo import Ranks
from questline.progress.team_task_state import TeamTaskState
from questline.readmodel import moved
from questline.readmodel.http import depends_also
from questline.teams.models import TeamStatus
from questline.teams.ranking import place_key


def _counts(done: int, total: int, earned: int, points: int) -> dict[str, int]:
    return {
        "TasksCompleted": done,
        "TasksTotal": total,
        "PointsEarned": earned,
        "PointsTotal": points,
        "Percent": 100 * done // total if total else 0,
    }


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
    return _assemble(row, per_quest, tree, ahead, TeamTaskState.of(row[12:16]))


def place_of(row: Sequence[Any]) -> dict[str, str]:
    """The builder's header naming where a ranked team stands (its overview's ``Rank``
    changes only when a step crosses that place: ``readmodel.moved``)."""
    if not row[6]:
        return {}
    return depends_also(moved.placed(place_key(int(row[5]), row[16])))


def _id_bytes(value: Any) -> bytes:
    return value.bytes if isinstance(value, uuid.UUID) else uuid.UUID(str(value)).bytes


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
