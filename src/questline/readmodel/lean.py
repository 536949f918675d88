"""Lean reads: one precompiled statement on the driver, no session, no transaction.

A read-model miss of a small resource (``GET /team/{id}``, its overview) is one
statement. Through the ORM session it costs a pool checkout, a ``BEGIN``, the statement,
a ``COMMIT`` and SQLAlchemy's per-execution machinery; on SQLite each of those is also a
hop to aiosqlite's thread, and that was most of a miss (docs/performance.md, "Lean
misses"). Here the statement is compiled once per dialect and run directly:

* **SQLite** — on a private read-only ``sqlite3`` connection of this process in
  autocommit mode, on the event loop: a single ``SELECT`` is its own read transaction
  (one snapshot), and a primary-key look-up of a bounded number of rows costs tens of
  microseconds, less than a hop to a thread. Statements are bounded (``LIMIT``) by
  their callers so the loop is never held for long.
* **PostgreSQL** — on the asyncpg connection of a pooled SQLAlchemy connection, outside
  any transaction (one statement is one snapshot at READ COMMITTED).

Values come back through the same SQLAlchemy type processors the ORM path uses, so the
rows are what the session would return. Anything unusual (replicas configured, a
transaction pooler, an in-memory database, a driver error) makes ``available`` false or
raises ``LeanUnavailable``: the caller then takes the ordinary route.
"""

from __future__ import annotations

import logging
import sqlite3
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import make_url
from sqlalchemy.sql import Select
from starlette.requests import Request

from questline.storage import tenancy
from questline.storage.db import Database

log = logging.getLogger(__name__)

Row = tuple[Any, ...]
SQLITE_CACHE_KIB = 65_536
"""The lean SQLite connection's page cache (KiB, one connection a process)."""


class LeanUnavailable(Exception):
    """The lean read could not run; take the ordinary route."""


class LeanStatement:
    """A Core ``SELECT`` compiled for one dialect: its SQL, the order of its bind
    parameters with their processors, and each result column's processor."""

    def __init__(self, statement: Select[*tuple[Any, ...]], db: Database) -> None:
        dialect = db.engine.dialect
        compiled = statement.compile(dialect=dialect)
        self.sql = str(compiled)
        names = list(compiled.positiontup or [])
        self.names = names
        self.bind_processors: list[Callable[[Any], Any] | None] = [
            compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
            for name in names
        ]
        self.literals = {
            name: compiled.binds[name].value
            for name in names
            if compiled.binds[name].value is not None
        }
        self.result_processors: list[Callable[[Any], Any] | None] = [
            column.type.dialect_impl(dialect).result_processor(dialect, None)
            for column in statement.selected_columns
        ]

    def arguments(self, params: Mapping[str, Any]) -> list[Any]:
        values = []
        for name, process in zip(self.names, self.bind_processors, strict=True):
            value = params[name] if name in params else self.literals[name]
            values.append(process(value) if process is not None else value)
        return values

    def rows(self, raw: Sequence[Sequence[Any]]) -> list[Row]:
        processors = self.result_processors
        return [
            tuple(
                process(value) if process is not None else value
                for process, value in zip(processors, row, strict=True)
            )
            for row in raw
        ]


class LeanReader:
    """Runs ``LeanStatement``s of one database (see the module's docstring)."""

    def __init__(self, db: Database, *, transaction_pooler: bool) -> None:
        self.db = db
        self._sqlite_path: str | None = None
        self._sqlite: sqlite3.Connection | None = None
        self.enabled = True
        """Off: every miss takes the route (tests compare the two)."""
        self._usable = True
        if db.is_sqlite:
            path = make_url(db.url).database or ""
            self._usable = path not in ("", ":memory:") and not path.startswith("file:")
            self._sqlite_path = path
        else:
            # A transaction pooler may not keep asyncpg's prepared statements.
            self._usable = not transaction_pooler
        self._statements: dict[str, LeanStatement] = {}
        self.listeners: list[Callable[[str], None]] = []
        """Called with each statement's SQL before it runs (tests and bench/harness/statements.py
        count them: these statements bypass the engine's events)."""

    @property
    def available(self) -> bool:
        # Replicas route reads by lag and read-after positions: the route handles those.
        return self.enabled and self._usable and not self.db.replicas.enabled

    def statement(self, name: str, build: Callable[[], Select[*tuple[Any, ...]]]) -> LeanStatement:
        """The statement ``name``, compiled on first use."""
        found = self._statements.get(name)
        if found is None:
            found = self._statements[name] = LeanStatement(build(), self.db)
        return found

    async def fetch(self, statement: LeanStatement, params: Mapping[str, Any]) -> list[Row]:
        for listener in self.listeners:
            listener(statement.sql)
        try:
            arguments = statement.arguments(params)
            if self._sqlite_path is not None:
                raw: Sequence[Sequence[Any]] = self._fetch_sqlite(statement.sql, arguments)
            else:
                raw = await self._fetch_postgres(statement.sql, arguments)
            return statement.rows(raw)
        except Exception as exc:  # any driver trouble: the ordinary route decides
            log.debug("lean read failed; taking the route", exc_info=True)
            raise LeanUnavailable(str(exc)) from exc

    def _fetch_sqlite(self, sql: str, arguments: list[Any]) -> list[Any]:
        connection = self._sqlite
        if connection is None:
            connection = self._sqlite = sqlite3.connect(
                f"file:{self._sqlite_path}?mode=ro",
                uri=True,
                timeout=0.2,
                isolation_level=None,
                check_same_thread=False,
            )
            # A larger page cache than SQLite's 2 MiB: misses land on random teams of a
            # large organization (docs/performance.md, "Lean misses").
            connection.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
        try:
            return connection.execute(sql, arguments).fetchall()
        except sqlite3.Error:
            self.close()
            raise

    async def _fetch_postgres(self, sql: str, arguments: list[Any]) -> list[Any]:
        if self.db.row_security:
            # Row-level security: the statement acts for the caller's organization (none
            # known: the route answers).
            organization_id = tenancy.acting_organization.get()
            if organization_id is None:
                raise LeanUnavailable("no organization to act for")
            async with self.db.driver_acting_for(organization_id) as driver:
                return list(await driver.fetch(sql, *arguments))
        async with self.db.driver_connection() as driver:
            return list(await driver.fetch(sql, *arguments))

    def close(self) -> None:
        if self._sqlite is not None:
            self._sqlite.close()
            self._sqlite = None


@dataclass(frozen=True, slots=True)
class LeanRequest:
    """A read-model miss the fast lane may answer itself: who asks, for what, at which
    version of the organization."""

    reader: LeanReader
    memos: MemoPeek
    organization_id: uuid.UUID
    resource_id: uuid.UUID | None
    """The path's resource (``CachedRead``'s ``resource``), if the route names one."""
    role: str
    """The caller's role (``member`` or ``admin``): the cache entry's variant."""
    version: int
    query: Mapping[str, Any]
    """The query parameters the builder reads (``CachedRead``'s ``query``), as the
    route's own declaration validated them (its defaults where absent)."""
    request: Request
    """The request (for links built as the route builds them)."""


class MemoPeek(Protocol):
    def memo_at(self, organization_id: uuid.UUID, name: str, version: int) -> Any: ...


LeanEtag = Callable[[LeanRequest], Awaitable[str | None]]
"""The resource's own ``ETag`` now (``None``: not seen by the caller's organization)."""

LeanBuild = Callable[[LeanRequest], Awaitable[tuple[bytes, dict[str, str]] | None]]
"""Builds the body and headers of a miss, or None: take the route (not found, too large,
a memo not built yet at this version)."""
