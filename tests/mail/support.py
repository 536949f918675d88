"""Helpers of the e-mail tests: the sender run to completion in the test's loop, and the
outbox read back."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import func, select

from questline.config import Settings
from questline.mail.dispatcher import Postman
from questline.mail.models import MailJob, MailStatus
from questline.storage import tenancy
from questline.storage.db import Database
from tests.support.harness import AppHarness


async def deliver(
    state: AppHarness, *, settings: Settings | None = None, passes: int = 200
) -> None:
    """Run sender passes until nothing queued is due or pending (retries included)."""
    postman = Postman(settings or state.settings, state.db)
    try:
        for _ in range(passes):
            await postman.run_once()
            await postman.settle()  # the pass starts the sends; wait for them here
            if await pending(state.db) == 0:
                return
            await asyncio.sleep(0.02)
        raise AssertionError("mail still pending after every pass")
    finally:
        await postman.close()


async def pending(db: Database) -> int:
    # Every organization's mail, as the sender sees it (row-level security).
    with tenancy.for_every_organization():
        async with db.session(write=False) as session:
            count = await session.scalar(
                select(func.count()).where(MailJob.status == MailStatus.PENDING)
            )
    return int(count or 0)


async def outbox(db: Database) -> list[dict[str, Any]]:
    with tenancy.for_every_organization():
        return await _outbox(db)


async def _outbox(db: Database) -> list[dict[str, Any]]:
    async with db.session(write=False) as session:
        rows = (await session.scalars(select(MailJob).order_by(MailJob.created_at))).all()
        return [
            {
                "kind": row.kind.value,
                "email": row.email,
                "status": row.status.value,
                "attempts": row.attempts,
                "error": row.last_error,
            }
            for row in rows
        ]
