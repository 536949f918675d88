"""Progress writes without a session: what the write fast path calls.

``complete`` and ``withdraw`` either do the whole write and return what the route would
have answered, or return ``None`` — nothing was written, the ordinary route decides
(every refusal: unknown team or task, archived team, a future ``CompletedAt``; and a
backend that cannot be reached directly).

This first version runs the route's own service in a session of its own; the direct
statements replace it (see ``questline.progress.record`` for the rules they keep).
"""

from __future__ import annotations

import uuid

from questline.progress import record, schemas
from questline.storage.db import Database
from questline.web.errors import Problem


def available(db: Database) -> bool:
    """Whether writes may take this path (replicas route through the request boundary)."""
    return not db.replicas.enabled


async def complete(
    db: Database, *, org_id: uuid.UUID, team_id: uuid.UUID, data: schemas.ProgressCreate
) -> record.Recorded | None:
    """Record the completion (``created``) or find it already recorded; ``None``: the
    route answers (a refusal, nothing written)."""
    try:
        async with db.session(write=True) as session:
            return await record.complete(session, org_id=org_id, team_id=team_id, data=data)
    except Problem:
        return None


async def withdraw(
    db: Database, *, org_id: uuid.UUID, team_id: uuid.UUID, task_id: uuid.UUID
) -> schemas.Completion | None:
    """Withdraw the completion; ``None``: the route answers (nothing written)."""
    try:
        async with db.session(write=True) as session:
            return await record.withdraw(session, org_id=org_id, team_id=team_id, task_id=task_id)
    except Problem:
        return None
