"""Database: declarative base, column types, engine factory and dialect helpers.

Services only ``flush()``, never ``commit()``: whoever opens the session owns its
transaction. A route's is the request boundary's (``questline.web.routing.
TransactionalRoute``, which commits once the endpoint succeeded); work outside a route's
transaction (auth's session routes, the health probe, idempotency records, the progress
group commit, the webhook dispatcher, the leaderboard stream, the command line, the demo
loader) opens ``Database.session()``, which commits on success and rolls back on error.
tests/test_layering.py holds every other module to it (no ``commit()`` call).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import enum
import logging
import os
import sqlite3
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import asyncpg
import orjson
from sqlalchemy import DateTime, Dialect, Enum, ForeignKeyConstraint, MetaData, event, insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import DeclarativeBase, Session
from sqlalchemy.pool import Pool
from sqlalchemy.sql.expression import Insert
from sqlalchemy.types import TypeDecorator
from sqlalchemy.util import await_
from uuid_utils.compat import uuid7

from questline.config import Settings
from questline.storage import tenancy
from questline.storage.internals import (
    on_driver_thread,
    runs_on_driver_thread,
    sqlite_connection_of,
)
from questline.storage.notify import Notifier
from questline.storage.pool import MeteredQueuePool
from questline.storage.replicas import ReplicaRouter, RoutingSession

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
COMMIT_MOVED_KEY = "questline_readmodel_moved"
"""``session.info`` key of what each organization's bumps moved, when every bump of the
transaction said so (``questline.readmodel.moved``): ``{org_id: scopes}``, ``None`` for
an organization of which something unsaid moved. Handed on with the notes."""

Moved = Mapping[Any, frozenset[str] | None]
"""What a commit moved by organization (absent or ``None``: anything)."""
CommitListener = Callable[[dict[Any, int], Moved], None]


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
        if value is None or value.tzinfo is dt.UTC:
            return value  # asyncpg's timestamptz: UTC already (every column read)
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


def text_enum(kind: type[enum.StrEnum]) -> Enum:
    """The column type of an enum: its members' values (not their names) as text of at
    most 16 characters, not a database enum type."""
    return Enum(kind, native_enum=False, length=16, values_callable=lambda e: [m.value for m in e])


def tenant_foreign_key(column: str, table: str) -> ForeignKeyConstraint:
    """The foreign key of ``column`` to the row of ``table`` in the same organization
    (``organization_id`` on both sides, so that no row points into another
    organization), deleted with that row."""
    return ForeignKeyConstraint(
        ["organization_id", column],
        [f"{table}.organization_id", f"{table}.id"],
        ondelete="CASCADE",
    )


def json_text(value: Any) -> str:
    """A JSON column's text: orjson, not the standard library (a bulk import's outbox
    payload lists every team it made). Non-string keys as text, like ``json.dumps``."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


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
                json_serializer=json_text,
            )
            _configure_sqlite(self.engine)
        else:
            self.engine = postgres_engine(self.url, settings, poolclass=MeteredQueuePool)
            if settings.database_transaction_pooler and not settings.database_listen_url:
                logging.getLogger("questline.storage").warning(
                    "QUESTLINE_DATABASE_TRANSACTION_POOLER is set without "
                    "QUESTLINE_DATABASE_LISTEN_URL: LISTEN through a transaction pooler "
                    "receives no notifications; give it a direct URL of the primary"
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
        self.replicas = ReplicaRouter(
            settings,
            self.engine,
            lambda url, size, replica: postgres_engine(
                url, settings, pool_size=size, replica=replica
            ),
            urls=[] if self.is_sqlite else settings.database_replica_urls,
        )
        # PostgreSQL: a commit's bumped versions are announced after it, by this
        # process's notifier, on the direct (listening) URL — never inside the write
        # transaction (``questline.storage.notify`` says why).
        self.notifier = None if self.is_sqlite else Notifier(settings.resolved_listen_url)
        self.commit_listeners: list[CommitListener] = []
        self.dispose_hooks: list[Callable[[], Awaitable[None]]] = []
        session_class = type("QuestlineSession", (RoutingSession,), {})
        event.listen(session_class, "after_commit", self._after_commit)
        event.listen(session_class, "after_rollback", self._after_rollback)
        self.row_security = settings.row_security
        self.behind_pooler = settings.database_transaction_pooler
        info: dict[str, Any] = {}
        if self.row_security:
            quote = self.engine.dialect.identifier_preparer.quote
            info[tenancy.EVERY_ORGANIZATION_ROLE] = quote(settings.database_every_organization_role)
        self.sessionmaker = async_sessionmaker(
            self.engine, expire_on_commit=False, sync_session_class=session_class, info=info
        )
        self._session_info = info

    def give_sessions(self, key: str, value: object) -> None:
        """Every session made from now on holds ``value`` in its ``info`` under ``key``
        (what the application hands down to code that sees only a session)."""
        self._session_info[key] = value

    def on_commit(self, listener: CommitListener) -> None:
        """Call ``listener`` with a transaction's notes (and what they moved) right after
        it commits."""
        self.commit_listeners.append(listener)

    def _after_commit(self, session: Session) -> None:
        notes = session.info.pop(COMMIT_NOTES_KEY, None)
        moved = session.info.pop(COMMIT_MOVED_KEY, None) or {}
        if notes:
            self.committed(notes, moved)

    def committed(self, notes: dict[Any, int], moved: Moved | None = None) -> None:
        """A transaction bumped these versions (``{org_id: version}``) and committed:
        announce them (the notifier, then the read model), with what they ``moved``
        where the writes said it. Sessions call it after their commit; writes made
        outside a session call it themselves."""
        if self.notifier is not None:
            self.notifier.queue(notes, moved)
        for listener in self.commit_listeners:
            listener(notes, moved or {})

    @staticmethod
    def _after_rollback(session: Session) -> None:
        session.info.pop(COMMIT_NOTES_KEY, None)
        session.info.pop(COMMIT_MOVED_KEY, None)

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

    @asynccontextmanager
    async def driver_connection(
        self, *, keep_organization_of: str | None = None
    ) -> AsyncIterator[Any]:
        """PostgreSQL: the asyncpg connection of a pooled connection, outside any
        transaction (each statement its own), for the paths that skip the session (lean
        reads, the progress group commit). An error the server reported for a statement
        leaves the connection in the pool; any other failure drops it (its state is
        unknown). ``keep_organization_of``: row-level security, the session-level
        organization the connection's statements act for (``driver_acting_for``)."""
        async with self.engine.connect() as connection:
            pooled = await connection.get_raw_connection()
            try:
                if keep_organization_of is not None:
                    await _keep_organization(pooled, keep_organization_of)
                yield pooled.driver_connection
            except asyncpg.PostgresError:
                raise
            except BaseException:
                await connection.invalidate()
                raise

    @asynccontextmanager
    async def driver_acting_for(self, organization_id: uuid.UUID) -> AsyncIterator[Any]:
        """PostgreSQL with row-level security: the asyncpg connection of a pooled
        connection whose statements act for ``organization_id`` (the lean reads and the
        progress group commit, which skip the session).

        On a direct connection the organization is a session-level setting, set only
        when the connection last acted for another one, so each statement stays its own
        transaction and costs what it costs without row security. Every transaction
        begun on the connection sets its own organization (or none) with its ``BEGIN``
        (``tenancy.ActingConnection``), so the setting reaches no other path. Behind a
        transaction pooler, where consecutive statements may run on different server
        connections, the statements share one transaction that sets it with ``BEGIN``."""
        if self.behind_pooler:
            async with self.driver_connection() as driver:
                with tenancy.acting_for(organization_id):
                    await driver.execute("BEGIN")  # with the setting (ActingConnection)
                try:
                    yield driver
                except BaseException:
                    await driver.execute("ROLLBACK")
                    raise
                await driver.execute("COMMIT")
            return
        org = str(uuid.UUID(str(organization_id)))  # written into the setting's text
        async with self.driver_connection(keep_organization_of=org) as driver:
            yield driver

    @property
    def statements_share_a_transaction(self) -> bool:
        """``driver_acting_for`` runs its statements in one transaction (behind a
        transaction pooler under row-level security)."""
        return self.row_security and self.behind_pooler

    async def check_row_security(self, settings: Settings) -> None:
        """At start-up (PostgreSQL): refuse to serve when the setting and the database
        disagree. Row security on, the service's role must be subject to the policies
        (not the tables' owner, not a superuser, no BYPASSRLS), the policies must exist
        (the migrations ran) and the every-organization role must be its to take. Off,
        its role must not be subject to them (it would see no tenant rows)."""
        if self.is_sqlite:
            return
        every = settings.database_every_organization_role
        async with self.engine.connect() as connection:
            facts = (await connection.execute(tenancy.ROLE_FACTS, {"every": every})).one()
        role, bypasses, owns, unprotected, may_take, every_bypasses = facts
        if not settings.database_row_security:
            if not bypasses and not owns and unprotected == 0:
                raise RowSecurityMisconfigured(
                    f"The database role {role!r} owns no tables and is subject to their "
                    "row-level security, but QUESTLINE_DATABASE_ROW_SECURITY is off: it "
                    "would see no organization's rows. Turn it on (docs/deploy.md)."
                )
            return
        problems = []
        if bypasses:
            problems.append(f"{role!r} is a superuser or has BYPASSRLS")
        if owns:
            problems.append(f"{role!r} owns the tables (connect as the service's role)")
        if unprotected:
            problems.append(f"{unprotected} tenant tables have no policy (run the migrations)")
        if not may_take:
            problems.append(f"{role!r} may not take the role {every!r}")
        elif not every_bypasses:
            problems.append(f"the role {every!r} lacks BYPASSRLS")
        if problems:
            raise RowSecurityMisconfigured(
                "QUESTLINE_DATABASE_ROW_SECURITY is on (the default), but "
                + "; ".join(problems)
                + '. Connect as a role the policies bind (docs/deploy.md, "Two database '
                'roles"), or set QUESTLINE_DATABASE_ROW_SECURITY=false to run with one role '
                "and without that second wall."
            )

    async def dispose(self) -> None:
        if self.notifier is not None:
            await self.notifier.close()
        for hook in self.dispose_hooks:
            await hook()
        await self.replicas.close()
        await self.engine.dispose()


async def _keep_organization(pooled: Any, org: str) -> None:
    """Make ``org`` the session-level organization of a direct connection, unless it
    already is. What was set is remembered with the connection (the pool's ``info``
    lives as long as it); a failure forgets it, so the next use sets it again."""
    if pooled.info.get(tenancy.SESSION_ORGANIZATION) == org:
        return
    pooled.info.pop(tenancy.SESSION_ORGANIZATION, None)
    await pooled.driver_connection.execute(
        f"SELECT set_config('{tenancy.ORG_SETTING}', '{org}', false)"
    )
    pooled.info[tenancy.SESSION_ORGANIZATION] = org


class RowSecurityMisconfigured(RuntimeError):
    """The row-security setting and the database's roles disagree (start-up refuses)."""


def postgres_engine(
    url: str,
    settings: Settings,
    *,
    poolclass: type[Pool] | None = None,
    pool_size: int | None = None,
    replica: bool = False,
) -> AsyncEngine:
    """An asyncpg engine (of a replica: ``replica``; ``pool_size``: a fixed pool of that
    size). Behind a transaction pooler (``database_transaction_pooler``, for replicas
    ``database_replica_transaction_pooler``) it keeps no prepared statements across
    transactions and names each one uniquely, since consecutive transactions may run on
    different server connections (pgbouncer before 1.21 does not track prepared
    statements; Debian 12 ships 1.18)."""
    behind_pooler = settings.database_transaction_pooler
    if replica and settings.database_replica_transaction_pooler is not None:
        behind_pooler = settings.database_replica_transaction_pooler
    connect_args: dict[str, Any] = {}
    if behind_pooler:
        connect_args = {
            "statement_cache_size": 0,
            "prepared_statement_cache_size": 0,
            "prepared_statement_name_func": _unique_statement_name,
        }
    if settings.row_security:
        role = postgresql.dialect().identifier_preparer.quote(  # type: ignore[no-untyped-call]
            settings.database_every_organization_role
        )
        connect_args["connection_class"] = tenancy.acting_connection_class(role)
    options: dict[str, Any] = {"poolclass": poolclass} if poolclass is not None else {}
    return create_async_engine(
        url,
        echo=settings.database_echo,
        pool_size=pool_size or settings.database_pool_size,
        max_overflow=0 if pool_size else settings.database_pool_size,
        # No pre-ping (a SELECT 1 before every checkout): a connection that turns out
        # dead fails its first statement, the pool drops it, and the request boundary
        # retries once (``questline.web.routing``).
        pool_pre_ping=False,
        pool_recycle=1800,
        hide_parameters=True,  # error messages and logs carry no SQL parameters
        connect_args=connect_args,
        json_serializer=json_text,
        **options,
    )


def _unique_statement_name() -> str:
    return f"__questline_{uuid.uuid4().hex}__"


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
    """Connection settings, and the process's write queue.

    A write transaction (``BEGIN IMMEDIATE``) first takes this process's write gate (an
    ``asyncio.Lock``, FIFO) and holds it until its connection is back in the pool (after
    the commit or rollback). SQLite has one write lock per database anyway; writers that
    wait in an asyncio queue are woken the moment it is free, where writers that wait in
    SQLite's busy handler poll it, sleeping between tries: under concurrent writes that
    sleep, not the work, made most of a write's latency (docs/performance.md, "Writes",
    SQLite's busy handler). Other processes (and ``DEFERRED`` transactions that write)
    still meet the busy handler.
    """

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

    gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
        weakref.WeakKeyDictionary()
    )

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get(SQLITE_BEGIN_OPTION, "DEFERRED")
        # Kept across an invalidation (``info`` is cleared then), so checkin finds it.
        held = conn.connection.record_info
        assert held is not None
        if mode == "IMMEDIATE":
            gate = gates.setdefault(asyncio.get_running_loop(), asyncio.Lock())
            try:
                await_(_acquire(gate))
            except TimeoutError:
                raise sqlite3.OperationalError("database is locked (write queue)") from None
            held[_GATE_HELD] = gate
        try:
            _begin(conn, f"BEGIN {mode}")
        except BaseException:
            _release_gate(held)
            raise

    @event.listens_for(engine.sync_engine.pool, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        if record is not None and record.record_info is not None:
            _release_gate(record.record_info)


def _begin(conn: Connection, statement: str) -> None:
    """``BEGIN`` in one hop to the driver's thread (``exec_driver_sql`` takes three:
    cursor, execute, close), reported to the engine's cursor events like any statement."""
    driver: Any = conn.connection.driver_connection
    if not runs_on_driver_thread(driver):  # pragma: no cover - another driver than aiosqlite
        conn.exec_driver_sql(statement)
        return
    dispatch = conn.dispatch
    dispatch.before_cursor_execute(conn, None, statement, (), None, False)
    await_(on_driver_thread(driver, lambda: sqlite_connection_of(driver).execute(statement)))
    dispatch.after_cursor_execute(conn, None, statement, (), None, False)


WRITE_GATE_TIMEOUT = 30.0
"""Seconds a write waits in this process's queue before failing like a busy database
(the busy timeout's length)."""
_GATE_HELD = "questline_write_gate"


async def _acquire(gate: asyncio.Lock) -> None:
    async with asyncio.timeout(WRITE_GATE_TIMEOUT):  # no task per acquire (wait_for makes one)
        await gate.acquire()


def _release_gate(info: dict[Any, Any]) -> None:
    gate = info.pop(_GATE_HELD, None)
    if gate is not None:
        gate.release()


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


_STORED_AS_IS = frozenset({str, int, float, bytes, type(None)})
"""Types SQLite takes as they are: tested by identity first, as most parameters are."""


def sqlite_value(value: Any) -> Any:
    """A Python value as SQLAlchemy stores it in SQLite (for ``SqliteBatch``): UUIDs as
    32 hex digits, UTC times as naive ``YYYY-MM-DD HH:MM:SS.ffffff``, enums by value,
    booleans as 0/1."""
    kind = type(value)
    if kind in _STORED_AS_IS:
        return value
    if kind is uuid.UUID:
        return value.hex
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise ValueError("naive datetime given; Questline stores UTC only")
        return value.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, uuid.UUID):
        return value.hex
    return value


