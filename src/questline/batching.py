"""Set-based SQL for many rows at once, within the drivers' bind-parameter limits.

SQLite accepts at most 32,766 bound parameters a statement and asyncpg 32,767; a
statement over the limit fails. Every multi-row INSERT and every ``IN (…)`` list of
the bulk paths is cut into chunks that stay under ``MAX_BIND_PARAMS``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import Table, insert
from sqlalchemy.ext.asyncio import AsyncSession

from questline.db import insert_ignoring_conflicts

T = TypeVar("T")

MAX_BIND_PARAMS = 32_000
"""Below SQLite's 32,766 and asyncpg's 32,767, leaving room for a statement's own."""


def chunked(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    if size < 1:
        raise ValueError("chunk size must be at least 1")
    for start in range(0, len(items), size):
        yield items[start : start + size]


def in_list_chunks(items: Sequence[T], *, other_params: int = 1) -> Iterator[Sequence[T]]:
    """Chunks for ``column IN (…)`` in a statement that binds ``other_params`` more."""
    return chunked(items, MAX_BIND_PARAMS - other_params)


def rows_per_insert(columns: int) -> int:
    return max(1, MAX_BIND_PARAMS // columns)


async def insert_rows(
    session: AsyncSession,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    *,
    ignore_conflicts_on: Sequence[str] | None = None,
) -> int:
    """Insert ``rows`` with one multi-row ``INSERT … VALUES`` a chunk; returns the chunks.

    Every row must give the same columns. The statement is executed with a parameter
    list, which SQLAlchemy renders as one ``INSERT … VALUES (…), (…), …`` page from a
    cached compiled form (its "insertmanyvalues" mode, engaged by ``RETURNING``);
    the page size is the chunk size, so each chunk is one statement and one round trip.
    ``ignore_conflicts_on`` adds ``ON CONFLICT (cols) DO NOTHING``.
    """
    if not rows:
        return 0
    key = next(iter(table.primary_key.columns))
    statements = 0
    for chunk in chunked(rows, rows_per_insert(len(rows[0]))):
        statement = (
            insert(table)
            if ignore_conflicts_on is None
            else insert_ignoring_conflicts(session, table, ignore_conflicts_on)
        )
        statement = statement.returning(key).execution_options(
            insertmanyvalues_page_size=len(chunk)
        )
        await session.execute(statement, list(chunk))
        statements += 1
    return statements
