"""The discipline tree as rows: flattening a document, writing it set-based, reading it.

A tree of any size is read with one query and written with one (batched)
statement per table and kind of change, never one round trip per node.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    JSON,
    Integer,
    String,
    Table,
    Uuid,
    bindparam,
    cast,
    delete,
    insert,
    literal,
    literal_column,
    null,
    select,
    union_all,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from questline.disciplines import schemas
from questline.disciplines.checks import AnswerKeys, Audience, valid_pattern
from questline.disciplines.models import (
    CheckKind,
    Discipline,
    Level,
    Match,
    Quest,
    Resource,
    ResourceOwner,
    Task,
)
from questline.storage.db import new_id
from questline.storage.many_rows import chunked
from questline.web.errors import FieldError, Unprocessable

Row = Mapping[Any, Any]
"""One node row: a dict when flattened from a document, a ``RowMapping`` when read."""
NODE_MODELS: tuple[type[Level | Quest | Task | Resource], ...] = (Level, Quest, Task, Resource)


@dataclass
class TreeRows:
    """The rows of one discipline's tree, each list in reading order."""

    levels: list[Row] = field(default_factory=list)
    quests: list[Row] = field(default_factory=list)
    tasks: list[Row] = field(default_factory=list)
    resources: list[Row] = field(default_factory=list)

    def of(self, model: type[Level | Quest | Task | Resource]) -> list[Row]:
        return {Level: self.levels, Quest: self.quests, Task: self.tasks, Resource: self.resources}[
            model
        ]


@dataclass(frozen=True)
class KnownIds:
    """The node ids a discipline has now, by kind."""

    levels: frozenset[uuid.UUID] = frozenset()
    quests: frozenset[uuid.UUID] = frozenset()
    tasks: frozenset[uuid.UUID] = frozenset()
    resources: frozenset[uuid.UUID] = frozenset()

    def of(self, model: type[Level | Quest | Task | Resource]) -> frozenset[uuid.UUID]:
        return {Level: self.levels, Quest: self.quests, Task: self.tasks, Resource: self.resources}[
            model
        ]


StoredAnswers = Mapping[uuid.UUID, Sequence[dict[str, Any]]]
"""The stored answers of a discipline's ``Answer`` tasks, by task id."""


