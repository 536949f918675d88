"""Helpers on the test databases that more than one test module needs."""

from __future__ import annotations

from sqlalchemy import text

from questline.models import Base
from tests.support.harness import AppHarness


async def empty_all_tables(state: AppHarness) -> None:
    """Delete every row of every table (the schema stays at head)."""
    tables = [t.name for t in Base.metadata.sorted_tables]
    async with state.db.engine.begin() as connection:
        if state.db.is_sqlite:
            for name in reversed(tables):
                await connection.execute(text(f'DELETE FROM "{name}"'))
        else:
            joined = ", ".join(f'"{n}"' for n in tables)
            await connection.execute(text(f"TRUNCATE {joined} CASCADE"))
    state.known_orgs.clear()
