"""The outbox dispatcher: one claim/send/record cycle for every kind of outbound work
(webhook deliveries, xAPI statements, mail, LTI grades). A kind (``Kind``) says only
what its rows are and how one attempt is sent; the cycle, the slots, the leases' start,
the wake-up rule and the hourly purge live here, once.

A pass (``Outbox.run_once``):

1. **Prepare** (``Kind.prepare``): work the kind does before claiming (the webhooks'
   outbox fan-out); its answer says whether there may be more right now.
2. **Record** the outcomes of the attempts finished since the last pass, all of them,
   and **claim** due rows in a batch — both in one write transaction, so that an
   attempt's end costs a share of one transaction. ``FOR UPDATE SKIP LOCKED`` on
   PostgreSQL (the kind's queries), one write lock and one dispatcher of a kind per
   machine on SQLite (``outbound.loop``). Claiming counts the attempt and moves the row's
   ``next_attempt_at`` past the attempt's timeout (a lease: a process that dies
   mid-attempt leaves the row to be sent again once the lease is over).
3. **Send**: an attempt starts, in a task of its own and outside any transaction, as
   soon as a slot of the fairness cap is free for it (``outbound.fairness``: in the
   process, per organization, per receiving host); the pass does not wait for it.

Claims run ahead of the sends: up to ``CLAIM_AHEAD`` times the cap is claimed
(``Outbox.claims``, the same three bounds multiplied), and what is claimed waits in the
process for a slot (``Outbox.waiting``, in claim order). When an attempt ends, the next
claimed attempt that fits its slot starts right there, without a pass: sending never
waits for a transaction, and the pass that the end hurries records the outcomes and
claims the next batch while the sends go on. Only the queue in the process runs
ahead; the cap on attempts in flight is the one ``Slots`` says, and an attempt waits
only for its own organization's and host's slots, never behind another organization's
claimed rows (those wait for their own). The lease covers the wait (``lease``).

The wake-up rule (``Outbox.start``): a commit of the kind's topic in this process (its
rows written, or retried by hand: ``listen``, ``events.on_committed`` of the topic),
the end of an attempt, or the poll (``poll_seconds``: work committed by other
processes). Requests never wait for any of this.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import QueryableAttribute

from questline.config import Settings
from questline.outbound.fairness import Slots
from questline.outbound.loop import PassLoop
from questline.storage import tenancy
from questline.storage.db import Database, utcnow

A = TypeVar("A")
R = TypeVar("R")
S = TypeVar("S")

Listen = Callable[[Callable[[], None]], Callable[[], None]]
"""Subscribes a listener to the commits that wake a dispatcher (``events.on_committed``
for the kind's topic); returns the function that removes it."""

PURGE_EVERY = dt.timedelta(hours=1)
CLAIM_AHEAD = 4
"""How many times the fairness cap a dispatcher may hold claimed (in flight and waiting
for a slot): enough that the sends go on while a transaction records and claims."""


@dataclass(frozen=True, slots=True)
class Slot:
    """Whom an attempt's slots are counted for (``outbound.fairness.Slots``)."""

    organization_id: uuid.UUID
    host: str
    target_id: uuid.UUID


class Leased(Protocol):
    """An outbox row: its attempts counted, its next attempt due at ``next_attempt_at``."""

    attempts: int
    next_attempt_at: dt.datetime


def lease_end(now: dt.datetime, lease: dt.timedelta) -> dt.datetime:
    """When a row claimed ``now`` is due again: past the attempt's timeout (``lease``)
    for each attempt it may wait behind. A claimed row may wait in the process for the
    attempts claimed before it at its organization or host (at most ``CLAIM_AHEAD - 1``
    rounds of the cap, each bounded by the attempt's timeout) before its own: the lease
    lasts that long too, so that no claim (another process's, or this one's) takes it
    meanwhile."""
    return now + lease * CLAIM_AHEAD


def lease(row: Leased, now: dt.datetime, lease: dt.timedelta) -> None:
    """Count a claimed row's attempt and move its next attempt to ``lease_end``: a
    process that dies mid-attempt leaves the row to be sent again once the lease is
    over."""
    row.attempts += 1
    row.next_attempt_at = lease_end(now, lease)


class Kind(Protocol[A, R]):
    """What one kind of outbound work supplies: its rows, its attempts, its outcomes."""

    name: str
    """For the task names and the log (``questline-<name>``)."""

    async def prepare(self) -> bool:
        """Work before the claim (the webhooks' fan-out). True: there may be more now."""
        ...

    async def has_due(self, session: AsyncSession, now: dt.datetime, slots: Slots) -> bool:
        """A cheap read: whether a claim may find anything (an idle pass takes no write
        lock; SQLite has one)."""
        ...

    async def claim(
        self, session: AsyncSession, now: dt.datetime, slots: Slots, claimed: list[A]
    ) -> bool:
        """Due rows claimed into the free ``slots``, in the engine's write transaction:
        each attempt appended to ``claimed`` as its slots are taken (``slots.take``), so
        that they are given back if the transaction fails. True when there may be more
        due right now."""
        ...

    def slot(self, attempt: A) -> Slot: ...

    async def send(self, attempt: A) -> R:
        """One attempt, outside any transaction; what it saw (never raises for the
        receiver's failures)."""
        ...

    def crashed(self, attempt: A, exc: Exception) -> R:
        """The outcome of an attempt that raised (a bug, not the receiver): recorded as a
        failed attempt, so that the lease does not hide it."""
        ...

    async def record(self, session: AsyncSession, outcomes: Sequence[R], now: dt.datetime) -> None:
        """The outcomes written, in the engine's write transaction."""
        ...

    async def purge(self, session: AsyncSession, now: dt.datetime) -> None:
        """Rows past their retention deleted (once an hour)."""
        ...

    async def close(self) -> None:
        """Let go of what the kind holds (an HTTP pool)."""
        ...


async def delete_settled(
    session: AsyncSession,
    settings: Settings,
    now: dt.datetime,
    created_at: QueryableAttribute[dt.datetime],
    status: QueryableAttribute[S],
    pending: S,
) -> dt.datetime:
    """A kind's ``purge``: delete its rows made before the events' retention
    (``QUESTLINE_EVENTS_RETENTION_DAYS``) that are no longer ``pending``; a pending row
    stays however old. Returns that horizon, for a kind that purges more."""
    horizon = now - dt.timedelta(days=settings.events_retention_days)
    await session.execute(delete(created_at.class_).where(created_at < horizon, status != pending))
    return horizon


class Outbox(Generic[A, R]):
    """One kind's dispatcher in one process."""

    def __init__(
        self,
        kind: Kind[A, R],
        *,
        settings: Settings,
        db: Database,
        slots: Slots,
        poll_seconds: float,
        lock_name: str | None,
        logger: logging.Logger,
        listen: Listen | None = None,
    ) -> None:
        """``lock_name``: on SQLite, the file lock in the data directory that keeps one
        dispatcher of the kind per machine (None: every process dispatches); ``listen``:
        the commits of this process that wake it (the kind's rows written or retried by
        hand)."""
        self.kind = kind
        self.db = db
        self.slots = slots
        """The fairness cap: attempts in flight."""
        self.claims = Slots.of(
            slots.total * CLAIM_AHEAD,
            per_organization=slots.per_organization * CLAIM_AHEAD,
            per_host=slots.per_host * CLAIM_AHEAD,
        )
        """Attempts claimed and not ended (in flight or waiting for a slot): what the
        kind's claim fills."""
        self.waiting: list[A] = []
        """Claimed attempts waiting for a slot of the cap, in claim order."""
        self.logger = logger
        self._sending: set[asyncio.Task[None]] = set()
        self._finished: list[R] = []
        self._last_purge: dt.datetime | None = None
        self._poll_seconds = poll_seconds
        self._last_prepare = 0.0
        self._listen = listen
        self._remove_listener: Callable[[], None] | None = None
        self.loop = PassLoop(
            name=f"questline-{kind.name}",
            run_once=self.run_once,
            poll_seconds=poll_seconds,
            lock_path=settings.ensure_data_dir() / lock_name
            if lock_name is not None and db.is_sqlite
            else None,
            logger=logger,
        )

    # Life cycle -----------------------------------------------------------------------

    def start(self) -> None:
        if self._listen is not None:
            self._remove_listener = self._listen(
                self.loop.wake_threadsafe(asyncio.get_running_loop())
            )
        self.loop.start()

    def wake(self) -> None:
        self.loop.wake()

    async def stop(self) -> None:
        if self._remove_listener is not None:
            self._remove_listener()
            self._remove_listener = None
        await self.loop.stop()
        await self.close()

    async def close(self) -> None:
        """Cancel the attempts in flight and drop those waiting (their leases bring them
        back) and let go."""
        waiting, self.waiting = self.waiting, []
        for attempt in waiting:
            self._give_back(self.claims, attempt)
        sending = list(self._sending)
        for task in sending:
            task.cancel()
        await asyncio.gather(*sending, return_exceptions=True)
        await self.kind.close()

    @property
    def in_flight(self) -> int:
        """Attempts started and not finished."""
        return len(self._sending)

    @tenancy.serves_every_organization
    async def settle(self) -> None:
        """Wait for every attempt claimed (in flight or waiting) and record the outcomes
        (tests, tools)."""
        self._start_waiting()
        while self._sending:
            await asyncio.gather(*list(self._sending), return_exceptions=True)
            self._start_waiting()
        await self.record_finished()

    # One pass -------------------------------------------------------------------------

    @tenancy.serves_every_organization
    async def run_once(self) -> bool:
        """Prepare, record what finished and claim in one transaction, and start sending
        (without waiting for the attempts). True when there may be more work right
        now."""
        more = False
        if self._prepare_due():
            more = await self.kind.prepare()
        attempts, full = await self.record_and_claim()
        self.waiting.extend(attempts)
        self._start_waiting()
        await self._purge_now_and_then()
        return more or full

    def _prepare_due(self) -> bool:
        """Not for a pass only an attempt's end started (nothing new was committed),
        unless the poll's interval has passed without one while attempts kept ending."""
        now = time.monotonic()
        if self.loop.only_hurried and now - self._last_prepare < self._poll_seconds:
            return False
        self._last_prepare = now
        return True

    async def record_finished(self) -> None:
        """Record the outcomes of the attempts finished, claiming nothing (tests)."""
        await self.record_and_claim(claim=False)

    async def record_and_claim(self, *, claim: bool = True) -> tuple[list[A], bool]:
        """The outcomes of every attempt finished recorded, and due rows claimed in a
        batch (as many as ``claims`` has room for), in one write transaction. The claims
        are taken for the attempts returned, which the caller must queue for their
        slots (``waiting``); True when there may be more due."""
        outcomes, self._finished = self._finished, []
        claim = claim and self.claims.room() > 0
        now = utcnow()
        if not outcomes:
            if not claim:
                return [], False
            async with self.db.session(write=False) as session:
                if not await self.kind.has_due(session, now, self.claims):
                    return [], False
        claimed: list[A] = []
        more = False
        try:
            async with self.db.session(write=True) as session:
                if outcomes:
                    await self.kind.record(session, outcomes, now)
                if claim:
                    more = await self.kind.claim(session, now, self.claims, claimed)
        except BaseException:
            # Nothing was written: the outcomes wait for the next pass, the rows for
            # the next claim.
            self._finished[:0] = outcomes
            for attempt in claimed:
                self._give_back(self.claims, attempt)
            raise
        return claimed, more and self.claims.room() > 0

    def _give_back(self, slots: Slots, attempt: A) -> None:
        slot = self.kind.slot(attempt)
        slots.give_back(slot.organization_id, slot.host, slot.target_id)

    def _start_waiting(self) -> None:
        """Start every waiting attempt that a slot of the cap is free for, in claim
        order (one whose organization or host is full waits; the ones behind it of other
        organizations and hosts do not)."""
        if not self.waiting:
            return
        still: list[A] = []
        for attempt in self.waiting:
            slot = self.kind.slot(attempt)
            if (
                self.slots.room() > 0
                and not self.slots.organization_full(slot.organization_id)
                and not self.slots.host_full(slot.host)
            ):
                self.slots.take(slot.organization_id, slot.host, slot.target_id)
                self._start(attempt)
            else:
                still.append(attempt)
        self.waiting = still

    def _start(self, attempt: A) -> None:
        task = asyncio.create_task(self._send(attempt), name=f"questline-{self.kind.name}-attempt")
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, attempt: A) -> None:
        try:
            outcome = await self.kind.send(attempt)
        except Exception as exc:  # a bug, not the receiver: the lease would hide it
            self.logger.exception("%s attempt failed unexpectedly", self.kind.name)
            outcome = self.kind.crashed(attempt, exc)
        finally:
            self._give_back(self.slots, attempt)
            self._give_back(self.claims, attempt)
        self._finished.append(outcome)
        # Its slot is filled now from what is claimed, not by a pass: the next attempt
        # does not wait for a transaction.
        self._start_waiting()
        if self._runs_low(self.kind.slot(attempt).organization_id):
            self.loop.hurry()

    def _runs_low(self, organization_id: uuid.UUID) -> bool:
        """Whether an attempt's end hurries a pass (no coalescing wait of new work) to
        record the outcomes and claim the next batch: when what is claimed for its
        organization no longer fills a round of its cap, or when nothing else is in
        flight or waiting (the last outcomes get recorded). Until then the outcomes
        wait, and one pass records and claims a round's worth at once: a pass costs
        about as much for one row as for a round's."""
        if len(self._sending) <= 1 and not self.waiting:
            return True
        queued = sum(
            1 for a in self.waiting if self.kind.slot(a).organization_id == organization_id
        )
        return queued < self.slots.per_organization

    async def _purge_now_and_then(self) -> None:
        now = utcnow()
        if self._last_purge is not None and now - self._last_purge < PURGE_EVERY:
            return
        self._last_purge = now
        async with self.db.session(write=True) as session:
            await self.kind.purge(session, now)
