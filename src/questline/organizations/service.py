from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession

from questline.organizations.models import Organization
from questline.storage.db import insert_ignoring_conflicts, utcnow


async def ensure_organization(session: AsyncSession, org_id: uuid.UUID) -> None:
    """Create the organization row on first sight (idempotent and race-free)."""
    statement = insert_ignoring_conflicts(session, Organization.__table__, ["id"]).values(
        id=org_id, created_at=utcnow()
    )
    await session.execute(statement)
