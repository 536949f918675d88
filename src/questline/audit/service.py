"""Writing and reading the audit log.

A write service records its entry with one call, in its own transaction, as late as
it knows what changed::

    await audit.record(session, organization_id=org_id, action="team.renamed",
                       target=("team", team.id), before={"Name": old}, after={"Name": new})

The actor is the caller of the request whose transaction ``session`` is (the
transactional route notes it on the session: ``web.identity.ACTING_CALLER``), or
``system`` when there is none (the command line, the demo loader); the request id is
the one ``asgi-correlation-id`` gave the request (``X-Request-Id``). The entry is
inserted at once, in the session's transaction: a rolled-back change leaves none, and
a committed change cannot lack it.

Secrets never reach the log: a field whose name says secret, token or password is
dropped from ``before``/``after`` whatever the caller passes.
"""

from __future__ import annotations

import datetime as dt
import enum
import functools
import logging
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from asgi_correlation_id import correlation_id
from pydantic import BaseModel
from sqlalchemy import Table, delete, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.audit.models import PLATFORM_ORG, AuditEntry
from questline.config import Settings
from questline.storage.db import Database, new_id, utcnow
from questline.storage.many_rows import write_rows
from questline.storage.purging import purge_every
from questline.timeformat import rfc3339
from questline.web.identity import ACTING_CALLER, Caller, Via
from questline.web.pagination import PageRequest, keyset_page, time_then_id

log = logging.getLogger(__name__)

_entries = cast(Table, AuditEntry.__table__)
SECRET_NAMES = re.compile(r"secret|token|password|csrf", re.IGNORECASE)
Target = tuple[str, uuid.UUID | str | None]
"""``(type, id)`` of what changed: ``("team", team.id)``."""


_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})
"""Exact types that are JSON already (not their subclasses: a ``StrEnum`` goes by value)."""


@functools.lru_cache(maxsize=1024)
def _is_secret(name: str) -> bool:
    return SECRET_NAMES.search(name) is not None


def plain(value: Any) -> Any:
    """A value as JSON: ids as text, times as RFC 3339 UTC, enums by value."""
    kind = type(value)
    if kind in _JSON_SCALARS:
        return value  # first: a bulk import's entries are mostly names and ids
    if kind is list:  # exact types before the ABC checks below, which cost more
        return [plain(v) for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, BaseModel):
        return plain(value.model_dump(mode="json", by_alias=True))
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items() if not _is_secret(str(k))}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if isinstance(value, dt.datetime):
        return rfc3339(value)
    return value


