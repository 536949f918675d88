"""SQL expressions the seed builds rows from, in the database: one spelling per dialect.

Every id of the dataset is a function of a kind and an ordinal (``ident``), so the
database computes the same ids as Python does, and rows that refer to each other
(a membership to its team and member) need no join to find them.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    ColumnElement,
    FromClause,
    Integer,
    String,
    Uuid,
    cast,
    column,
    func,
    literal,
    select,
)
from sqlalchemy.engine import Dialect

from bench.dataset.rules import EPOCH

EPOCH_MS = int(EPOCH.timestamp() * 1000)


def ident(kind: int, n: int) -> uuid.UUID:
    """The n-th id of a kind: the v7 layout (a millisecond timestamp first, so that new
    rows land at the end of the index, as the service's own ids do), kind and ordinal
    in the random bits."""
    return uuid.UUID(hex=f"{EPOCH_MS + n:012x}7{kind:03x}8{n:015x}")


def _hex(dialect: Dialect, value: ColumnElement[int], width: int) -> ColumnElement[str]:
    if dialect.name == "postgresql":
        return func.lpad(func.to_hex(value), width, "0")
    return func.printf(f"%0{width}x", value)


def ident_sql(dialect: Dialect, kind: int, n: ColumnElement[int]) -> ColumnElement[Any]:
    """``ident(kind, n)`` computed by the database."""
    text = (
        _hex(dialect, cast(n, BigInteger) + literal(EPOCH_MS, BigInteger), 12)
        + literal(f"7{kind:03x}8", String)
        + _hex(dialect, n, 15)
    )
    if dialect.name == "postgresql":
        return cast(text, Uuid())
    return text  # SQLite keeps UUIDs as 32 hex digits


def timestamp_sql(dialect: Dialect, seconds: ColumnElement[int]) -> ColumnElement[Any]:
    """``EPOCH + seconds``, as the column type stores it on this dialect."""
    epoch = int(EPOCH.timestamp())
    if dialect.name == "postgresql":
        return func.to_timestamp(cast(seconds, Integer) + epoch)
    # SQLAlchemy keeps SQLite datetimes as 'YYYY-MM-DD HH:MM:SS.ffffff' text, naive UTC.
    return func.strftime("%Y-%m-%d %H:%M:%S.000000", seconds + epoch, "unixepoch")


def json_sql(dialect: Dialect, text: ColumnElement[str]) -> ColumnElement[Any]:
    """A JSON document built as text (PostgreSQL's ``json`` column needs the cast)."""
    if dialect.name == "postgresql":
        return cast(text, JSON)
    return text


def concat(*parts: str | ColumnElement[int] | ColumnElement[str]) -> ColumnElement[str]:
    out: ColumnElement[str] = literal("", String)
    for part in parts:
        out = out + (literal(part, String) if isinstance(part, str) else cast(part, String))
    return out


def numbers(dialect: Dialect, count: int, name: str) -> FromClause:
    """The integers ``0 … count-1`` as rows, in order.

    PostgreSQL: ``generate_series``, whose row count the planner knows (it then hashes
    the small side of a join and keeps this side's order: rows reach the primary-key
    index in key order). SQLite: a recursive CTE.
    """
    if dialect.name == "postgresql":
        return (
            func.generate_series(0, count - 1)
            .table_valued(column("n", Integer))
            .render_derived(name=name)
        )
    start = select(literal(0, Integer).label("n")).cte(name, recursive=True)
    return start.union_all(select(start.c.n + 1).where(start.c.n < count - 1))