class _Flattener:
    """Turns a validated document into rows, checking every node ``Id`` it names."""

    def __init__(
        self,
        discipline_id: uuid.UUID,
        known: KnownIds | None,
        keys: AnswerKeys,
        stored: StoredAnswers,
    ) -> None:
        self.discipline_id = discipline_id
        self.known = known
        self.keys = keys
        self.stored = stored
        self.rows = TreeRows()
        self.errors: list[FieldError] = []
        self.seen: set[uuid.UUID] = set()

    def check_order(self, given: int | None, position: int, path: str) -> None:
        if given is not None and given != position:
            message = (
                f"Order is the node's place in its list ({position} here); "
                "to reorder, move the node in the list."
            )
            self.errors.append(FieldError(field=f"{path}.Order", message=message))

    def node_id(self, given: uuid.UUID | None, kind: str, path: str) -> uuid.UUID:
        if given is None:
            return new_id()
        where = f"{path}.Id"
        if self.known is None:
            message = "Leave Id out when creating; the service assigns ids (PUT keeps them)."
            self.errors.append(FieldError(field=where, message=message))
        elif given not in getattr(self.known, f"{kind}s"):
            message = f"{given} is not a {kind} of this discipline; leave Id out for a new {kind}."
            self.errors.append(FieldError(field=where, message=message))
        elif given in self.seen:
            self.errors.append(FieldError(field=where, message=f"{given} is given twice."))
        self.seen.add(given)
        return given

    def resources(
        self,
        items: Sequence[schemas.ResourceInput],
        *,
        owner_kind: ResourceOwner,
        owner_id: uuid.UUID,
        prefix: str,
    ) -> None:
        for position, item in enumerate(items):
            path = f"{prefix}Resources[{position}]"
            self.check_order(item.order, position, path)
            self.rows.resources.append(
                {
                    "id": self.node_id(item.id, "resource", path),
                    "discipline_id": self.discipline_id,
                    "owner_kind": owner_kind,
                    "owner_id": owner_id,
                    "position": position,
                    "title": item.title,
                    "description": item.description,
                    "url": item.url,
                    "kind": item.kind,
                }
            )

    def document(self, doc: schemas.DisciplineDocument) -> TreeRows:
        self.resources(
            doc.resources,
            owner_kind=ResourceOwner.DISCIPLINE,
            owner_id=self.discipline_id,
            prefix="",
        )
        for level_position, level in enumerate(doc.levels):
            self.level(level, level_position)
        if self.errors:
            names = ", ".join(dict.fromkeys(e.field for e in self.errors))
            raise Unprocessable(f"Invalid input in: {names}.", errors=self.errors)
        return self.rows

    def level(self, level: schemas.LevelInput, position: int) -> None:
        path = f"Levels[{position}]"
        self.check_order(level.order, position, path)
        level_id = self.node_id(level.id, "level", path)
        self.rows.levels.append(self._node(level_id, position, level.title, level.description))
        self.resources(
            level.resources, owner_kind=ResourceOwner.LEVEL, owner_id=level_id, prefix=f"{path}."
        )
        for quest_position, quest in enumerate(level.quests):
            self.quest(quest, quest_position, level_id=level_id, prefix=f"{path}.")

    def quest(
        self, quest: schemas.QuestInput, position: int, *, level_id: uuid.UUID, prefix: str
    ) -> None:
        path = f"{prefix}Quests[{position}]"
        self.check_order(quest.order, position, path)
        quest_id = self.node_id(quest.id, "quest", path)
        row = self._node(quest_id, position, quest.title, quest.description)
        self.rows.quests.append({**row, "level_id": level_id})
        self.resources(
            quest.resources, owner_kind=ResourceOwner.QUEST, owner_id=quest_id, prefix=f"{path}."
        )
        for task_position, task in enumerate(quest.tasks):
            task_path = f"{path}.Tasks[{task_position}]"
            self.check_order(task.order, task_position, task_path)
            task_id = self.node_id(task.id, "task", task_path)
            task_row = self._node(task_id, task_position, task.title, task.description)
            self.rows.tasks.append(
                {
                    **task_row,
                    "level_id": level_id,
                    "quest_id": quest_id,
                    "points": task.points,
                    **self.check(task, task_id, kept=task.id is not None, path=task_path),
                    "hints": [{"Text": h.text, "Cost": h.cost} for h in task.hints] or None,
                }
            )
            self.resources(
                task.resources,
                owner_kind=ResourceOwner.TASK,
                owner_id=task_id,
                prefix=f"{task_path}.",
            )

    def check(
        self, task: schemas.TaskInput, task_id: uuid.UUID, *, kept: bool, path: str
    ) -> dict[str, Any]:
        """The task's check columns: new answers digested (or, as RE2 patterns, compiled
        to refuse an invalid one), answers sent by digest or left out taken from the
        stored ones. No message names an answer."""
        check = task.check
        row: dict[str, Any] = {"check_kind": check.kind, "max_attempts": None, "answers": None}
        if check.kind is not CheckKind.ANSWER:
            return row
        stored = self.stored.get(task_id, ()) if kept else ()
        row["max_attempts"] = check.max_attempts
        if check.answers is None:
            if not stored:
                message = "A task of Kind Answer needs 1 to 20 Answers."
                self.errors.append(FieldError(field=f"{path}.Check.Answers", message=message))
            row["answers"] = list(stored)
            return row
        answers: list[dict[str, Any]] = []
        for position, answer in enumerate(check.answers):
            where = f"{path}.Check.Answers[{position}]"
            if answer.digest is not None:
                if not any(
                    s.get("Digest") == answer.digest and s["Match"] == answer.match.value
                    for s in stored
                ):
                    message = (
                        "Digest names no stored answer of this task (with this Match); "
                        "send Value for a new answer."
                    )
                    self.errors.append(FieldError(field=f"{where}.Digest", message=message))
                answers.append({"Match": answer.match.value, "Digest": answer.digest})
            elif answer.match is Match.REGEX:
                assert answer.value is not None
                if not valid_pattern(answer.value):
                    message = (
                        "Not a valid regular expression in RE2 syntax (no backreferences "
                        "or lookaround)."
                    )
                    self.errors.append(FieldError(field=f"{where}.Value", message=message))
                answers.append({"Match": Match.REGEX.value, "Value": answer.value})
            else:
                assert answer.value is not None
                digest = self.keys.digest(answer.value, answer.match)
                answers.append({"Match": answer.match.value, "Digest": digest})
        row["answers"] = answers
        return row

    def _node(self, node_id: uuid.UUID, position: int, title: str, description: str) -> Row:
        return {
            "id": node_id,
            "discipline_id": self.discipline_id,
            "position": position,
            "title": title,
            "description": description,
        }


