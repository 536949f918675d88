"""Deleting expired rows: the loop that does it in the background (audit entries past
their retention, expired idempotency records), and the rule of what has expired.

Each process runs its own loops (the deletes are idempotent); a failed pass, most often
the database being down, is logged and tried again at the next interval.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import QueryableAttribute

from questline.storage import tenancy
from questline.storage.db import Database, utcnow


async def purge_every(
    db: Database,
    interval_seconds: float,
    purge: Callable[[AsyncSession], Awaitable[int]],
    *,
    log: logging.Logger,
    name: str,
    purged_message: str,
) -> None:
    """Run ``purge`` in a write transaction of its own every ``interval_seconds``, over
    every organization's rows; ``purged_message`` (one ``%s``: the count) is logged
    when it deleted any, ``"<name> purge failed"`` when it failed."""
    while True:
        try:
            with tenancy.for_every_organization():  # every organization's expired rows
                async with db.session(write=True) as session:
                    purged = await purge(session)
            if purged:
                log.info(purged_message, purged)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the database is down: try again next time
            log.warning("%s purge failed: %s", name, type(exc).__name__)
        await asyncio.sleep(interval_seconds)


async def delete_expired(session: AsyncSession, *expiries: QueryableAttribute[dt.datetime]) -> None:
    """Delete the rows whose expiry (``Model.expires_at``) is now or past, one table
    after the other: a row is spent at the instant it expires."""
    now = utcnow()
    for expires_at in expiries:
        await session.execute(delete(expires_at.class_).where(expires_at <= now))