def _fields(values: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    """``values``' fields as JSON, secrets left out (``plain`` of a mapping, as pairs)."""
    if not values:
        return []
    return [(str(k), plain(v)) for k, v in values.items() if not _is_secret(str(k))]


def changes_of(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None
) -> dict[str, dict[str, Any]]:
    """``{field: {"Before", "After"}}`` for every field that differs (a creation: every
    field of ``after``; a deletion: every field of ``before``); secrets left out."""
    if before is None:  # a creation (a bulk import's thousands): every field, at once
        return {name: {"Before": None, "After": value} for name, value in _fields(after)}
    old, new = plain(dict(before)), plain(dict(after or {}))
    found: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys([*old, *new]):
        if after is not None and old.get(name) == new.get(name):
            continue
        found[name] = {"Before": old.get(name), "After": new.get(name)}
    return found


def _actor(session: AsyncSession) -> tuple[str, str | None, str]:
    caller: Caller | None = session.info.get(ACTING_CALLER)
    if caller is None:
        return "system", None, Via.SYSTEM.value
    return caller.subject[:255], caller.role.value, caller.via.value


@dataclass(frozen=True, slots=True)
class Change:
    """One entry of ``record_many``."""

    action: str
    target: Target
    before: Mapping[str, Any] | None = None
    after: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class _Context:
    """What every entry of one transaction shares: who acts, in which request, when."""

    actor: str
    role: str | None
    via: str
    request_id: str | None
    at: dt.datetime

    @classmethod
    def of(cls, session: AsyncSession) -> _Context:
        actor, role, via = _actor(session)
        request_id = correlation_id.get()
        return cls(actor, role, via, request_id[:64] if request_id else None, utcnow())


_OWN_COLUMNS = ("id", "action", "target_type", "target_id", "changes")
"""The columns each entry has of its own; the rest (``_shared``) is the transaction's."""


def _shared(organization_id: uuid.UUID | None, context: _Context) -> dict[str, Any]:
    return {
        "organization_id": organization_id or PLATFORM_ORG,
        "at": context.at,
        "actor": context.actor,
        "actor_role": context.role,
        "actor_via": context.via,
        "request_id": context.request_id,
    }


def _own(change: Change) -> tuple[Any, ...]:
    target_type, target_id = change.target
    target = None if target_id is None else str(target_id)
    return (new_id(), change.action, target_type, target, changes_of(change.before, change.after))


async def record(
    session: AsyncSession,
    *,
    organization_id: uuid.UUID | None,
    action: str,
    target: Target,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
) -> None:
    """Append one entry in ``session``'s transaction (``organization_id=None``: a
    global change, outside every organization)."""
    own = _own(Change(action, target, before, after))
    mine = dict(zip(_OWN_COLUMNS, own, strict=True))
    row = {**_shared(organization_id, _Context.of(session)), **mine}
    await session.execute(insert(_entries).values(**row))


class Owned(Protocol):
    """A row of one organization (``None``: a global one) with an id of its own."""

    @property
    def organization_id(self) -> uuid.UUID | None: ...

    @property
    def id(self) -> uuid.UUID: ...


async def record_on(
    session: AsyncSession,
    kind: str,
    row: Owned,
    action: str,
    *,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
) -> None:
    """``record`` an entry whose target is ``row`` (``(kind, row.id)``), in the
    organization the row belongs to: a change to a row is logged where the row lives."""
    await record(
        session,
        organization_id=row.organization_id,
        action=action,
        target=(kind, row.id),
        before=before,
        after=after,
    )


async def record_many(
    session: AsyncSession, *, organization_id: uuid.UUID | None, changes: Sequence[Change]
) -> None:
    """Append many entries in one statement (a bulk import's teams): the shared columns
    converted once, each entry's own as a plain tuple."""
    if not changes:
        return
    await write_rows(
        session,
        _entries,
        _OWN_COLUMNS,
        [_own(change) for change in changes],
        same=_shared(organization_id, _Context.of(session)),
    )


@dataclass(frozen=True, slots=True)
class Filters:
    actor: str | None = None
    action: str | None = None
    target: str | None = None
    start: dt.datetime | None = None
    end: dt.datetime | None = None


async def list_entries(
    session: AsyncSession, *, org_id: uuid.UUID, filters: Filters, page: PageRequest
) -> list[AuditEntry]:
    """The organization's entries, newest first (keyset paging on ``at``, ``id``)."""
    query = select(AuditEntry).where(AuditEntry.organization_id == org_id)
    if filters.actor is not None:
        query = query.where(AuditEntry.actor == filters.actor)
    if filters.action is not None:
        query = query.where(AuditEntry.action == filters.action)
    if filters.target is not None:
        query = query.where(AuditEntry.target_id == filters.target.lower())
    if filters.start is not None:
        query = query.where(AuditEntry.at >= filters.start)
    if filters.end is not None:
        query = query.where(AuditEntry.at <= filters.end)
    query = keyset_page(query, page, *time_then_id(AuditEntry.at, AuditEntry.id), descending=True)
    return list((await session.scalars(query)).all())


def cursor_of(entry: AuditEntry) -> list[str]:
    return [entry.at.isoformat(), str(entry.id)]


async def purge_expired(session: AsyncSession, *, older_than: dt.datetime) -> int:
    """Delete the entries recorded before ``older_than`` (the retention's horizon)."""
    result = await session.execute(delete(AuditEntry).where(AuditEntry.at < older_than))
    return int(getattr(result, "rowcount", 0) or 0)


async def purge_periodically(db: Database, settings: Settings) -> None:
    """Delete entries older than ``QUESTLINE_AUDIT_RETENTION_DAYS`` every
    ``QUESTLINE_AUDIT_PURGE_INTERVAL_SECONDS`` (each process; the deletes are
    idempotent). Started by the application's lifespan, like the idempotency purge."""

    async def purge(session: AsyncSession) -> int:
        horizon = utcnow() - dt.timedelta(days=settings.audit_retention_days)
        return await purge_expired(session, older_than=horizon)

    await purge_every(
        db,
        settings.audit_purge_interval_seconds,
        purge,
        log=log,
        name="audit",
        purged_message="purged %s audit entries past their retention",
    )