def flatten(
    doc: schemas.DisciplineDocument,
    *,
    discipline_id: uuid.UUID,
    known: KnownIds | None,
    keys: AnswerKeys,
    stored: StoredAnswers | None = None,
) -> TreeRows:
    """The rows of ``doc``; ``known=None`` when creating (then no node may name an ``Id``).

    Raises 422 naming the path of every ``Id`` that is not a node of the same kind of this
    discipline, or that is given twice, of every invalid pattern, and of every answer
    digest that names no stored answer of its task.
    """
    return _Flattener(discipline_id, known, keys, stored or {}).document(doc)


async def task_checks(session: AsyncSession, discipline_id: uuid.UUID) -> list[Row]:
    """The check columns of the discipline's tasks that have more than the default (a
    check other than ``Admin``, or hints): what a PUT keeps and the audit log compares."""
    rows = await session.execute(
        select(Task.id, Task.check_kind, Task.max_attempts, Task.answers, Task.hints).where(
            Task.discipline_id == discipline_id,
            (Task.check_kind != CheckKind.ADMIN) | Task.hints.is_not(None),
        )
    )
    return [
        {
            "id": row[0],
            "check_kind": CheckKind(row[1]),
            "max_attempts": row[2],
            "answers": row[3],
            "hints": row[4],
        }
        for row in rows
    ]


def stored_answers(checks: Sequence[Row]) -> StoredAnswers:
    """The stored answers of the ``Answer`` tasks among ``task_checks``, by task id."""
    return {
        row["id"]: list(row["answers"] or ())
        for row in checks
        if row["check_kind"] is CheckKind.ANSWER
    }


ROWS_PER_STATEMENT = 1000
"""Rows of one executemany: SQLAlchemy prepares every row's parameters (UUIDs to text on
SQLite) on the event loop before the statement runs, so the rows of a whole large
document in one statement would stall every other request (docs/reliability.md)."""


async def _execute_many(session: AsyncSession, statement: Any, rows: Sequence[Row]) -> None:
    for chunk in chunked(rows, ROWS_PER_STATEMENT):
        await session.execute(statement, list(chunk))


async def insert_rows(session: AsyncSession, rows: TreeRows) -> None:
    """Insert a whole new tree: one executemany per table (a thousand rows at a time),
    parents first."""
    for model in NODE_MODELS:
        await _execute_many(session, insert(_table(model)), rows.of(model))


