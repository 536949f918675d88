"""Set-based SQL for many rows at once, within the drivers' bind-parameter limits.

SQLite accepts at most 32,766 bound parameters a statement and asyncpg 32,767; a
statement over the limit fails. Multi-row INSERTs are cut into chunks that stay under
``MAX_BIND_PARAMS``; a test against a set of values (``column IN …``) binds the whole
set as one parameter (``= ANY(array)`` on PostgreSQL, ``IN (SELECT value FROM
json_each(…))`` on SQLite), so it needs no chunking and no per-value placeholder.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import (
    ColumnElement,
    Select,
    Table,
    bindparam,
    func,
    insert,
    literal_column,
    select,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import QueryableAttribute

from questline.storage.db import insert_ignoring_conflicts

T = TypeVar("T")

MAX_BIND_PARAMS = 32_000
"""Below SQLite's 32,766 and asyncpg's 32,767, leaving room for a statement's own."""


def chunked(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    if size < 1:
        raise ValueError("chunk size must be at least 1")
    for start in range(0, len(items), size):
        yield items[start : start + size]


def one_of(
    session: AsyncSession,
    attribute: ColumnElement[Any] | QueryableAttribute[Any],
    values: Sequence[Any],
) -> ColumnElement[bool]:
    """``column`` is one of ``values``, with the whole set bound as one parameter."""
    column = attribute.expression if isinstance(attribute, QueryableAttribute) else attribute
    dialect = session.get_bind().dialect
    if dialect.name == "postgresql":
        array = bindparam(None, list(values), type_=postgresql.ARRAY(column.type))
        return column == func.any(array)
    # SQLite: a JSON array of the values as the column stores them (its type's own
    # conversion, e.g. a UUID as 32 hex digits), unpacked by json_each.
    convert = column.type.bind_processor(dialect)
    stored = [convert(v) for v in values] if convert is not None else list(values)
    members: Select[Any] = select(literal_column("value")).select_from(
        func.json_each(json.dumps(stored))
    )
    return column.in_(members)


def rows_per_insert(columns: int) -> int:
    return max(1, MAX_BIND_PARAMS // columns)


async def insert_rows(
    session: AsyncSession,
    table: Table,
    rows: Sequence[Mapping[str, Any]],
    *,
    ignore_conflicts_on: Sequence[str] | None = None,
    returning: str | None = None,
) -> set[Any]:
    """Insert ``rows`` with one multi-row ``INSERT … VALUES`` a chunk.

    Every row must give the same columns. The statement is executed with a parameter
    list, which SQLAlchemy renders as ``INSERT … VALUES (…), (…), …`` pages from one
    cached compiled form (its "insertmanyvalues" mode, engaged by ``RETURNING``); the
    page size is the chunk size, so each chunk is one statement and one round trip.
    ``ignore_conflicts_on`` adds ``ON CONFLICT (cols) DO NOTHING``. Returns the values
    of the ``returning`` column of the rows actually inserted (empty without it).
    """
    if not rows:
        return set()
    column = table.c[returning] if returning else next(iter(table.primary_key.columns))
    inserted: set[Any] = set()
    for chunk in chunked(rows, rows_per_insert(len(rows[0]))):
        statement = (
            insert(table)
            if ignore_conflicts_on is None
            else insert_ignoring_conflicts(session, table, ignore_conflicts_on)
        )
        statement = statement.returning(column).execution_options(
            insertmanyvalues_page_size=len(chunk)
        )
        result = await session.execute(statement, list(chunk))
        if returning:
            inserted.update(result.scalars())
    return inserted
