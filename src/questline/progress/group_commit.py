"""Group commit of progress writes: the writes that arrive while one transaction
commits share the next one.

Every progress write bumps its organization's read-model version, and that row stays
locked until the commit; on PostgreSQL with ``synchronous_commit = on`` the commit
waits for its WAL flush. One write a transaction therefore means one turn of that row
at a time for the whole organization, whatever the number of workers; and each
transaction has its fixed costs (a session, ``BEGIN``, ``COMMIT``, on SQLite the write
lock).

``GroupCommit`` keeps one queue per process. A write joins the queue and waits; one
task takes everything queued (up to ``max_batch``) and writes it in ONE transaction —
on PostgreSQL one look-up and one checked write statement on the driver's connection,
without a session (``ledger_pg``); on SQLite one round trip to the driver's thread
(``ledger_sqlite``) — then answers each write. A batch runs the ledger's rules
(``progress.ledger``), the same as a route's write, which is a batch of one. While a batch is
written, the next writes queue up: under load a batch holds many writes, one commit
and one turn of the version row for all of them; a lone write runs at once, in a batch
of one.

Under concurrency the next batch waits a little for its writers (``gather_window``, as
PostgreSQL's ``commit_delay`` does for WAL flushes): the clients answered by the batch
just committed usually send their next write within a fraction of a millisecond, and
without the wait the next batch left with the few writes that happened to queue
meanwhile, while the others queued behind it. A batch costs most of its time whatever
its size (two statements, a commit, its round trips; docs/performance.md), so fewer,
fuller batches are both faster and cheaper. Only a batch that follows a round of
several writes waits (with none queued yet, the task waits for them too, rather than
leaving the next one to go alone and the others to queue behind it); the wait ends as
soon as as many writes are queued as were active in the last round (the batch plus
those that queued while it was written), and never lasts longer than the window. A
write with nobody else around never waits.

A refusal (unknown team or task, archived team, a future ``CompletedAt``) writes
nothing and is answered with its ``Problem``, the one the route's ledger raises: the
caller answers it as the route would, without running the request again. A database
error rolls the whole batch back and answers ``None`` to every write in it: the route
runs each again on its own (with its retries), so an error costs a detour, never a
wrong answer. Every write of a committed batch is as
durable, and as visible, as a write of its own: the commit is the same commit.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter

from questline import events
from questline.events.fanout import EVERYONE, Listeners
from questline.progress import ledger_pg, record
from questline.progress.ledger import Outcome, Refused, Write, Written
from questline.storage import tenancy
from questline.storage.db import Database
from questline.web.errors import ServiceUnavailable
from questline.web.metrics import (
    PROGRESS_BATCH_WRITES,
    PROGRESS_BATCHES,
    PROGRESS_BATCHES_FAILED,
)

logger = logging.getLogger("questline.progress")

BATCHES_GATHERED = Counter(
    "questline_progress_batches_gathered",
    "Progress batches that waited for the writers of the last round (the gather window)",
)

RUN_BY_ROUTE = ServiceUnavailable("This progress write is run again by its route.")
"""The outcome of a write whose organization's part of a batch failed: not written, so
its route runs it (``_commit`` answers it None)."""

MAX_BATCH = 64
"""Writes per transaction at most: bounds a transaction's locks and the time its
writes wait for the slowest of them."""


Answer = Outcome | Refused | None
"""A write's answer from the group commit: its outcome, its refusal (nothing written),
or ``None``: nothing written, the route runs it (its batch failed)."""


class GroupCommit:
    """The process's queue of progress writes and the task that commits them, one batch
    at a time. More batches at once would make each smaller (more statements and commits
    for the same writes), and every one of an organization still ends on its version
    row: measured slower (docs/performance.md). SQLite has one writer anyway."""

    def __init__(
        self,
        db: Database,
        *,
        max_batch: int = MAX_BATCH,
        gather_window: float = 0.0,
        listeners: Listeners = EVERYONE,
    ) -> None:
        self.db = db
        self.outbox_listeners = listeners
        """Who may take the outbox events (``fanout.Listeners.of`` the build's consumers):
        a batch on the driver's connection records none for an organization nobody
        listens to (a session's batch asks the session's, the same)."""
        self.max_batch = max_batch
        self.gather_window = gather_window
        """Seconds a batch may wait for the writers of the last round (0: never)."""
        self._queue: list[tuple[Write, asyncio.Future[Answer]]] = []
        self._runner: asyncio.Task[None] | None = None
        self._gathering: asyncio.Future[None] | None = None
        self._gather_target = 0
        self._closing = False
        self.batches = 0
        """Transactions committed, and their writes (logged at shutdown)."""
        self.writes = 0
        self.failed_batches = 0
        self.listeners: list[Callable[[str], None]] = []
        """Called with each statement's SQL before it runs on PostgreSQL: these
        statements bypass the engine's events, which is how statements are otherwise
        observed (logging, counting)."""

    async def write(self, write: Write) -> Answer:
        """Run ``write`` in the next batch; ``None``: nothing written, the route runs it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Answer] = loop.create_future()
        self._queue.append((write, future))
        if self._gathering is not None and len(self._queue) >= self._gather_target:
            _settle(self._gathering)
        if self._runner is None or self._runner.done():
            self._runner = loop.create_task(self._run())
        return await future

    async def _run(self) -> None:
        """Commit batches until the queue is empty (and, after a round of several
        writes, stays empty for the gather window)."""
        batch: list[tuple[Write, asyncio.Future[Answer]]] = []
        active = 0
        try:
            while True:
                await self._gather(active)
                if not self._queue:
                    return
                batch = self._queue[: self.max_batch]
                del self._queue[: self.max_batch]
                outcomes = await self._commit([write for write, _ in batch])
                active = len(batch) + len(self._queue)
                for (_, future), outcome in zip(batch, outcomes, strict=True):
                    if not future.done():  # its request may have been cancelled
                        future.set_result(outcome)
                batch = []
        finally:
            # Cancelled (the loop is closing): nothing waits forever.
            for _, future in batch:
                if not future.done():
                    future.set_result(None)

    async def _gather(self, active: int) -> bool:
        """Wait, at most ``gather_window``, until ``active`` writes (the last round's)
        are queued; at once when they are, or when the last round had one. Whether it
        waited."""
        target = min(active, self.max_batch)
        if not self.gather_window or target < 2 or len(self._queue) >= target or self._closing:
            return False
        loop = asyncio.get_running_loop()
        self._gathering = gathering = loop.create_future()
        self._gather_target = target
        timer = loop.call_later(self.gather_window, _settle, gathering)
        BATCHES_GATHERED.inc()
        try:
            await gathering
        finally:
            timer.cancel()
            self._gathering = None
        return True

    async def _commit(self, writes: Sequence[Write]) -> list[Answer]:
        try:
            if self.db.is_sqlite:
                async with self.db.session(write=True) as session:
                    done = await record.write_in_session(session, writes)
            else:
                done = await self._commit_pg(writes)
        except Exception:
            self.failed_batches += 1
            PROGRESS_BATCHES_FAILED.inc()
            logger.info(
                "a batch of %s progress writes failed; the route runs each",
                len(writes),
                exc_info=True,
            )
            return [None] * len(writes)
        self.batches += 1
        self.writes += len(writes)
        PROGRESS_BATCHES.inc()
        PROGRESS_BATCH_WRITES.inc(len(writes))
        return [None if o is RUN_BY_ROUTE else o for o in done.outcomes]

    async def _commit_pg(self, writes: Sequence[Write]) -> Written:
        """The batch on the driver's connection (``Database.driver_connection``), each
        statement its own transaction: no session, no BEGIN or COMMIT round trip, no
        SQLAlchemy per statement (those were most of a batch's time). What a session
        does after its commit is done here.

        A batch that answers a task limiting its attempts runs again in one
        transaction of the driver's, in which the ledger holds its teams before it
        counts their attempts (``ledger_pg.NeedsHolding``)."""
        if self.db.row_security:
            done = await self._per_organization(writes, self._commit_acting_for)
        else:
            async with self.db.driver_connection() as driver:
                done = await self._write_on(driver, writes, in_transaction=False)
        record.follow_commit(done, _Committed(self.db))
        return done

    async def _commit_acting_for(
        self, organization_id: uuid.UUID, writes: Sequence[Write]
    ) -> Written:
        """Row-level security: an organization's part of a batch on the driver's
        connection, acting for it (its transactions too: ``tenancy.ActingConnection``)."""
        with tenancy.acting_for(organization_id):
            async with self.db.driver_acting_for(organization_id) as driver:
                return await self._write_on(
                    driver, writes, in_transaction=self.db.statements_share_a_transaction
                )

    async def _write_on(
        self, driver: Any, writes: Sequence[Write], *, in_transaction: bool
    ) -> Written:
        """``ledger_pg.write_batch`` on the driver's connection (``in_transaction``: its
        statements already share one); again in a transaction when it must hold its
        teams."""
        fetch = self._fetcher(driver)
        try:
            return await ledger_pg.write_batch(
                fetch, writes, in_transaction=in_transaction, listeners=self.outbox_listeners
            )
        except ledger_pg.NeedsHolding:
            pass
        async with driver.transaction():
            return await ledger_pg.write_batch(
                fetch, writes, in_transaction=True, listeners=self.outbox_listeners
            )

    async def _per_organization(
        self,
        writes: Sequence[Write],
        commit_part: Callable[[uuid.UUID, Sequence[Write]], Awaitable[Written]],
    ) -> Written:
        """Row-level security: each organization's writes of the batch act for it on their
        own (the policies hide the other organizations' rows from a statement). An
        organization whose part failed is answered by its routes, one write at a time;
        the others' parts stay committed."""
        positions: dict[uuid.UUID, list[int]] = {}
        for position, write in enumerate(writes):
            positions.setdefault(write.org_id, []).append(position)
        outcomes: list[Outcome | Refused] = [RUN_BY_ROUTE] * len(writes)
        versions: dict[uuid.UUID, int] = {}
        moved: dict[uuid.UUID, frozenset[str]] = {}
        completed = withdrawn = recorded_events = 0
        for organization_id, mine in positions.items():
            try:
                done = await commit_part(organization_id, [writes[p] for p in mine])
            except Exception:
                # A part fails as a whole batch does.
                self.failed_batches += 1
                PROGRESS_BATCHES_FAILED.inc()
                logger.info("an organization's part of a progress batch failed", exc_info=True)
                continue
            for position, outcome in zip(mine, done.outcomes, strict=True):
                outcomes[position] = outcome
            versions.update(done.versions)
            moved.update(done.moved)
            completed += done.completed
            withdrawn += done.withdrawn
            recorded_events += done.events
        return Written(outcomes, versions, moved, completed, withdrawn, recorded_events)

    def _fetcher(self, driver: Any) -> ledger_pg.Fetch:
        async def fetch(sql: str, *args: Any) -> Sequence[Any]:
            for listener in self.listeners:
                listener(sql)
            rows: Sequence[Any] = await driver.fetch(sql, *args)
            return rows

        return fetch

    async def close(self) -> None:
        """Let the queued writes finish (at shutdown, after the server stopped taking
        requests); a batch waiting for writers stops waiting."""
        self._closing = True
        if self._gathering is not None:
            _settle(self._gathering)
        runner = self._runner
        if runner is not None and not runner.done():
            await runner
        if self.batches or self.failed_batches:
            logger.info(
                "progress group commit: %s writes in %s transactions (%s failed)",
                self.writes,
                self.batches,
                self.failed_batches,
            )


@dataclass(frozen=True, slots=True)
class _Committed:
    """What follows a batch written outside a session, done at once: it committed."""

    db: Database

    def versions(
        self, bumped: dict[uuid.UUID, int], moved: dict[uuid.UUID, frozenset[str]]
    ) -> None:
        self.db.committed(dict(bumped), moved)

    def events(self) -> None:
        events.announce_committed()

    def count(self, counter: Counter, amount: int) -> None:
        counter.inc(amount)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
