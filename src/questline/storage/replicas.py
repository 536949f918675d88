"""Reads from streaming replicas, never older than the caller's own writes.

``QUESTLINE_DATABASE_REPLICA_URLS`` names hot standbys of the primary. A read request
(any ``GET`` of the API: lists, a team, overviews, the leaderboard and its graphs) runs
on a replica when all of these hold, and on the primary otherwise:

* **Bounded staleness.** Every ``database_replica_check_seconds`` each process samples
  the primary's WAL position (``pg_current_wal_lsn()``) and every replica's replayed
  position (``pg_last_wal_replay_lsn()``). A replica that has replayed what the primary
  had written at time *t* holds every transaction committed before *t*; a replica whose
  newest such *t* is more than ``database_replica_max_lag_seconds`` ago, that does not
  answer, or that is no longer in recovery (promoted) serves nothing.
* **Read-your-writes.** After a write transaction commits, the process reads the
  primary's WAL insert position (which is past the commit record) and keeps it per
  organization (``None`` for operators' global writes). A read of that organization in
  this process goes to a replica only once the replica is known to have replayed it.
  Across processes the position travels with the client: write responses carry it in
  the ``Questline-Read-After`` header and cookie (``questline.web.readafter``), and a
  request that sends either back reads only from a replica that has replayed it.

A read that fails on a replica because the replica went away is run again on the
primary (``questline.web.readafter.call_endpoint``); the replica is out until the next
check finds it answering and current again.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import itertools
import logging
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import Counter, Gauge
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.engine.url import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.orm import Session

from questline.background import cancel_and_wait
from questline.config import Settings

log = logging.getLogger("questline.storage.replicas")

READS = Counter(
    "questline_database_reads",
    "Read transactions of API requests, by the server they ran on.",
    ["target"],
)
REPLICA_UP = Gauge(
    "questline_database_replica_usable",
    "1 when the replica serves reads (answers, in recovery, within the lag bound).",
    ["replica"],
)

LSN_PATTERN = re.compile(r"^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$")
UNREACHABLE_LSN = 1 << 64
"""A read-after position no replica reaches: the read goes to the primary."""
MAX_TRACKED_ORGANIZATIONS = 100_000

VERSION_SQL = "SELECT version FROM readmodel_versions WHERE organization_id = :organization_id"
"""The read model's version of an organization (``questline.readmodel.versions``)."""

CHOICE = "questline_read_choice"
"""``Session.info`` key: a callable deciding (once) where the session's reads run."""


def parse_lsn(value: str) -> int:
    """``'16/B374D848'`` → an integer position; ``ValueError`` when malformed."""
    if not LSN_PATTERN.match(value):
        raise ValueError(f"not a WAL position: {value!r}")
    high, low = value.split("/")
    return (int(high, 16) << 32) | int(low, 16)


def format_lsn(position: int) -> str:
    return f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"


def describe(url: str) -> str:
    """host:port/database of a URL, without credentials (for logs and metrics)."""
    parsed = make_url(url)
    return f"{parsed.host}:{parsed.port or 5432}/{parsed.database}"


class ReplicaBehind(Exception):
    """The replica chosen for a read has not replayed what the read must see."""


@dataclass
class Replica:
    url: str
    engine: AsyncEngine
    name: str
    up: bool = False
    replayed: int = 0
    current_as_of: float | None = None
    """Monotonic time at which the replica held everything the primary had written."""
    reason: str = "not checked yet"

    @functools.cached_property
    def read_engine(self) -> AsyncEngine:
        """Reads as on the primary: one ``REPEATABLE READ READ ONLY`` snapshot."""
        return self.engine.execution_options(
            isolation_level="REPEATABLE READ", postgresql_readonly=True
        )

    def usable(self, now: float, max_lag: float) -> bool:
        return self.up and self.current_as_of is not None and now - self.current_as_of <= max_lag

    def mark_down(self, reason: str) -> None:
        if self.up:
            log.warning("replica out of service", extra={"replica": self.name, "reason": reason})
        self.up = False
        self.reason = reason
        REPLICA_UP.labels(self.name).set(0)


