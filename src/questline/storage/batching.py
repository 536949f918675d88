"""Set-based SQL for many rows at once, within the drivers' bind-parameter limits.

``write_rows`` is the fastest plain write of many new rows: PostgreSQL's binary ``COPY``
(one statement, whatever the number of rows) and SQLite's ``executemany`` (one prepared
statement run for every row).

SQLite accepts at most 32,766 bound parameters a statement and asyncpg 32,767; a
statement over the limit fails. Multi-row INSERTs are cut into chunks that stay under
``MAX_BIND_PARAMS``; a test against a set of values (``column IN …``) binds the whole
set as one parameter (``= ANY(array)`` on PostgreSQL, ``IN (SELECT value FROM
json_each(…))`` on SQLite), so it needs no chunking and no per-value placeholder.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import orjson
from sqlalchemy import (
    JSON,
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
from sqlalchemy.exc import DBAPIError, IntegrityError
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


async def write_rows(
    session: AsyncSession, table: Table, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Insert ``rows`` (every one with the same columns) in the session's transaction.

    PostgreSQL: one binary ``COPY … FROM STDIN`` on the session's own connection, so the
    rows commit or roll back with everything else; values go through the columns' own
    bind conversions first (JSON as text, enums as their values). The statement that
    asyncpg prepares to learn the column types is unnamed when the statement cache is
    off, so this works behind a transaction pooler (pgbouncer) like any other statement.
    A constraint failure is raised as SQLAlchemy's ``IntegrityError`` (409, and the
    idempotency race handling, as for an ``INSERT``); any other database error as
    ``DBAPIError`` with its SQLSTATE (serialization failures and deadlocks are retried).

    SQLite: one ``INSERT`` executed for every row (``executemany``: one prepared
    statement, no statement text built per chunk, no bind-parameter limit).
    """
    if not rows:
        return
    if session.get_bind().dialect.name != "postgresql":
        await session.execute(insert(table), list(rows))
        return
    await _copy(session, table, rows)


def _copy_converter(type_: Any, dialect: Any) -> Callable[[Any], Any] | None:
    if isinstance(type_, JSON):
        return _json_text  # what the column's own processor does, with orjson
    processor: Callable[[Any], Any] | None = type_.dialect_impl(dialect).bind_processor(dialect)
    return processor


def _json_text(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


async def _copy(session: AsyncSession, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    columns = list(rows[0])
    connection = await session.connection()
    dialect = connection.dialect
    convert = [_copy_converter(table.c[name].type, dialect) for name in columns]
    if any(convert):
        pairs = list(zip(columns, convert, strict=True))
        records = [
            tuple(row[name] if fn is None else fn(row[name]) for name, fn in pairs) for row in rows
        ]
    else:
        records = [tuple(row[name] for name in columns) for row in rows]
    raw = (await connection.get_raw_connection()).driver_connection
    if raw is None:  # pragma: no cover - a checked-out connection always has one
        raise RuntimeError("no driver connection")
    if not raw.is_in_transaction():
        # SQLAlchemy's asyncpg adapter begins the transaction with its first statement.
        await session.execute(select(1))
    statement = f"COPY {table.name} FROM STDIN"
    try:
        await raw.copy_records_to_table(table.name, records=records, columns=columns)
    except Exception as exc:
        sqlstate = getattr(exc, "sqlstate", None)
        if sqlstate is None:
            raise
        if str(sqlstate).startswith("23"):  # integrity_constraint_violation
            raise IntegrityError(statement, None, exc) from exc
        raise DBAPIError(statement, None, exc) from exc