async def known_ids(session: AsyncSession, discipline_id: uuid.UUID) -> KnownIds:
    """The ids of every node of the discipline, by kind, in one query."""
    parts = [
        select(literal(model.__tablename__).label("kind"), model.id).where(
            model.discipline_id == discipline_id
        )
        for model in NODE_MODELS
    ]
    found: dict[str, set[uuid.UUID]] = defaultdict(set)
    # Streamed a thousand rows at a time: converting a large tree's ids in one go would
    # hold the event loop (docs/reliability.md).
    result = await session.stream(union_all(*parts))
    async for partition in result.partitions(ROWS_PER_STATEMENT):
        for kind, node_id in partition:
            found[kind].add(node_id)
    return KnownIds(
        **{model.__tablename__: frozenset(found[model.__tablename__]) for model in NODE_MODELS}
    )


def removed_ids(
    rows: TreeRows, known: KnownIds, model: type[Level | Quest | Task | Resource]
) -> set[uuid.UUID]:
    return set(known.of(model)) - {row["id"] for row in rows.of(model)}


async def replace_rows(session: AsyncSession, rows: TreeRows, known: KnownIds) -> None:
    """Make the stored tree equal ``rows``: kept nodes are updated in place (their ids,
    and so the progress on them, survive), new ones inserted, the rest deleted.

    Parents are written before children, so a node may move under a new parent; removed
    nodes are deleted children first, after every kept node has left them.
    """
    for model in NODE_MODELS:
        kept_ids = known.of(model)
        batch = rows.of(model)
        fresh = [row for row in batch if row["id"] not in kept_ids]
        kept = [row for row in batch if row["id"] in kept_ids]
        await _execute_many(session, insert(_table(model)), fresh)
        await _execute_many(session, update(model), kept)
    for model in (Task, Quest, Level, Resource):
        await _delete_ids(session, _table(model), removed_ids(rows, known, model))


async def _delete_ids(session: AsyncSession, table: Table, ids: Iterable[uuid.UUID]) -> None:
    params = [{"removed_id": node_id} for node_id in ids]
    await _execute_many(session, delete(table).where(table.c.id == bindparam("removed_id")), params)


_PARENT: dict[type[Level | Quest | Task | Resource], str | None] = {
    Level: None,
    Quest: "level_id",
    Task: "quest_id",
    Resource: "owner_id",
}
"""Each table's column that names the node it hangs from (levels hang from the discipline)."""


def _tree_part(kind: int, model: type[Level | Quest | Task | Resource], discipline_id: Any) -> Any:
    """One table's rows in the shape all four share: what reading needs of each, typed
    NULLs where a table has no such column (the compound's types are its first part's)."""
    table = _table(model)
    parent = _PARENT[model]
    columns = table.c
    return select(
        literal_column(str(kind), Integer).label("kind"),
        columns.id,
        (columns[parent] if parent else cast(null(), Uuid)).label("parent"),
        columns.position,
        columns.title,
        columns.description,
        (columns.points if model is Task else cast(null(), Integer)).label("points"),
        (columns.url if model is Resource else cast(null(), String)).label("url"),
        (columns.kind if model is Resource else cast(null(), String)).label("resource_kind"),
        (columns.check_kind if model is Task else cast(null(), String)).label("check_kind"),
        (columns.max_attempts if model is Task else cast(null(), Integer)).label("max_attempts"),
        (columns.answers if model is Task else cast(null(), JSON)).label("answers"),
        (columns.hints if model is Task else cast(null(), JSON)).label("hints"),
    ).where(columns.discipline_id == discipline_id)


def _as_row(model: type[Level | Quest | Task | Resource], found: Any) -> Row:
    row: dict[str, Any] = {
        "id": found.id,
        "position": found.position,
        "title": found.title,
        "description": found.description,
    }
    parent = _PARENT[model]
    if parent is not None:
        row[parent] = found.parent
    if model is Task:
        row["points"] = found.points
        row["check_kind"] = CheckKind(found.check_kind)
        row["max_attempts"] = found.max_attempts
        row["answers"] = found.answers
        row["hints"] = found.hints
    elif model is Resource:
        row["url"] = found.url
        row["kind"] = found.resource_kind
    return row


