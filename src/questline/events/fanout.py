"""Fanning the outbox out: pending events → the rows of every consumer that wants them.

A consumer (webhooks: one delivery per subscribed webhook; xAPI: one statement per
event of an organization with an LRS) is a ``take`` function; one pass reads a
batch of pending events (locked: ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, the one
write lock on SQLite), hands them to every consumer in the same transaction, then
deletes the events nobody took and marks the others done. A consumer's rows are
therefore committed with the event's ``pending = false``, or not at all: an event is
fanned out once, to everyone, whichever process runs the pass (the webhook dispatcher
of every process with ``webhooks_dispatcher_enabled`` does).

The consumers are an argument of every pass: the application builds them once
(``questline.app.outbox_consumers``: every consumer of this build) and hands them to the
process's webhook dispatcher, which runs the passes, so that no pass deletes an event a
consumer of this build wants. This package sits below the consumers and imports none.

Each consumer also says, in SQL, which organizations it may take events of at all
(``Consumer.listens``: those with a webhook, an LRS, a gradebook). Every write asks
``Listeners`` before it records an event, in a statement it runs anyway (the progress
ledger's look-up, ``events.record``'s insert), and records none for an organization
none listens to: that event would only be read by a pass and deleted. The boundary is
that question: a change that asked before a consumer's row was committed records no
event (docs/webhooks.md).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Delete, Update, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from questline.events.models import Event
from questline.storage import tenancy
from questline.storage.db import Database
from questline.storage.many_rows import one_of

FANOUT_BATCH = 200


class PendingEvent(Protocol):
    """What a consumer is handed: an event's row without its payload (decoding large
    payloads would hold the event loop; a consumer that needs them reads its own)."""

    @property
    def organization_id(self) -> uuid.UUID: ...
    @property
    def id(self) -> uuid.UUID: ...
    @property
    def type(self) -> str: ...
    @property
    def created_at(self) -> dt.datetime: ...


Take = Callable[[AsyncSession, Sequence[PendingEvent]], Awaitable[set[uuid.UUID]]]
"""Insert the consumer's rows for the events it wants; return the ids of those events."""


@dataclass(frozen=True, slots=True)
class Consumer:
    name: str
    take: Take
    listens: str
    """SQL, true when the organization ``{organization}`` (an SQL expression) has where
    this consumer delivers; false only when ``take`` would take none of its events."""
    taken: Callable[[], None] | None = None
    """Called after a pass committed rows of this consumer (wake its dispatcher)."""


@dataclass(frozen=True, slots=True)
class Listeners:
    """Whether any consumer of this build listens to an organization, as SQL for a
    write's look-up (``Listeners.of``; ``EVERYONE`` where nobody asked the consumers:
    every event is recorded and the pass decides)."""

    conditions: tuple[str, ...] | None

    @classmethod
    def of(cls, consumers: Sequence[Consumer]) -> Listeners:
        return cls(tuple(consumer.listens for consumer in consumers))

    def sql(self, organization: str) -> str:
        """True when some consumer listens to ``organization`` (an SQL expression)."""
        if self.conditions is None:
            return "1 = 1"
        if not self.conditions:
            return "1 = 0"
        return " OR ".join(
            f"({condition.format(organization=organization)})" for condition in self.conditions
        )


EVERYONE = Listeners(None)

LISTENERS = "questline_outbox_listeners"
"""The key of a session's ``info`` that holds the build's ``Listeners`` (the application
gives it to every session: ``Database.give_sessions``); ``events.record`` then records
no event for an organization none listens to. A session without it records every
event."""


@tenancy.serves_every_organization
async def fan_out(db: Database, consumers: Sequence[Consumer]) -> int:
    """One pass for ``consumers`` (each handed the events in this order): the number of
    pending events handled (``FANOUT_BATCH`` at most). An event none of them takes is
    deleted."""
    # On SQLite a cheap read first (an idle pass takes no write lock). Not on
    # PostgreSQL: there, under a write load, this scan of the pending events costs
    # far more than the locking select below (docs/performance.md).
    if db.is_sqlite:
        async with db.session(write=False) as session:
            if (
                await session.scalar(select(Event.id).where(Event.pending.is_(True)).limit(1))
                is None
            ):
                return 0
    took: set[str] = set()
    async with db.session(write=True) as session:
        query = (
            # Rows, not ORM objects (under a write load this pass runs for every batch
            # of writes), and not the payload.
            select(Event.organization_id, Event.id, Event.type, Event.created_at)
            .where(Event.pending.is_(True))
            .order_by(Event.id)
            .limit(FANOUT_BATCH)
        )
        if not db.is_sqlite:
            query = query.with_for_update(skip_locked=True)
        pending: Sequence[Any] = list((await session.execute(query)).all())
        if not pending:
            return 0
        sent: set[uuid.UUID] = set()
        for consumer in consumers:
            ids = await consumer.take(session, pending)
            if ids:
                took.add(consumer.name)
                sent |= ids
        # An event nobody receives is deleted: nothing will read it again, and a
        # delete writes no new row version (marking it done rewrote the row and its
        # three index entries: most of a pass's cost under a write load, where most
        # organizations have no webhook). The others are marked done.
        await _finish(session, delete(Event), [e for e in pending if e.id not in sent])
        await _finish(
            session, update(Event).values(pending=False), [e for e in pending if e.id in sent]
        )
    for consumer in consumers:
        if consumer.name in took and consumer.taken is not None:
            consumer.taken()
    return len(pending)


async def _finish(session: AsyncSession, statement: Delete | Update, events: Sequence[Any]) -> None:
    """``statement`` (a delete or update of ``Event``) for ``events``, in one statement.
    The sets bound as one parameter each: one statement text whatever their size, so
    PostgreSQL plans it once (an IN list of each length is a new statement, planned anew
    under a write load: docs/performance.md)."""
    if not events:
        return
    await session.execute(
        statement.where(
            one_of(session, Event.organization_id, list({e.organization_id for e in events})),
            one_of(session, Event.id, [e.id for e in events]),
        ).execution_options(synchronize_session=False)
    )
