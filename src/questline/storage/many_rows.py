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
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NoReturn, TypeVar

from sqlalchemy import (
    JSON,
    ColumnElement,
    Select,
    Table,
    bindparam,
    func,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import QueryableAttribute

from questline.storage.db import json_text
from questline.storage.tenancy import row_security_on

T = TypeVar("T")


def chunked(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """``items`` in consecutive slices of at most ``size``."""
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


async def write_rows(
    session: AsyncSession,
    table: Table,
    columns: Sequence[str],
    rows: Sequence[tuple[Any, ...]],
    *,
    same: Mapping[str, Any] | None = None,
) -> None:
    """Insert ``rows`` (tuples of the ``columns``' values, plus the values ``same`` for
    every row) in the session's transaction, on the session's own connection, so the
    rows commit or roll back with everything else.

    Values go through the columns' own bind conversions first (UUIDs, timestamps, JSON
    as text, enums as their values), the shared values once; then the driver gets plain
    tuples, without SQLAlchemy's per-row parameter handling (most of the cost of a
    1,000-row ``executemany`` through it).

    PostgreSQL: one binary ``COPY … FROM STDIN``. The statement that asyncpg prepares to
    learn the column types is unnamed when the statement cache is off, so this works
    behind a transaction pooler (pgbouncer) like any other statement. With row-level
    security the ``COPY`` goes into a temporary staging table and one ``INSERT …
    SELECT`` moves the rows, so the tenant policy checks each (``_copy_through_staging``).

    SQLite: one ``INSERT`` executed for every row (``executemany``: one prepared
    statement, no bind-parameter limit).

    A constraint failure is raised as SQLAlchemy's ``IntegrityError`` (409, and the
    idempotency race handling, as for an ``INSERT`` through the engine); other database
    errors as ``DBAPIError`` (with PostgreSQL's SQLSTATE: serialization failures and
    deadlocks are retried).
    """
    if not rows:
        return
    connection = await session.connection()
    dialect = connection.dialect
    shared = dict(same or {})
    names = [*columns, *shared]
    records = _records(table, dialect, list(columns), rows, shared)
    raw = (await connection.get_raw_connection()).driver_connection
    if raw is None:  # pragma: no cover - a checked-out connection always has one
        raise RuntimeError("no driver connection")
    if dialect.name == "postgresql":
        if not raw.is_in_transaction():
            # SQLAlchemy's asyncpg adapter begins the transaction with its first statement.
            await session.execute(select(1))
        if row_security_on(session):
            await _copy_through_staging(session, raw, table, names, records)
            return
        statement = f"COPY {table.name} FROM STDIN"
        try:
            await raw.copy_records_to_table(table.name, records=records, columns=names)
        except Exception as exc:
            _raise_as_sqlalchemy(statement, exc)
        return
    if not raw.in_transaction:
        await session.execute(select(1))  # the engine's BEGIN (IMMEDIATE) first
    quote = dialect.identifier_preparer.quote
    statement = (
        f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) "
        f"VALUES ({', '.join('?' for _ in names)})"
    )
    try:
        cursor = await raw.executemany(statement, records)
        await cursor.close()
    except dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(
            statement, None, exc, dialect.loaded_dbapi.Error, dialect=dialect
        ) from exc


STAGING_TABLE = "questline_staging_rows"
"""The temporary table ``write_rows`` copies into under row-level security; it lives
only inside one call (dropped at its end, and with the transaction on failure)."""


async def _copy_through_staging(
    session: AsyncSession,
    raw: Any,
    table: Table,
    names: list[str],
    records: list[tuple[Any, ...]],
) -> None:
    """PostgreSQL refuses ``COPY FROM`` into a table with row-level security for a role
    the policies apply to, so the rows go by ``COPY`` into a temporary table of the
    same columns (no policy: it is this session's own), then in one ``INSERT … SELECT``
    into the target, whose policy checks every row against the acting organization."""
    connection = await session.connection()
    quote = connection.dialect.identifier_preparer.quote
    target = quote(table.name)
    listed = ", ".join(quote(n) for n in names)
    staging = quote(STAGING_TABLE)
    # One name serves every call: a call that completes drops the table, and one that
    # fails fails its transaction (or savepoint), whose rollback drops it too.
    await session.execute(
        text(
            f"CREATE TEMPORARY TABLE {staging} ON COMMIT DROP AS "
            f"SELECT {listed} FROM {target} WITH NO DATA"
        )
    )
    try:
        await raw.copy_records_to_table(STAGING_TABLE, records=records, columns=names)
    except Exception as exc:
        _raise_as_sqlalchemy(f"COPY {STAGING_TABLE} FROM STDIN", exc)
    await session.execute(text(f"INSERT INTO {target} ({listed}) SELECT {listed} FROM {staging}"))
    await session.execute(text(f"DROP TABLE {staging}"))


def _raise_as_sqlalchemy(statement: str, exc: Exception) -> NoReturn:
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate is None:
        raise exc
    if str(sqlstate).startswith("23"):  # integrity_constraint_violation
        raise IntegrityError(statement, None, exc) from exc
    raise DBAPIError(statement, None, exc) from exc


def _records(
    table: Table,
    dialect: Any,
    columns: list[str],
    rows: Sequence[tuple[Any, ...]],
    shared: dict[str, Any],
) -> list[tuple[Any, ...]]:
    constant = tuple(
        value if fn is None else fn(value)
        for value, fn in ((v, _converter(table.c[k].type, dialect)) for k, v in shared.items())
    )
    convert = [_converter(table.c[name].type, dialect) for name in columns]
    if not any(convert):
        return [row + constant for row in rows]
    return [
        (*(v if fn is None else fn(v) for v, fn in zip(row, convert, strict=True)), *constant)
        for row in rows
    ]


def _converter(type_: Any, dialect: Any) -> Callable[[Any], Any] | None:
    if isinstance(type_, JSON):
        return _json_or_null  # what the column's own processor does (``db.json_text``)
    processor: Callable[[Any], Any] | None = type_.dialect_impl(dialect).bind_processor(dialect)
    return processor


def _json_or_null(value: Any) -> str | None:
    return None if value is None else json_text(value)
