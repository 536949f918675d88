"""Bumping an organization's read-model version inside a write transaction.

Every write that changes what the read model serves calls ``bump(session, org_id)``
once, as late as it can in its transaction (the increment locks the organization's
version row until the commit, so keeping it last keeps that lock short and the lock
order the same everywhere). The row orders an organization's versions like its commits.

The versions bumped are recorded on the session; ``Database`` hands them to the read
model right after the commit (read-your-writes in the writer's process), see
``questline.storage.db.Database.on_commit``, and on PostgreSQL to the process's
notifier, which sends ``pg_notify('questline_changes', '<org>:<version>')`` (with what
the versions moved, ``questline.storage.notify.payload``) on its own
connection right after the commit — never inside the write transaction, where NOTIFY's
database-wide commit lock would serialize every write (``questline.storage.notify``).
A rolled-back transaction announces nothing.
"""

from __future__ import annotations

import uuid
from typing import Any, cast

from sqlalchemy import Table, literal, select, true
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from questline.organizations.models import Organization
from questline.readmodel.models import ReadModelVersion
from questline.storage.db import COMMIT_MOVED_KEY, COMMIT_NOTES_KEY
from questline.storage.notify import ALL, CHANNEL

__all__ = [
    "ALL",
    "BUMPS_KEY",
    "CHANNEL",
    "bump",
    "bump_all",
    "bump_sql",
    "note_bump",
    "read_version",
]
BUMPS_KEY = COMMIT_NOTES_KEY
"""``session.info`` key: ``{org_id: version}`` bumped in the current transaction; the
key ``None`` means every organization."""

_versions = cast(Table, ReadModelVersion.__table__)
_organizations = cast(Table, Organization.__table__)


def _insert(dialect: str) -> Any:
    return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(_versions)


async def bump(
    session: AsyncSession, organization_id: uuid.UUID, moved: frozenset[str] | None = None
) -> int:
    """One more version for the organization, in the session's transaction; returns it.
    ``moved``: all that the transaction changed of what the read model serves, when the
    writer can say it exactly (``questline.readmodel.moved``; by default: anything)."""
    dialect = session.get_bind().dialect.name
    upsert = _insert(dialect).values(organization_id=organization_id, version=1)
    upsert = upsert.on_conflict_do_update(
        index_elements=[_versions.c.organization_id],
        set_={"version": _versions.c.version + 1},
    ).returning(_versions.c.version)
    version = int((await session.execute(upsert)).scalar_one())
    note_bump(session, organization_id, version, moved)
    return version


def note_bump(
    session: AsyncSession,
    organization_id: uuid.UUID,
    version: int,
    moved: frozenset[str] | None = None,
) -> None:
    """Record a version bumped by a statement of the caller's own (the progress writes
    bump inside one statement): handed to the read model right after the commit. With
    ``moved``, the write says exactly what it changed (``questline.readmodel.moved``);
    one bump of the transaction that does not say it makes the whole version "anything"."""
    bumps: dict[uuid.UUID | None, int] = session.info.setdefault(BUMPS_KEY, {})
    bumps[organization_id] = max(bumps.get(organization_id, 0), version)
    said: dict[uuid.UUID, frozenset[str] | None] = session.info.setdefault(COMMIT_MOVED_KEY, {})
    if moved is None or (organization_id in said and said[organization_id] is None):
        said[organization_id] = None
    else:
        said[organization_id] = (said.get(organization_id) or frozenset()) | moved


def bump_sql(dialect: str, *, organizations: str = "", when: str = "true") -> str:
    """``bump`` as hand SQL, for writes that run their own statements (the progress
    ledger); the only place that SQL is written. Returns ``organization_id, version``.

    PostgreSQL: one more version for each organization of the ``uuid[]``
    ``organizations`` (a parameter such as ``$7``) when ``when`` holds, in organization
    order (the lock order); usable last in a statement whose other changes it follows.
    SQLite: one organization, its id the one parameter. The caller records the versions
    with ``note_bump`` (a session) or hands them to ``Database.committed`` after its
    own commit.
    """
    if dialect == "sqlite":
        return (
            "INSERT INTO readmodel_versions (organization_id, version) VALUES (?, 1) "
            "ON CONFLICT (organization_id) DO UPDATE SET version = version + 1 "
            "RETURNING organization_id, version"
        )
    return f"""INSERT INTO readmodel_versions (organization_id, version)
SELECT org, 1 FROM unnest(CAST({organizations} AS uuid[])) AS org
WHERE {when}
ORDER BY org
ON CONFLICT (organization_id) DO UPDATE SET version = readmodel_versions.version + 1
RETURNING organization_id, version"""


async def bump_all(session: AsyncSession) -> None:
    """One more version for every organization: a change to a global discipline."""
    dialect = session.get_bind().dialect.name
    # In organization order: two changes to global disciplines lock the version rows in
    # the same order (the global lock order of docs/reliability.md), never a deadlock.
    rows = select(_organizations.c.id, literal(1)).where(true()).order_by(_organizations.c.id)
    upsert = (
        _insert(dialect)
        .from_select(["organization_id", "version"], rows)
        .on_conflict_do_update(
            index_elements=[_versions.c.organization_id],
            set_={"version": _versions.c.version + 1},
        )
    )
    await session.execute(upsert)
    session.info.setdefault(BUMPS_KEY, {})[None] = 0


async def read_version(session: AsyncSession, organization_id: uuid.UUID) -> int:
    found = await session.scalar(
        select(_versions.c.version).where(_versions.c.organization_id == organization_id)
    )
    return int(found or 0)
