"""Database: declarative base, column types, engine factory and dialect helpers.

The request boundary (``questline.web.routing.TransactionalRoute``) owns the transaction:
services only ``flush()``, never ``commit()``.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import DateTime, Dialect, MetaData, event, insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase, Session
from sqlalchemy.sql.expression import Insert
from sqlalchemy.types import TypeDecorator
from uuid_utils.compat import uuid7

from questline.config import Settings
from questline.storage.pool import MeteredQueuePool

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

SQLITE_BEGIN_OPTION = "questline_sqlite_begin"
COMMIT_NOTES_KEY = "questline_readmodel_bumps"
"""``session.info`` key of what a transaction changed (``questline.readmodel.versions``):
handed to ``Database.on_commit`` listeners after the commit, dropped on rollback."""


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def new_id() -> uuid.UUID:
    """A time-ordered UUID (v7): new rows land at the end of the primary-key index."""
    return uuid7()


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class UTCDateTime(TypeDecorator[dt.datetime]):
    """A timestamp that is always timezone-aware UTC in Python, on every backend.

    SQLite keeps no time zone; PostgreSQL keeps ``timestamptz``. Both come back as UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given; Questline stores UTC only")
        value = value.astimezone(dt.UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(
        self, value: dt.datetime | None, dialect: Dialect
    ) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


class Database:
    """The engine and session factory of one database."""

    def __init__(self, settings: Settings) -> None:
        self.url = settings.resolved_database_url
        self.is_sqlite = self.url.startswith("sqlite")
        if self.is_sqlite:
            settings.ensure_data_dir()
            self.engine = create_async_engine(
                self.url,
                echo=settings.database_echo,
                hide_parameters=True,
                connect_args={"timeout": 30},
                poolclass=MeteredQueuePool,
            )
            _configure_sqlite(self.engine)
        else:
            self.engine = create_async_engine(
                self.url,
                echo=settings.database_echo,
                pool_size=settings.database_pool_size,
                max_overflow=settings.database_pool_size,
                # No pre-ping (a SELECT 1 before every checkout): a connection that turns
                # out dead fails its first statement, the pool drops it, and the request
                # boundary retries once (``questline.web.routing``).
                pool_pre_ping=False,
                pool_recycle=1800,
                hide_parameters=True,  # error messages and logs carry no SQL parameters
                poolclass=MeteredQueuePool,
            )
        self.write_engine = (
            self.engine.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
            if self.is_sqlite
            else self.engine
        )
        # Reads on PostgreSQL: one REPEATABLE READ READ ONLY snapshot, begun by the first
        # statement (a read answered from the read model begins none).
        self.read_engine = (
            self.engine
            if self.is_sqlite
            else self.engine.execution_options(
                isolation_level="REPEATABLE READ", postgresql_readonly=True
            )
        )
        self.commit_listeners: list[Callable[[dict[Any, int]], None]] = []
        self.dispose_hooks: list[Callable[[], Awaitable[None]]] = []
        session_class = type("QuestlineSession", (Session,), {})
        event.listen(session_class, "after_commit", self._after_commit)
        event.listen(session_class, "after_rollback", self._after_rollback)
        self.sessionmaker = async_sessionmaker(
            self.engine, expire_on_commit=False, sync_session_class=session_class
        )

    def on_commit(self, listener: Callable[[dict[Any, int]], None]) -> None:
        """Call ``listener`` with a transaction's notes right after it commits."""
        self.commit_listeners.append(listener)

    def _after_commit(self, session: Session) -> None:
        notes = session.info.pop(COMMIT_NOTES_KEY, None)
        if notes:
            for listener in self.commit_listeners:
                listener(notes)

    @staticmethod
    def _after_rollback(session: Session) -> None:
        session.info.pop(COMMIT_NOTES_KEY, None)

    def new_session(self, *, write: bool) -> AsyncSession:
        """A session that begins its transaction on first use.

        On SQLite, a write session begins with ``BEGIN IMMEDIATE``: it takes the write
        lock up front, so concurrent writers queue on the busy timeout instead of failing
        on a stale snapshot.
        """
        return self.sessionmaker(bind=self.write_engine if write else self.read_engine)

    @asynccontextmanager
    async def session(self, *, write: bool = True) -> AsyncIterator[AsyncSession]:
        """A session whose transaction commits on success and rolls back on error."""
        async with self.new_session(write=write) as session:
            try:
                yield session
                await session.commit()
            except BaseException:
                await session.rollback()
                raise

    async def dispose(self) -> None:
        for hook in self.dispose_hooks:
            await hook()
        await self.engine.dispose()


def _make_private(database: str | None) -> None:
    """The SQLite file and its WAL and shared-memory files: 0600 (owner only)."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    for suffix in ("", "-wal", "-shm"):
        path = database + suffix
        try:
            if os.stat(path).st_mode & 0o077:
                os.chmod(path, 0o600)
        except FileNotFoundError:
            continue


def _configure_sqlite(engine: AsyncEngine) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let us issue BEGIN ourselves (pysqlite's implicit BEGIN is always DEFERRED).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()
        _make_private(engine.url.database)

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get(SQLITE_BEGIN_OPTION, "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


def insert_ignoring_conflicts(
    session: AsyncSession, table: Any, conflict_columns: Sequence[str]
) -> Insert:
    """``INSERT … ON CONFLICT (cols) DO NOTHING`` for the session's dialect."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        return postgresql.insert(table).on_conflict_do_nothing(
            index_elements=list(conflict_columns)
        )
    if dialect == "sqlite":
        return sqlite.insert(table).on_conflict_do_nothing(index_elements=list(conflict_columns))
    return insert(table)  # pragma: no cover - only the two supported backends exist
