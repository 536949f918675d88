"""Helpers on the test databases that more than one test module needs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from questline.models import Base
from tests.support.harness import AppHarness


async def empty_all_tables(state: AppHarness) -> None:
    """Delete every row of every table (the schema stays at head)."""
    tables = [t.name for t in Base.metadata.sorted_tables]
    owner_url = state.settings.database_owner_url
    # Under row-level security the service's role may not empty tables: the owner does.
    engine = create_async_engine(owner_url, poolclass=NullPool) if owner_url else state.db.engine
    try:
        await _empty(engine, tables, sqlite=state.db.is_sqlite)
    finally:
        if owner_url:
            await engine.dispose()
    state.known_orgs.clear()


@asynccontextmanager
async def as_owner(state: AppHarness) -> AsyncIterator[AsyncEngine]:
    """An engine of the tables' owner, whom row-level security does not bind: for a
    test's setup that writes (or reads) several organizations' rows directly. Without a
    separate owner (no row security) the service's own engine."""
    owner_url = state.settings.database_owner_url
    if not owner_url:
        yield state.db.engine
        return
    engine = create_async_engine(owner_url, poolclass=NullPool)
    try:
        yield engine
    finally:
        await engine.dispose()


async def _empty(engine: AsyncEngine, tables: list[str], *, sqlite: bool) -> None:
    async with engine.begin() as connection:
        if sqlite:
            for name in reversed(tables):
                await connection.execute(text(f'DELETE FROM "{name}"'))
        else:
            # One round trip of DELETEs: a test leaves a few rows, and TRUNCATE of every
            # table (a new file for each) costs several times as much as deleting them.
            deletes = " ".join(f'DELETE FROM "{name}";' for name in reversed(tables))
            await connection.execute(text(f"DO $$BEGIN {deletes} END$$"))
