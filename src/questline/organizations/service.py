from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit
from questline.organizations.models import Organization
from questline.storage.db import insert_ignoring_conflicts, utcnow
from questline.web.errors import not_found


async def ensure_organization(session: AsyncSession, org_id: uuid.UUID) -> None:
    """Create the organization row on first sight (idempotent and race-free)."""
    statement = insert_ignoring_conflicts(session, Organization.__table__, ["id"]).values(
        id=org_id, created_at=utcnow()
    )
    await session.execute(statement)


async def get_organization(session: AsyncSession, org_id: uuid.UUID) -> Organization:
    """The organization's row (authentication records it before any request reaches a
    route: ``auth.authentication.Identity``)."""
    row = await session.get(Organization, org_id)
    if row is None:
        raise not_found("organization")
    return row


async def rename_organization(
    session: AsyncSession, org_id: uuid.UUID, name: str | None
) -> Organization:
    await ensure_organization(session, org_id)
    row = await get_organization(session, org_id)
    before = {"Name": row.name}
    row.name = name
    await session.flush()
    await audit.record(
        session,
        organization_id=org_id,
        action="organization.renamed",
        target=("organization", org_id),
        before=before,
        after={"Name": name},
    )
    return row
