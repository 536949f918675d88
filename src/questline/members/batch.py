"""Members many at a time: set-based checks and find-or-create for bulk team creation."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.members.models import Member
from questline.members.service import email_key
from questline.storage.batching import insert_rows, one_of
from questline.storage.db import new_id, utcnow


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

    One multi-row ``INSERT … ON CONFLICT (organization_id, email_key) DO NOTHING
    RETURNING email_key`` a chunk: the rows it inserted have the ids we gave them; one
    ``SELECT`` reads the ids of the others (members that existed, or that a concurrent
    request created meanwhile: found, not duplicated). An existing member keeps its
    given name.
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
    inserted = await insert_rows(
        session,
        Member.__table__,  # type: ignore[arg-type]
        list(rows.values()),
        ignore_conflicts_on=("organization_id", "email_key"),
        returning="email_key",
    )
    ids = {key: row["id"] for key, row in rows.items() if key in inserted}
    others = [key for key in rows if key not in inserted]
    if others:
        found = await session.execute(
            select(Member.email_key, Member.id).where(
                Member.organization_id == org_id, one_of(session, Member.email_key, others)
            )
        )
        for key, member_id in found:
            ids[key] = member_id
    return ids
