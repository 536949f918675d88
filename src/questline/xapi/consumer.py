"""The outbox consumer: the events that become statements, taken from the fan-out
(``events.fanout``) and handed to the builder (``building``) in the fan-out's
transaction."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import events
from questline.config import Settings
from questline.events import fanout
from questline.events.models import Event
from questline.xapi.building import ADJUSTMENT_EVENTS, ATTEMPT_EVENT, StatementBuilder
from questline.xapi.models import LrsConnection
from questline.xapi.statements import Iris

EVENT_TYPES = (
    frozenset({"progress.completed", "progress.withdrawn", ATTEMPT_EVENT}) | ADJUSTMENT_EVENTS
)
"""The events that become statements (docs/platforms.md, "Statements")."""


XAPI_TOPIC = "xapi"
"""``events.on_committed``'s topic of a fan-out that made statements: it wakes this
process's statement dispatcher."""


def consumers(settings: Settings) -> tuple[fanout.Consumer, ...]:
    """The consumer of the outbox (``events.fanout``) that makes statements of its
    events, with the IRIs of ``settings.public_url`` (none without it). The application
    lists it once (``questline.app.outbox_consumers``); a fan-out that committed
    statements announces ``XAPI_TOPIC`` (the dispatcher's wake-up)."""
    if settings.public_url is None:  # no IRIs to give: PUT /organization/xapi says so
        return ()
    iris = Iris(settings.public_url)

    async def take(session: AsyncSession, pending: Sequence[fanout.PendingEvent]) -> set[uuid.UUID]:
        return await take_events(session, pending, iris)

    return (
        fanout.Consumer(
            name="xapi",
            take=take,
            listens="EXISTS (SELECT 1 FROM xapi_lrs AS l WHERE l.organization_id = {organization})",
            taken=functools.partial(events.announce_committed, XAPI_TOPIC),
        ),
    )


async def take_events(
    session: AsyncSession, pending: Sequence[fanout.PendingEvent], iris: Iris
) -> set[uuid.UUID]:
    relevant = [e for e in pending if e.type in EVENT_TYPES]
    if not relevant:
        return set()
    since = dict(
        (
            await session.execute(
                select(LrsConnection.organization_id, LrsConnection.created_at).where(
                    LrsConnection.organization_id.in_({e.organization_id for e in relevant})
                )
            )
        ).all()
    )
    # Only the events after the LRS was registered: an LRS added today does not receive
    # the events still waiting in the outbox from before.
    wanted = [
        e
        for e in relevant
        if e.organization_id in since and e.created_at >= since[e.organization_id]
    ]
    if not wanted:
        return set()
    payloads = {
        row.id: row
        for row in (
            await session.execute(
                select(Event.organization_id, Event.id, Event.type, Event.payload, Event.created_at)
                .where(
                    Event.organization_id.in_({e.organization_id for e in wanted}),
                    Event.id.in_([e.id for e in wanted]),
                )
                .order_by(Event.id)
            )
        ).all()
    }
    builder = StatementBuilder(session, iris)
    taken: set[uuid.UUID] = set()
    for event in wanted:
        row = payloads.get(event.id)
        if row is None or not isinstance(row.payload, dict):
            continue
        made = await builder.statements_of(row)
        if made:
            taken.add(event.id)
    return taken
