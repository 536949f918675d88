"""An answer's look-up, as both dialects' ledgers read it (``ledger_sqlite``,
``ledger_pg``): the columns their ``ANSWER_LOOKUP`` statements return, in order, and the
``ledger.AnswerSight`` made of them.

The statements ask what ``disciplines.checks.task_check_query`` (the task's check),
``members.callers.named_members`` (the members the caller's identity names) and
``progress.locks.level_states`` (the previous level's tasks and the team's completions
of them) ask, for the ledger's batches, which run their own SQL; and, for each member
named and for the caller's subject (whichever the answer's actor turns out to be), the
stored attempts its rate may find at the limit (``rates.window``).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from questline.disciplines.checks import TaskCheck
from questline.disciplines.models import CheckKind
from questline.progress.ledger import Answering, AnswerSight, Write
from questline.progress.locks import LevelState, closed_by
from questline.progress.rates import window

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
    "subject_recent",
    "level_title",
    "previous_id",
    "previous_title",
    "previous_tasks",
    "previous_done",
)


def _json(value: Any) -> Any:
    return orjson.loads(value) if isinstance(value, str | bytes) else value


def rate_windows(writes: Sequence[Write]) -> dict[int, tuple[int, int]]:
    """By position of each answer: the window of its actor's stored attempts to read
    (``rates.window``), for as many answers as its caller sends in the batch (a caller
    names one member: two callers naming the same member in one batch are each counted
    on their own, so that rare pair may pass the limit by one)."""
    callers: dict[tuple[uuid.UUID, str, str | None], list[tuple[int, Answering]]] = {}
    for position, write in enumerate(writes):
        if isinstance(write, Answering):
            key = (write.org_id, write.caller.subject, write.caller.email)
            callers.setdefault(key, []).append((position, write))
    found = {}
    for answers in callers.values():
        limit = max(1, max(write.per_minute for _, write in answers))
        for position, _ in answers:
            found[position] = window(limit, len(answers))
    return found


def _times(value: Any, offset: int) -> dict[int, dt.datetime]:
    """Stored attempts' times (a JSON array, latest first) by rank from ``offset``."""
    found = {}
    for rank, text in enumerate(_json(value) or ()):
        at = dt.datetime.fromisoformat(str(text))
        found[offset + rank] = at if at.tzinfo is not None else at.replace(tzinfo=dt.UTC)
    return found


def answer_sight(
    task_id: uuid.UUID, row: Sequence[Any], as_uuid: Callable[[Any], uuid.UUID], offset: int
) -> AnswerSight:
    """The sight of an answer from its look-up's ``COLUMNS`` (``as_uuid``: the dialect's
    ids as UUIDs; ``offset``: the rank of the first stored attempt read for a rate)."""
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
        subject_recent,
        level_title,
        previous_id,
        previous_title,
        previous_tasks,
        previous_done,
    ) = row
    members = []
    recent = {}
    for member_id, email_key, in_team, member_recent in _json(named) or ():
        member = uuid.UUID(str(member_id))
        members.append((member, str(email_key), bool(in_team)))
        recent[str(member)] = _times(member_recent, offset)
    subject = _times(subject_recent, offset)
    if kind is None:
        return AnswerSight(None, members, int(used or 0), None, recent, subject)
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
        recent=recent,
        subject_recent=subject,
    )