@dataclass
class ReplicaRouter:
    """The replicas of one process, their state, and the organizations' last writes."""

    settings: Settings
    primary: AsyncEngine
    make_engine: Callable[[str, int | None, bool], AsyncEngine]
    """An engine of a URL, with a pool of the given size (None: the configured one), of
    a replica (True) or of the primary."""
    urls: list[str] = field(default_factory=list)
    replicas: list[Replica] = field(default_factory=list)
    written: dict[uuid.UUID | None, tuple[int, float]] = field(default_factory=dict)
    """Per organization, the primary's WAL position after its last write in this process,
    and when. After the lag bound a write needs no tracking: every replica that serves
    reads then holds everything committed that long ago."""
    floor: tuple[int, float] = (0, 0.0)
    """A position every read must see (set when too many organizations are tracked)."""
    samples: collections.deque[tuple[float, int]] = field(default_factory=collections.deque)
    _task: asyncio.Task[None] | None = None
    _turn: itertools.count[int] = field(default_factory=itertools.count)
    _monitors: dict[str, AsyncEngine] = field(default_factory=dict)
    """One connection per server for the checks, apart from the requests' pools: a busy
    pool must not delay the checks (the replicas would look stale just under load)."""

    def __post_init__(self) -> None:
        for url in self.urls:
            engine = self.make_engine(url, None, True)
            replica = Replica(url=url, engine=engine, name=describe(url))
            self.replicas.append(replica)
            self._monitors[replica.name] = self.make_engine(url, 1, True)
        if self.replicas:
            url = self.primary.url.render_as_string(hide_password=False)
            self._monitors[""] = self.make_engine(url, 1, False)

    @property
    def enabled(self) -> bool:
        return bool(self.replicas)

    # Routing -------------------------------------------------------------------------

    def choose(self, organization_id: uuid.UUID | None, read_after: int = 0) -> Replica | None:
        """A replica that may serve this read, or None for the primary."""
        self._ensure_monitor()
        now = time.monotonic()
        max_lag = self.settings.database_replica_max_lag_seconds
        need = read_after
        for position, at in (
            self.floor,
            self.written.get(organization_id, (0, 0.0)),
            self.written.get(None, (0, 0.0)),
        ):
            if now - at <= max_lag:
                need = max(need, position)
        candidates = [r for r in self.replicas if r.usable(now, max_lag) and r.replayed >= need]
        if not candidates:
            READS.labels("primary").inc()
            return None
        READS.labels("replica").inc()
        return candidates[next(self._turn) % len(candidates)]

    def route_reads(
        self,
        session: AsyncSession,
        organization_id: Callable[[], uuid.UUID | None],
        read_after: int = 0,
    ) -> None:
        """Let the session's first statement decide where its transaction runs (the
        caller's organization is known by then: authentication comes first; when it is
        not, ``organization_id`` raises ``LookupError`` and the primary serves)."""
        if not self.enabled:
            return
        chosen: list[Replica | None] = []

        def decide() -> Replica | None:
            if not chosen:
                try:
                    organization = organization_id()
                except LookupError:  # no caller yet (a query before authentication)
                    chosen.append(None)
                else:
                    chosen.append(self.choose(organization, read_after))
            return chosen[0]

        session.info[CHOICE] = decide

    @staticmethod
    def replica_of(session: AsyncSession) -> Replica | None:
        decide = session.info.get(CHOICE)
        return decide() if decide is not None else None

    async def require_version(
        self, session: AsyncSession, organization_id: uuid.UUID, version: int
    ) -> None:
        """Before building a read-model entry at ``version``: if the session reads from a
        replica, that replica must hold at least that version of the organization (a
        version learnt from another process's notification carries no WAL position).
        Raises ``ReplicaBehind`` otherwise; ``call_endpoint`` runs the read again on the
        primary."""
        replica = self.replica_of(session)
        if replica is None or version <= 0:
            return
        found = await session.scalar(text(VERSION_SQL), {"organization_id": organization_id})
        if int(found or 0) < version:
            raise ReplicaBehind(replica.name)

    @staticmethod
    def use_primary(session: AsyncSession) -> None:
        session.info.pop(CHOICE, None)

    async def note_write(self, organization_id: uuid.UUID | None) -> int | None:
        """After a commit: the primary's WAL insert position (past the commit record),
        kept for the organization; None when there are no replicas. When the position
        cannot be read, the organization reads from the primary for the lag bound."""
        if not self.enabled:
            return None
        try:
            async with self.primary.connect() as connection:
                value = await connection.scalar(text("SELECT pg_current_wal_insert_lsn()::text"))
            position = parse_lsn(str(value))
        except Exception:  # the write is committed; only routing suffers
            log.warning("WAL position after a write unavailable", exc_info=True)
            position = None
        now = time.monotonic()
        self._bound_tracking(now)
        previous = self.written.get(organization_id, (0, 0.0))[0]
        self.written[organization_id] = (max(previous, position or UNREACHABLE_LSN), now)
        return position

    def _bound_tracking(self, now: float) -> None:
        if len(self.written) < MAX_TRACKED_ORGANIZATIONS:
            return
        horizon = now - self.settings.database_replica_max_lag_seconds
        for organization_id in [k for k, (_, at) in self.written.items() if at < horizon]:
            del self.written[organization_id]
        if len(self.written) >= MAX_TRACKED_ORGANIZATIONS:
            self.floor = (max(position for position, _ in self.written.values()), now)
            self.written.clear()

    # Monitoring ----------------------------------------------------------------------

    def _ensure_monitor(self) -> None:
        if self._task is None and self.enabled:
            self._task = asyncio.get_running_loop().create_task(self._monitor())

    async def _monitor(self) -> None:
        interval = self.settings.database_replica_check_seconds
        while True:
            with contextlib.suppress(Exception):
                await self.check()
            await asyncio.sleep(interval)

    async def check(self) -> None:
        """Sample the primary, then every replica; update what each may serve."""
        timeout = max(1.0, self.settings.database_replica_check_seconds * 5)
        try:
            async with asyncio.timeout(timeout), self._monitors[""].connect() as connection:
                value = await connection.scalar(text("SELECT pg_current_wal_lsn()::text"))
            self.samples.append((time.monotonic(), parse_lsn(str(value))))
        except Exception:  # primary down: replicas keep their last state
            log.debug("primary WAL position unavailable", exc_info=True)
        horizon = time.monotonic() - self.settings.database_replica_max_lag_seconds - 5
        while len(self.samples) > 1 and self.samples[0][0] < horizon:
            self.samples.popleft()
        await asyncio.gather(*(self._check_replica(r, seconds=timeout) for r in self.replicas))
        self._forget_replayed_writes()

    async def _check_replica(self, replica: Replica, *, seconds: float) -> None:
        try:
            monitor = self._monitors[replica.name]
            async with asyncio.timeout(seconds), monitor.connect() as connection:
                row = (
                    await connection.execute(
                        text("SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text")
                    )
                ).one()
        except Exception as exc:  # any failure takes it out of service
            replica.mark_down(f"unreachable: {type(exc).__name__}")
            return
        in_recovery, replayed = bool(row[0]), row[1]
        if not in_recovery or replayed is None:
            replica.mark_down("not a standby (promoted?)")
            return
        replica.replayed = parse_lsn(str(replayed))
        current = [t for t, position in self.samples if position <= replica.replayed]
        if current:
            replica.current_as_of = max(current)
        if not replica.up:
            log.info("replica in service", extra={"replica": replica.name})
        replica.up = True
        replica.reason = ""
        usable = replica.usable(time.monotonic(), self.settings.database_replica_max_lag_seconds)
        REPLICA_UP.labels(replica.name).set(1 if usable else 0)

    def _forget_replayed_writes(self) -> None:
        """Writes every replica has replayed, or older than the lag bound, need no
        tracking (a standby's replayed position only grows, down or not)."""
        replayed = min((r.replayed for r in self.replicas), default=0)
        horizon = time.monotonic() - self.settings.database_replica_max_lag_seconds
        for organization_id in [
            k for k, (position, at) in self.written.items() if position <= replayed or at < horizon
        ]:
            del self.written[organization_id]

    async def close(self) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
            self._task = None
        for replica in self.replicas:
            await replica.engine.dispose()
        for engine in self._monitors.values():
            await engine.dispose()


class RoutingSession(Session):
    """A session whose read transactions may run on a replica (see ``route_reads``)."""

    def get_bind(self, *args: Any, **kwargs: Any) -> Engine | Any:
        decide = self.info.get(CHOICE)
        if decide is not None:
            replica = decide()
            if replica is not None:
                return replica.read_engine.sync_engine
        return super().get_bind(*args, **kwargs)
