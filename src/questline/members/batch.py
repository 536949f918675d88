"""Members many at a time: set-based checks and find-or-create for bulk team creation."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.batching import in_list_chunks, insert_rows
from questline.db import new_id, utcnow
from questline.members.models import Member
from questline.members.service import email_key


@dataclass(frozen=True, slots=True)
class Person:
    """Who to find or create: an e-mail address and the given name for a new member."""

    email: str
    given_name: str


async def existing_member_ids(
    session: AsyncSession, *, org_id: uuid.UUID, member_ids: Collection[uuid.UUID]
) -> set[uuid.UUID]:
    """Which of these ids name members of the organization (one query a chunk)."""
    found: set[uuid.UUID] = set()
    for chunk in in_list_chunks(sorted(member_ids)):
        found.update(
            await session.scalars(
                select(Member.id).where(Member.organization_id == org_id, Member.id.in_(chunk))
            )
        )
    return found


async def find_or_create_many(
    session: AsyncSession, *, org_id: uuid.UUID, people: Sequence[Person]
) -> dict[str, uuid.UUID]:
    """Each person's member id, keyed by lower-cased e-mail; new addresses become members.

    One multi-row ``INSERT … ON CONFLICT (organization_id, email_key) DO NOTHING`` a
    chunk, then one ``SELECT`` a chunk to learn every id, the existing ones included.
    An existing member keeps its given name. Safe under concurrency: a member created
    meanwhile by another request is found, not duplicated.
    """
    if not people:
        return {}
    now = utcnow()
    by_key: dict[str, Person] = {}
    for person in people:
        by_key.setdefault(email_key(person.email), person)
    await insert_rows(
        session,
        Member.__table__,  # type: ignore[arg-type]
        [
            {
                "organization_id": org_id,
                "id": new_id(),
                "email": person.email.strip(),
                "email_key": key,
                "given_name": person.given_name,
                "created_at": now,
            }
            for key, person in by_key.items()
        ],
        ignore_conflicts_on=("organization_id", "email_key"),
    )
    ids: dict[str, uuid.UUID] = {}
    for chunk in in_list_chunks(list(by_key)):
        rows = await session.execute(
            select(Member.email_key, Member.id).where(
                Member.organization_id == org_id, Member.email_key.in_(chunk)
            )
        )
        for key, member_id in rows:
            ids[key] = member_id
    return ids
