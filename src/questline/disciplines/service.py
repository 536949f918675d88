"""Discipline rules: who sees and changes which discipline, and the document's life cycle.

A discipline with no organization is global: every organization reads it, only an
operator creates, replaces or deletes it (DESIGN §3).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

import anyio
import orjson
from fastapi.requests import HTTPConnection
from pydantic import TypeAdapter
from sqlalchemy import ColumnElement, Select, bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit, events
from questline.config import Settings
from questline.disciplines import schemas, tree
from questline.disciplines.checks import Audience, answer_keys
from questline.disciplines.models import CheckKind, Discipline, Level, Quest, Task
from questline.readmodel import versions
from questline.readmodel.lean import LeanRequest
from questline.readmodel.service import ReadModel
from questline.storage.db import new_id, utcnow
from questline.web.bodies import gc_paused, without_gc_pauses
from questline.web.errors import FieldError, Forbidden, PreconditionFailed, Unprocessable
from questline.web.identity import Caller, Role
from questline.web.lookups import one_or_not_found
from questline.web.pagination import PageRequest, keyset_page
from questline.web.schemas import shown_row

T = TypeVar("T")


class TasksRemovedHook(Protocol):
    async def __call__(
        self,
        session: AsyncSession,
        *,
        discipline_id: uuid.UUID,
        task_ids: Sequence[uuid.UUID],
        force: bool,
    ) -> None: ...


def tasks_removed_of(connection: HTTPConnection) -> TasksRemovedHook:
    """What to call in the transaction before a discipline's tasks are deleted (a whole
    discipline on DELETE, or tasks left out of a PUT document): the progress domain
    refuses (409) when teams completed them, or with ``force`` withdraws that progress.
    That domain builds on this one, so the application hands it in (kept on
    ``app.state.tasks_removed``)."""
    return cast(TasksRemovedHook, connection.app.state.tasks_removed)


LARGE_TREE_NODES = 2000
"""A document with more nodes is flattened, assembled and serialized in a worker thread
(a 5 MiB document has tens of thousands of nodes: half a second of CPU that would
otherwise stall every other request of the worker; docs/reliability.md)."""


@dataclass(frozen=True, slots=True)
class Written:
    """A discipline just written, with its document as it now reads (and as JSON)."""

    discipline: Discipline
    document: schemas.Discipline
    body: bytes = field(default=b"", repr=False)


def node_count(doc: schemas.DisciplineDocument) -> int:
    """Levels, quests, tasks and resources of a (validated) document."""
    count = len(doc.resources)
    for level in doc.levels:
        count += 1 + len(level.resources)
        for quest in level.quests:
            count += 1 + len(quest.resources) + len(quest.tasks)
            count += sum(len(task.resources) for task in quest.tasks)
    return count


def paused_gc_if_large(doc: schemas.DisciplineDocument) -> contextlib.AbstractContextManager[None]:
    """Writing a large document: the garbage collector paused meanwhile (its full
    collections over the document's objects stalled the loop 50 to 300 ms)."""
    return gc_paused() if node_count(doc) > LARGE_TREE_NODES else contextlib.nullcontext()


async def _cpu(large: bool, work: Callable[[], T]) -> T:
    """Run CPU-only ``work`` (no database) in a worker thread when the tree is large."""
    if not large:
        return work()
    return await anyio.to_thread.run_sync(without_gc_pauses, work)


def _document_and_body(
    discipline: Discipline, rows: tree.TreeRows
) -> tuple[schemas.Discipline, bytes, dict[str, Any]]:
    """The document as its author reads it (and its JSON), and as events carry it (no
    answers)."""
    document = tree.assemble(discipline, rows)
    outside = tree.assemble(discipline, rows, Audience.OUTSIDE)
    return (
        document,
        document.model_dump_json(by_alias=True).encode(),
        outside.model_dump(mode="json", by_alias=True),
    )


def audience_of(caller: Caller) -> Audience:
    """Members read a document without answers or hint texts; admins and operators, whole."""
    return Audience.LEARNER if caller.role is Role.MEMBER else Audience.AUTHOR


@dataclass(frozen=True, slots=True)
class DisciplineCounts:
    discipline: Discipline
    level_count: int
    quest_count: int
    task_count: int
    points_total: int


def etag_of(discipline: Discipline) -> str:
    return _etag(discipline.id, discipline.version)


def _etag(discipline_id: uuid.UUID, version: int) -> str:
    return f'"{discipline_id.hex}.{version}"'


@functools.cache
def _version_query() -> Select[int]:
    """A discipline's version if organization ``org`` sees it: the statement the route's
    check and the fast lane's share. Built once."""
    org: Any = bindparam("org")
    return select(Discipline.version).where(
        Discipline.id == bindparam("discipline"), visible_to(org)
    )


async def current_etag(
    session: AsyncSession, *, caller: Caller, discipline_id: uuid.UUID
) -> str | None:
    """The ``ETag`` the discipline has now, if the caller's organization sees it: one
    statement. The version moves with every change of the discipline or its tree
    (``replace`` rewrites the row), so an equal ``ETag`` means an equal document."""
    params = {"org": caller.org_id, "discipline": discipline_id}
    version = await session.scalar(_version_query(), params)
    return None if version is None else _etag(discipline_id, version)


async def lean_current_etag(request: LeanRequest) -> str | None:
    """``current_etag`` for the fast lane, on the driver (``readmodel.lean``)."""
    version = await _lean_version(request)
    if version is None or request.resource_id is None:
        return None
    return _etag(request.resource_id, version)


async def _lean_version(request: LeanRequest) -> int | None:
    """The path's discipline's version if the caller's organization sees it."""
    if request.resource_id is None:
        return None
    statement = request.reader.statement("discipline-version", _version_query)
    params = {"org": request.organization_id, "discipline": request.resource_id}
    rows = await request.reader.fetch(statement, params)
    return int(rows[0][0]) if rows else None


DOCUMENTS = uuid.UUID(int=0)
"""The read model's organization key of discipline documents. A document is the same
for every organization that sees it (the global disciplines: all of them), so it is
kept once, by the discipline's own version; who may read it is the organization's
version check (``_version_query``), made before it is looked up."""


def document_memo(discipline_id: uuid.UUID, audience: Audience = Audience.AUTHOR) -> str:
    """The memo's name: one document a discipline for its authors, one for members."""
    suffix = "" if audience is Audience.AUTHOR else f":{audience.value}"
    return f"discipline:{discipline_id.hex}{suffix}"


async def document_body(
    session: AsyncSession,
    memos: ReadModel,
    discipline: Discipline,
    audience: Audience = Audience.AUTHOR,
) -> bytes:
    """The discipline's document as JSON for ``audience``, from the read model's memo of
    this version of the discipline, or read and kept there."""

    async def read() -> bytes:
        document = await read_tree(session, discipline, audience)
        return document.model_dump_json(by_alias=True).encode()

    body: bytes = await memos.memo(
        DOCUMENTS, document_memo(discipline.id, audience), discipline.version, read
    )
    return body


async def lean_document(request: LeanRequest) -> tuple[bytes, dict[str, str]] | None:
    """``GET /discipline/{id}`` on a read-model miss, on the driver: the version check
    (one statement) and the document some organization's read kept at that version.
    None (the route answers): no such discipline for the caller (its 404), or no
    document kept at this version."""
    version = await _lean_version(request)
    if version is None or request.resource_id is None:
        return None
    audience = Audience.LEARNER if request.role == Role.MEMBER.value else Audience.AUTHOR
    memo = document_memo(request.resource_id, audience)
    body = request.memos.memo_at(DOCUMENTS, memo, version)
    return None if body is None else (body, {"ETag": _etag(request.resource_id, version)})


async def visible_versions(
    session: AsyncSession, *, org_id: uuid.UUID
) -> tuple[tuple[uuid.UUID, int], ...]:
    """Each discipline the organization sees, with its version, by id: what every
    summary of them (an overview's tree) is a function of. Versions only grow and ids
    are never reused, so an equal answer means the same disciplines, unchanged."""
    rows = await session.execute(
        select(Discipline.id, Discipline.version).where(visible_to(org_id)).order_by(Discipline.id)
    )
    return tuple((row[0], int(row[1])) for row in rows)


def etag_matches(discipline: Discipline, header: str) -> bool:
    """Whether an ``If-Match`` / ``If-None-Match`` value names the current version."""
    tags = [t.strip() for t in header.split(",")]
    etag = etag_of(discipline)
    return "*" in tags or etag in tags or f"W/{etag}" in tags


def check_if_match(discipline: Discipline, if_match: str | None) -> None:
    if if_match is not None and not etag_matches(discipline, if_match):
        raise PreconditionFailed(
            "The discipline changed since you read it (If-Match does not match its ETag); "
            "read it again and retry."
        )


def visible_to(org_id: uuid.UUID | None) -> ColumnElement[bool]:
    """Global disciplines, and the organization's own (operators have none)."""
    if org_id is None:
        return Discipline.organization_id.is_(None)
    return (Discipline.organization_id.is_(None)) | (Discipline.organization_id == org_id)


def ensure_writer(caller: Caller) -> None:
    """Writes need an admin (own organization) or an operator (global disciplines)."""
    if caller.role is Role.MEMBER:
        raise Forbidden("Changing disciplines needs an organization admin (or operator) token.")


def ensure_can_change(caller: Caller, discipline: Discipline) -> None:
    if discipline.organization_id is None and not caller.is_operator:
        raise Forbidden("Global disciplines are managed by platform operators only.")


def owner_for_new(caller: Caller, data: schemas.DisciplineCreate) -> uuid.UUID | None:
    """The organization a new discipline belongs to (``None``: global)."""
    ensure_writer(caller)
    given = "organization_id" in data.model_fields_set
    wanted = data.organization_id if given else caller.org_id
    if caller.is_operator:
        if wanted is not None:
            raise Forbidden("Operators create global disciplines only; leave OrganizationId out.")
        return None
    if wanted is None:
        raise Forbidden("Only platform operators create global disciplines.")
    if wanted != caller.org_id:
        raise Forbidden("You can create disciplines only in your own organization.")
    return wanted


def _count(model: type[Level | Quest | Task]) -> ColumnElement[int]:
    """A per-discipline aggregate served by the ``(discipline_id, …)`` index."""
    return (
        select(func.count())
        .where(model.discipline_id == Discipline.id)
        .correlate(Discipline)
        .scalar_subquery()
    )


def _points_total() -> ColumnElement[int]:
    return (
        select(func.coalesce(func.sum(Task.points), 0))
        .where(Task.discipline_id == Discipline.id)
        .correlate(Discipline)
        .scalar_subquery()
    )


def _summaries(org_id: uuid.UUID | None) -> Select[Discipline, int, int, int, int]:
    return select(Discipline, _count(Level), _count(Quest), _count(Task), _points_total()).where(
        visible_to(org_id)
    )


async def list_disciplines(
    session: AsyncSession, *, org_id: uuid.UUID | None, page: PageRequest
) -> list[DisciplineCounts]:
    """Visible disciplines in creation order with their counts, in one query."""
    query = _summaries(org_id)
    query = keyset_page(query, page, (Discipline.id, uuid.UUID))
    rows = (await session.execute(query)).all()
    return [DisciplineCounts(r[0], int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in rows]


def whole_list_query(org_id: uuid.UUID) -> Any:
    """``GET /discipline`` without paging: every visible discipline with its counts, in
    creation order, one statement (streamed by ``readmodel.http.serve_list``)."""
    return _summaries(org_id).order_by(Discipline.id)


_SUMMARIES = TypeAdapter(list[schemas.DisciplineSummary])


def encode_summary_rows(rows: Sequence[Any]) -> bytes:
    """A chunk of ``whole_list_query``'s rows as the JSON array the route writes."""
    summaries = [
        to_summary(DisciplineCounts(r[0], int(r[1]), int(r[2]), int(r[3]), int(r[4]))) for r in rows
    ]
    return _SUMMARIES.dump_json(summaries, by_alias=True)


def cursor_of(discipline: Discipline) -> list[str]:
    return [str(discipline.id)]


def to_summary(counted: DisciplineCounts) -> schemas.DisciplineSummary:
    return shown_row(
        schemas.DisciplineSummary,
        counted.discipline,
        level_count=counted.level_count,
        quest_count=counted.quest_count,
        task_count=counted.task_count,
        points_total=counted.points_total,
    )


async def get_discipline(
    session: AsyncSession, *, caller: Caller, discipline_id: uuid.UUID, for_update: bool = False
) -> Discipline:
    """The discipline if the caller may read it, else 404.

    ``for_update`` locks the row (PostgreSQL) so that a version check and the change
    that follows see the latest committed version; on SQLite writers already queue.
    """
    query = select(Discipline).where(Discipline.id == discipline_id, visible_to(caller.org_id))
    return await one_or_not_found(session, query, kind="discipline", for_update=for_update)


async def get_for_change(
    session: AsyncSession, *, caller: Caller, discipline_id: uuid.UUID
) -> Discipline:
    """The discipline, locked, if the caller may change it (403 for role, 404 unseen)."""
    ensure_writer(caller)
    discipline = await get_discipline(
        session, caller=caller, discipline_id=discipline_id, for_update=True
    )
    ensure_can_change(caller, discipline)
    return discipline


async def read_tree(
    session: AsyncSession, discipline: Discipline, audience: Audience = Audience.AUTHOR
) -> schemas.Discipline:
    return tree.assemble(discipline, await tree.load_rows(session, discipline.id), audience)


def audited(
    discipline: Discipline, levels: int, tasks: int, checks: dict[str, object] | None = None
) -> dict[str, object]:
    """The fields of a discipline the audit log compares (its tree by counts, and the
    checks of the tasks that are not completed by an admin: never an answer)."""
    fields: dict[str, object] = {
        "Title": discipline.title,
        "Description": discipline.description,
        "Color": discipline.color,
        "Sequential": discipline.sequential,
        "Levels": levels,
        "Tasks": tasks,
    }
    if checks:
        fields["Checks"] = checks
    return fields


def audited_checks(tasks: Sequence[tree.Row]) -> dict[str, object]:
    """Each task's check that is not `Admin`, by task id: its kind, attempts, how many
    answers (and a fingerprint of them that changes when they do: the stored digests
    and patterns hashed once more, so no answer can be read from it) and hints."""
    checks: dict[str, object] = {}
    for task in tasks:
        kind = task["check_kind"]
        hints = task["hints"] or ()
        if kind is CheckKind.ADMIN and not hints:
            continue
        entry: dict[str, object] = {"Kind": kind.value}
        if kind is CheckKind.ANSWER:
            answers = task["answers"] or ()
            entry["MaxAttempts"] = task["max_attempts"]
            entry["Answers"] = len(answers)
            entry["AnswersVersion"] = _fingerprint(answers)
        if hints:
            entry["HintCosts"] = [h["Cost"] for h in hints]
        checks[str(task["id"])] = entry
    return checks


def _fingerprint(answers: Sequence[dict[str, Any]]) -> str:
    canonical = orjson.dumps(list(answers), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(b"questline answers audit" + canonical).hexdigest()[:12]


def _counts(rows: tree.TreeRows) -> tuple[int, int]:
    return len(rows.of(Level)), len(rows.of(Task))


async def bump_for(session: AsyncSession, org_id: uuid.UUID | None) -> None:
    """The read model's version of the discipline's organization, or of every
    organization for a global discipline."""
    if org_id is None:
        await versions.bump_all(session)
    else:
        await versions.bump(session, org_id)


async def create_discipline(
    session: AsyncSession, *, caller: Caller, data: schemas.DisciplineCreate, settings: Settings
) -> Written:
    """Create the discipline and its whole tree (set-based inserts, one per table)."""
    org_id = owner_for_new(caller, data)
    discipline_id = new_id()
    large = node_count(data) > LARGE_TREE_NODES
    keys = answer_keys(settings, org_id)
    rows = await _cpu(
        large, lambda: tree.flatten(data, discipline_id=discipline_id, known=None, keys=keys)
    )
    now = utcnow()
    discipline = Discipline(
        id=discipline_id,
        organization_id=org_id,
        title=data.title,
        description=data.description,
        color=data.color,
        sequential=data.sequential,
        created_at=now,
        updated_at=now,
    )
    session.add(discipline)
    await session.flush()
    await tree.insert_rows(session, rows)
    document, body, outside = await _cpu(large, lambda: _document_and_body(discipline, rows))
    written = Written(discipline, document, body)
    await events.record(session, organization_id=org_id, type="discipline.created", data=outside)
    after = audited(discipline, *_counts(rows), audited_checks(rows.tasks))
    await audit.record_on(session, "discipline", discipline, "discipline.created", after=after)
    await bump_for(session, org_id)
    return written


def _check_read_only_fields(discipline: Discipline, data: schemas.DisciplineReplace) -> None:
    errors = []
    if data.id is not None and data.id != discipline.id:
        errors.append(FieldError(field="Id", message="Id must be this discipline's id."))
    if "organization_id" in data.model_fields_set and data.organization_id != (
        discipline.organization_id
    ):
        errors.append(
            FieldError(
                field="OrganizationId",
                message="A discipline cannot move to another organization; send its own "
                "OrganizationId or leave it out.",
            )
        )
    if errors:
        raise Unprocessable("Some read-only fields differ from the discipline's.", errors=errors)


async def replace_discipline(
    session: AsyncSession,
    *,
    discipline: Discipline,
    data: schemas.DisciplineReplace,
    if_match: str | None,
    force: bool,
    settings: Settings,
    tasks_removed: TasksRemovedHook,
) -> Written:
    """Replace the document; nodes sent with their ``Id`` keep their identity.

    Tasks left out are offered to the progress domain first (``tasks_removed``,
    ``tasks_removed_of``), which refuses (409) when teams completed them unless
    ``force``.
    """
    check_if_match(discipline, if_match)
    _check_read_only_fields(discipline, data)
    known = await tree.known_ids(session, discipline.id)
    checks_before = await tree.task_checks(session, discipline.id)
    stored = tree.stored_answers(checks_before)
    large = node_count(data) > LARGE_TREE_NODES
    keys = answer_keys(settings, discipline.organization_id)
    rows = await _cpu(
        large,
        lambda: tree.flatten(
            data, discipline_id=discipline.id, known=known, keys=keys, stored=stored
        ),
    )
    before_checks = audited_checks(checks_before)
    before = audited(discipline, len(known.of(Level)), len(known.of(Task)), before_checks)
    removed_tasks = tree.removed_ids(rows, known, Task)
    if removed_tasks:
        await tasks_removed(
            session, discipline_id=discipline.id, task_ids=sorted(removed_tasks), force=force
        )
    await tree.replace_rows(session, rows, known)
    discipline.title = data.title
    discipline.description = data.description
    discipline.color = data.color
    discipline.sequential = data.sequential
    discipline.updated_at = utcnow()
    await session.flush()  # bumps the version (the ETag)
    document, body, outside = await _cpu(large, lambda: _document_and_body(discipline, rows))
    await events.record(
        session,
        organization_id=discipline.organization_id,
        type="discipline.updated",
        data=outside,
    )
    after = audited(discipline, *_counts(rows), audited_checks(rows.tasks))
    await audit.record_on(
        session, "discipline", discipline, "discipline.replaced", before=before, after=after
    )
    await bump_for(session, discipline.organization_id)
    return Written(discipline, document, body)


async def delete_discipline(
    session: AsyncSession,
    *,
    discipline: Discipline,
    if_match: str | None,
    force: bool,
    tasks_removed: TasksRemovedHook,
) -> None:
    check_if_match(discipline, if_match)
    document = await read_tree(session, discipline, Audience.OUTSIDE)
    await events.record(
        session,
        organization_id=discipline.organization_id,
        type="discipline.deleted",
        data=document,
    )
    task_ids = (
        await session.scalars(select(Task.id).where(Task.discipline_id == discipline.id))
    ).all()
    before = audited(discipline, len(document.levels), len(task_ids))
    await audit.record_on(
        session, "discipline", discipline, "discipline.deleted", before={**before, "Forced": force}
    )
    if task_ids:
        await tasks_removed(
            session, discipline_id=discipline.id, task_ids=list(task_ids), force=force
        )
    await session.delete(discipline)
    await session.flush()
    await bump_for(session, discipline.organization_id)
