"""An answer's look-up, as both dialects' ledgers read it (``ledger_sqlite``,
``ledger_pg``): the columns their ``ANSWER_LOOKUP`` statements return, in order, and the
``ledger.AnswerSight`` made of them.

The statements ask what ``disciplines.checks.task_check_query`` (the task's check),
``members.callers.named_members`` (the members the caller's identity names) and
``progress.locks.level_states`` (the previous level's tasks and the team's completions
of them) ask, for the ledger's batches, which run their own SQL.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from questline.disciplines.checks import TaskCheck
from questline.disciplines.models import CheckKind
from questline.progress.ledger import AnswerSight
from questline.progress.locks import LevelState, closed_by

COLUMNS = (
    "check_kind",
    "max_attempts",
    "answers",
    "owner",
    "level_id",
    "sequential",
    "discipline_id",
    "points",
    "used",
    "named",
    "level_title",
    "previous_id",
    "previous_title",
    "previous_tasks",
    "previous_done",
)


def _json(value: Any) -> Any:
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def answer_sight(
    task_id: uuid.UUID, row: Sequence[Any], as_uuid: Callable[[Any], uuid.UUID]
) -> AnswerSight:
    """The sight of an answer from its look-up's ``COLUMNS`` (``as_uuid``: the dialect's
    ids as UUIDs)."""
    (
        kind,
        max_attempts,
        answers,
        owner,
        level_id,
        sequential,
        discipline_id,
        points,
        used,
        named,
        level_title,
        previous_id,
        previous_title,
        previous_tasks,
        previous_done,
    ) = row
    members = [
        (uuid.UUID(str(member_id)), str(email_key), bool(in_team))
        for member_id, email_key, in_team in _json(named) or ()
    ]
    if kind is None:
        return AnswerSight(check=None, named=members, used=int(used or 0), locked=None)
    check = TaskCheck(
        task_id=task_id,
        discipline_id=as_uuid(discipline_id),
        level_id=as_uuid(level_id),
        owner=None if owner is None else as_uuid(owner),
        kind=CheckKind(kind),
        points=int(points),
        max_attempts=None if max_attempts is None else int(max_attempts),
        answers=tuple(_json(answers) or ()),
        hints=(),
        sequential=bool(sequential),
    )
    previous = (
        None
        if previous_id is None or not check.sequential
        else LevelState(
            as_uuid(previous_id), str(previous_title), int(previous_tasks), int(previous_done)
        )
    )
    return AnswerSight(
        check=check,
        named=members,
        used=int(used or 0),
        locked=closed_by(str(level_title), previous),
    )
