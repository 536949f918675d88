"""Set-based SQL for many rows at once: a constant number of statements, whatever the
number of rows, and no driver's bind-parameter limit (SQLite 32,766, asyncpg 32,767).

``write_rows`` is the fastest plain write of many new rows: PostgreSQL's binary ``COPY``
(one statement) and SQLite's ``executemany`` (one prepared statement run for every row,
each with its own few parameters). A test against a set of values (``column IN …``)
binds the whole set as one parameter (``= ANY(array)`` on PostgreSQL, ``IN (SELECT
value FROM json_each(…))`` on SQLite), so it needs no chunking and no per-value
placeholder.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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


async def write_rows(
    session: AsyncSession,
    table: Table,
    columns: Sequence[str],
    rows: Sequence[tuple[Any, ...]],
    *,
    same: Mapping[str, Any] | None = None,
) -> None:
    """Insert ``rows`` (tuples of the ``columns``' values, plus the values ``same`` for
    every row) in the session's transaction.

    PostgreSQL: one binary ``COPY … FROM STDIN`` on the session's own connection, so the
    rows commit or roll back with everything else; values go through the columns' own
    bind conversions first (JSON as text, enums as their values; the shared values
    once). The statement that asyncpg prepares to learn the column types is unnamed
    when the statement cache is off, so this works behind a transaction pooler
    (pgbouncer) like any other statement. A constraint failure is raised as
    SQLAlchemy's ``IntegrityError`` (409, and the idempotency race handling, as for an
    ``INSERT``); any other database error as ``DBAPIError`` with its SQLSTATE
    (serialization failures and deadlocks are retried).

    SQLite: one ``INSERT`` executed for every row (``executemany``: one prepared
    statement, no statement text built per chunk, no bind-parameter limit).
    """
    if not rows:
        return
    shared = dict(same or {})
    if session.get_bind().dialect.name != "postgresql":
        await session.execute(
            insert(table), [{**shared, **dict(zip(columns, row, strict=True))} for row in rows]
        )
        return
    await _copy(session, table, list(columns), rows, shared)


def _copy_converter(type_: Any, dialect: Any) -> Callable[[Any], Any] | None:
    if isinstance(type_, JSON):
        return _json_text  # what the column's own processor does, with orjson
    processor: Callable[[Any], Any] | None = type_.dialect_impl(dialect).bind_processor(dialect)
    return processor


def _json_text(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


async def _copy(
    session: AsyncSession,
    table: Table,
    columns: list[str],
    rows: Sequence[tuple[Any, ...]],
    shared: dict[str, Any],
) -> None:
    connection = await session.connection()
    dialect = connection.dialect
    constant = tuple(
        value if fn is None else fn(value)
        for value, fn in ((v, _copy_converter(table.c[k].type, dialect)) for k, v in shared.items())
    )
    convert = [_copy_converter(table.c[name].type, dialect) for name in columns]
    if any(convert):
        records = [
            (*(v if fn is None else fn(v) for v, fn in zip(row, convert, strict=True)), *constant)
            for row in rows
        ]
    else:
        records = [row + constant for row in rows]
    raw = (await connection.get_raw_connection()).driver_connection
    if raw is None:  # pragma: no cover - a checked-out connection always has one
        raise RuntimeError("no driver connection")
    if not raw.is_in_transaction():
        # SQLAlchemy's asyncpg adapter begins the transaction with its first statement.
        await session.execute(select(1))
    statement = f"COPY {table.name} FROM STDIN"
    try:
        await raw.copy_records_to_table(table.name, records=records, columns=[*columns, *shared])
    except Exception as exc:
        sqlstate = getattr(exc, "sqlstate", None)
        if sqlstate is None:
            raise
        if str(sqlstate).startswith("23"):  # integrity_constraint_violation
            raise IntegrityError(statement, None, exc) from exc
        raise DBAPIError(statement, None, exc) from exc