def parse_sqlite_time(value: str) -> dt.datetime:
    """A time as ``sqlite_value`` stored it, back as an aware UTC datetime."""
    return dt.datetime.fromisoformat(value).replace(tzinfo=dt.UTC)


T = TypeVar("T")


class SqliteBatch:
    """Statements run inside the SQLite connection's own thread (``run_in_sqlite_thread``)."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.ran: list[tuple[str, tuple[Any, ...]]] = []
        self._times: dict[dt.datetime, str] = {}
        """Times already written as text: a batch's statements repeat its own time."""

    def _value(self, value: Any) -> Any:
        if type(value) is dt.datetime:
            text = self._times.get(value)
            if text is None:
                text = self._times[value] = sqlite_value(value)
            return text
        return sqlite_value(value)

    def rows(self, sql: str, *params: Any) -> list[Any]:
        values = tuple(self._value(p) for p in params)
        self.ran.append((sql, values))
        return self.connection.execute(sql, values).fetchall()

    def one(self, sql: str, *params: Any) -> Any:
        found = self.rows(sql, *params)
        return found[0] if found else None


async def run_in_sqlite_thread(session: AsyncSession, work: Callable[[SqliteBatch], T]) -> T:
    """Run ``work`` — several statements — in the session's transaction, in ONE round trip
    to the thread that owns the SQLite connection.

    Through the async driver every statement costs three or four hops between the event
    loop and that thread (cursor, execute, fetch, close), each a thread wake-up: on a
    busy machine they, not SQLite, were most of a progress write's time. The statements
    still go through the engine's ``before/after_cursor_execute`` events afterwards (as
    one batch, on the event loop), so statement counting and logging see each of them.
    aiosqlite's own way to run a function in its thread is private (``internals``).
    """
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    driver: Any = raw.driver_connection
    batch = SqliteBatch(sqlite_connection_of(driver))  # touched on the driver's thread only
    try:
        return await on_driver_thread(driver, work, batch)
    finally:
        sync = connection.sync_connection
        if sync is not None and batch.ran:
            dispatch = sync.dispatch
            for sql, params in batch.ran:
                dispatch.before_cursor_execute(sync, None, sql, params, None, False)
                dispatch.after_cursor_execute(sync, None, sql, params, None, False)
