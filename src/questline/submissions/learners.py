"""What submissions need from the learners' rules that is not there yet: whether a
task's level is open for the team (sequential disciplines).

SEAM: a stand-in until the sequential locks land; at the merge it calls theirs.
"""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncSession


async def ensure_open(
    session: AsyncSession, *, org_id: uuid.UUID, team_id: uuid.UUID, task_id: uuid.UUID
) -> None:
    """409 (``locked``) when the task's level is closed for the team."""
    del session, org_id, team_id, task_id
