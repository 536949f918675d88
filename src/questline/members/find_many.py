"""Members many at a time: set-based checks and find-or-create for bulk team creation."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Text, Uuid, bindparam, func, select, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncSession

from questline.members.models import Member
from questline.members.service import email_key
from questline.storage.db import UTCDateTime, insert_ignoring_conflicts, new_id, utcnow
from questline.storage.many_rows import one_of


@dataclass(frozen=True, slots=True)
class Person:
    """Who to find or create: an e-mail address and the given name for a new member."""

    email: str
    given_name: str


async def existing_member_ids(
    session: AsyncSession, *, org_id: uuid.UUID, member_ids: Collection[uuid.UUID]
) -> set[uuid.UUID]:
    """Which of these ids name members of the organization.

    One ``count(*)`` answers the usual case (all exist) without sending 30,000 ids back;
    only when some are missing are the found ones read.
    """
    wanted = sorted(set(member_ids))
    if not wanted:
        return set()
    where = (Member.organization_id == org_id, one_of(session, Member.id, wanted))
    if await session.scalar(select(func.count()).select_from(Member).where(*where)) == len(wanted):
        return set(wanted)
    return set(await session.scalars(select(Member.id).where(*where)))


async def find_or_create_many(
    session: AsyncSession, *, org_id: uuid.UUID, people: Sequence[Person]
) -> dict[str, uuid.UUID]:
    """Each person's member id, keyed by lower-cased e-mail; new addresses become members.

    Two statements whatever the number of people: one insert of them all that skips the
    addresses already taken (``ON CONFLICT (organization_id, email_key) DO NOTHING``;
    PostgreSQL: one ``INSERT … SELECT … FROM unnest(arrays)``, SQLite: ``executemany``),
    then one ``SELECT`` of every address's id: ours for the rows inserted, the existing
    member's otherwise (one that existed, or that a concurrent request created
    meanwhile: found, not duplicated). An existing member keeps its given name.
    """
    if not people:
        return {}
    now = utcnow()
    rows: dict[str, dict[str, Any]] = {}
    for person in people:
        key = email_key(person.email)
        if key not in rows:
            rows[key] = {
                "organization_id": org_id,
                "id": new_id(),
                "email": person.email.strip(),
                "email_key": key,
                "given_name": person.given_name,
                "created_at": now,
            }
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(_INSERT_UNNESTED, _as_arrays(org_id, now, rows.values()))
    else:
        statement = insert_ignoring_conflicts(
            session, Member.__table__, ("organization_id", "email_key")
        )
        await session.execute(statement, list(rows.values()))
    found = await session.execute(
        select(Member.email_key, Member.id).where(
            Member.organization_id == org_id, one_of(session, Member.email_key, list(rows))
        )
    )
    return {row[0]: row[1] for row in found}


_INSERT_UNNESTED = text(
    "INSERT INTO members (organization_id, id, email, email_key, given_name, created_at) "
    "SELECT :org_id, u.id, u.email, u.email_key, u.given_name, :now "
    "FROM unnest(:ids, :emails, :keys, :names) AS u(id, email, email_key, given_name) "
    "ON CONFLICT (organization_id, email_key) DO NOTHING"
).bindparams(
    bindparam("org_id", type_=Uuid()),
    bindparam("now", type_=UTCDateTime()),
    bindparam("ids", type_=postgresql.ARRAY(Uuid())),
    bindparam("emails", type_=postgresql.ARRAY(Text())),
    bindparam("keys", type_=postgresql.ARRAY(Text())),
    bindparam("names", type_=postgresql.ARRAY(Text())),
)
"""Every row in one statement with four array parameters (no bind-parameter limit)."""


def _as_arrays(
    org_id: uuid.UUID, now: dt.datetime, rows: Iterable[dict[str, Any]]
) -> dict[str, Any]:
    listed = list(rows)
    return {
        "org_id": org_id,
        "now": now,
        "ids": [row["id"] for row in listed],
        "emails": [row["email"] for row in listed],
        "keys": [row["email_key"] for row in listed],
        "names": [row["given_name"] for row in listed],
    }