async def load_rows(session: AsyncSession, discipline_id: uuid.UUID) -> TreeRows:
    """The whole tree in one query (the four tables as one ``UNION ALL``, each in
    ``position`` order), whatever its size: a cold read of a discipline is two statements."""
    parts = [_tree_part(kind, model, discipline_id) for kind, model in enumerate(NODE_MODELS)]
    query = union_all(*parts).order_by(literal_column("kind"), literal_column("position"))
    rows = TreeRows()
    lists = [rows.of(model) for model in NODE_MODELS]
    for found in (await session.execute(query)).all():
        model = NODE_MODELS[found.kind]
        lists[found.kind].append(_as_row(model, found))
    return rows


def _check(task: Row, audience: Audience) -> schemas.Check:
    kind = task["check_kind"]
    if kind is not CheckKind.ANSWER:
        return schemas.Check.model_construct(kind=kind, max_attempts=None)
    if audience is not Audience.AUTHOR:
        return schemas.Check.model_construct(kind=kind, max_attempts=task["max_attempts"])
    answers = [
        schemas.Answer.model_construct(
            match=Match(a["Match"]), value=a.get("Value"), digest=a.get("Digest")
        )
        for a in task["answers"] or ()
    ]
    return schemas.Check.model_construct(
        kind=kind, max_attempts=task["max_attempts"], answers=answers
    )


def _hints(task: Row, audience: Audience) -> list[schemas.Hint]:
    shown = audience is not Audience.LEARNER
    return [
        schemas.Hint.model_construct(text=h["Text"] if shown else None, cost=h["Cost"])
        for h in task["hints"] or ()
    ]


def assemble(
    discipline: Discipline, rows: TreeRows, audience: Audience = Audience.AUTHOR
) -> schemas.Discipline:
    """The nested document of a discipline from its rows, as ``audience`` reads it.

    Every list of rows holds each parent's children in ``position`` order (the queries
    sort by it; a flattened document is in that order already), so grouping keeps it.

    The rows are trusted (read from the database or flattened from a validated
    document), so the models are constructed without validating them again.
    """
    resources: dict[uuid.UUID, list[schemas.Resource]] = defaultdict(list)
    for r in rows.resources:
        resources[r["owner_id"]].append(
            schemas.Resource.model_construct(
                id=r["id"],
                order=r["position"],
                title=r["title"],
                description=r["description"],
                url=r["url"],
                kind=r["kind"],
            )
        )
    tasks: dict[uuid.UUID, list[schemas.Task]] = defaultdict(list)
    for t in rows.tasks:
        tasks[t["quest_id"]].append(
            schemas.Task.model_construct(
                id=t["id"],
                order=t["position"],
                title=t["title"],
                description=t["description"],
                points=t["points"],
                resources=resources.get(t["id"], []),
                check=_check(t, audience),
                hints=_hints(t, audience),
            )
        )
    quests: dict[uuid.UUID, list[schemas.Quest]] = defaultdict(list)
    for q in rows.quests:
        quests[q["level_id"]].append(
            schemas.Quest.model_construct(
                id=q["id"],
                order=q["position"],
                title=q["title"],
                description=q["description"],
                resources=resources.get(q["id"], []),
                tasks=tasks.get(q["id"], []),
            )
        )
    levels = [
        schemas.Level.model_construct(
            id=lv["id"],
            order=lv["position"],
            title=lv["title"],
            description=lv["description"],
            resources=resources.get(lv["id"], []),
            quests=quests.get(lv["id"], []),
        )
        for lv in rows.levels
    ]
    return schemas.Discipline.model_construct(
        id=discipline.id,
        title=discipline.title,
        description=discipline.description,
        organization_id=discipline.organization_id,
        color=discipline.color,
        sequential=discipline.sequential,
        created_at=discipline.created_at,
        updated_at=discipline.updated_at,
        resources=resources.get(discipline.id, []),
        levels=levels,
    )


def _table(model: type[Level | Quest | Task | Resource]) -> Table:
    table = model.__table__
    assert isinstance(table, Table)
    return table
