"""How a task is completed (its ``Check``): answers kept as keyed digests or RE2
patterns, matching a submitted answer, and a task's check as other domains ask for it.

An ``Exact`` or ``IgnoreCase`` answer is stored only as a keyed digest
(``storage.sealing.Sealer.digest``, under the organization's key, or the platform's for a
global discipline): a copy of the database does not reveal it, and a submitted answer is
compared digest to digest in constant time. A ``Regex`` answer is kept as written (an
admin reads it back to edit it) and compiled by RE2, whose matching is linear in the
input, so no pattern can stall a worker.
"""

from __future__ import annotations

import enum
import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import re2
from sqlalchemy import Select, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.auth.tokens import load_or_create_secret
from questline.config import Settings
from questline.disciplines.models import CheckKind, Discipline, Match, Task
from questline.storage import sealing

PLATFORM = uuid.UUID(int=0)
"""The key owner of global disciplines' answers (they belong to no organization)."""
DIGESTED_AS = "task answer"


class Audience(enum.Enum):
    """Who a discipline document is written for."""

    AUTHOR = "author"
    """Admins and operators: everything (answers by digest or pattern, hint texts)."""
    LEARNER = "learner"
    """Members: a check's kind and attempts, a hint's cost; never an answer or a hint."""
    OUTSIDE = "outside"
    """Events (webhooks): everything but answers."""


@dataclass(frozen=True, slots=True)
class AnswerKeys:
    """Digests answers for one discipline's owner (an organization, or the platform)."""

    sealer: sealing.Sealer
    owner: uuid.UUID

    def digest(self, value: str, match: Match) -> str:
        return self.sealer.digest(
            normalized(value, match), organization=self.owner, purpose=DIGESTED_AS
        )

    def matches(self, value: str, stored: dict[str, Any]) -> bool:
        """Whether ``value`` is the stored answer (``{"Match", "Digest" | "Value"}``)."""
        match = Match(stored["Match"])
        if match is Match.REGEX:
            return compiled(stored["Value"]).fullmatch(value) is not None
        return self.sealer.digest_matches(
            normalized(value, match),
            stored["Digest"],
            organization=self.owner,
            purpose=DIGESTED_AS,
        )


def normalized(value: str, match: Match) -> str:
    """What is compared: ``IgnoreCase`` folds case and drops surrounding spaces."""
    if match is Match.IGNORE_CASE:
        return value.strip().casefold()
    return value


@functools.lru_cache(maxsize=8)
def _sealer(secret: str, previous: str | None) -> sealing.Sealer:
    return sealing.Sealer(secret, previous)


def answer_keys(settings: Settings, owner: uuid.UUID | None) -> AnswerKeys:
    """The keys of a discipline owned by ``owner`` (None: a global discipline)."""
    sealer = _sealer(load_or_create_secret(settings), settings.jwt_previous_secret)
    return AnswerKeys(sealer=sealer, owner=owner or PLATFORM)


@functools.lru_cache(maxsize=1024)
def compiled(pattern: str) -> Any:
    """An RE2 pattern, compiled once a process (raises ``re2.error`` when invalid)."""
    return re2.compile(pattern)


def valid_pattern(pattern: str) -> bool:
    try:
        compiled(pattern)
    except re2.error:
        return False
    return True


def any_matches(keys: AnswerKeys, value: str, answers: Sequence[dict[str, Any]]) -> bool:
    """Whether ``value`` matches one of the answers. Every answer is tried (no early
    exit), so the time taken does not tell which one, or how many, came close."""
    found = False
    for stored in answers:
        found = keys.matches(value, stored) | found
    return found


@dataclass(frozen=True, slots=True)
class TaskCheck:
    """A task's check as the learner actions need it (answers included: never sent)."""

    task_id: uuid.UUID
    discipline_id: uuid.UUID
    level_id: uuid.UUID
    owner: uuid.UUID | None
    """The discipline's organization (None: a global discipline)."""
    kind: CheckKind
    points: int
    max_attempts: int | None
    answers: tuple[dict[str, Any], ...]
    hints: tuple[dict[str, Any], ...]
    sequential: bool


@functools.cache
def task_check_query() -> Select[*tuple[Any, ...]]:
    """The row ``task_check_of`` reads: the task's check (``task_id``), when the
    organization (``task_org``) sees the task (its own or a global discipline's). Built
    once; a statement of its own or part of a caller's larger look-up."""
    return (
        select(
            Task.id,
            Task.discipline_id,
            Task.level_id,
            Discipline.organization_id,
            Task.check_kind,
            Task.points,
            Task.max_attempts,
            Task.answers,
            Task.hints,
            Discipline.sequential,
        )
        .join(Discipline, Discipline.id == Task.discipline_id)
        .where(
            Task.id == bindparam("task_id"),
            (Discipline.organization_id == bindparam("task_org"))
            | Discipline.organization_id.is_(None),
        )
    )


def task_check_of(row: Sequence[Any]) -> TaskCheck | None:
    """A row of ``task_check_query`` as a ``TaskCheck`` (None: no such task seen)."""
    if row[0] is None:
        return None
    return TaskCheck(
        task_id=row[0],
        discipline_id=row[1],
        level_id=row[2],
        owner=row[3],
        kind=CheckKind(row[4]),
        points=int(row[5]),
        max_attempts=row[6],
        answers=tuple(row[7] or ()),
        hints=tuple(row[8] or ()),
        sequential=bool(row[9]),
    )


async def task_check(
    session: AsyncSession, *, org_id: uuid.UUID, task_id: uuid.UUID
) -> TaskCheck | None:
    """The check of a task the organization sees (its own or a global discipline's), or
    None when it sees no such task."""
    values = {"task_org": org_id, "task_id": task_id}
    row = (await session.execute(task_check_query(), values)).first()
    return None if row is None else task_check_of(row)


async def check_kind_of(
    session: AsyncSession, *, org_id: uuid.UUID, task_id: uuid.UUID
) -> CheckKind | None:
    """How a task the organization sees is completed, or None when it sees no such task."""
    kind = await session.scalar(
        select(Task.check_kind)
        .join(Discipline, Discipline.id == Task.discipline_id)
        .where(
            Task.id == task_id,
            (Discipline.organization_id == org_id) | Discipline.organization_id.is_(None),
        )
    )
    return None if kind is None else CheckKind(kind)
