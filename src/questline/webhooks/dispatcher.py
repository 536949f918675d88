"""The delivery dispatcher: outbox events → signed HTTP POSTs, at least once.

Every server process runs one (``Dispatcher.start`` in the app's lifespan): the outbox
dispatcher (``outbound.outbox``) with the webhooks' kind (``Deliveries``). A pass:

1. **Fan out** pending events (``events.fanout``: for every consumer of the outbox,
   here one delivery row per subscribed, enabled webhook, and the xAPI statements of
   organizations with an LRS), mark them done and delete those that nobody receives —
   one write transaction.
2. **Claim** due deliveries, oldest due first, but only as many as may start now
   (``questline.outbound.fairness``: free slots in the process, in the delivery's
   organization and at its receiving host); deliveries of a full organization or
   host are left for a later pass, unclaimed. ``FOR UPDATE SKIP LOCKED`` on
   PostgreSQL, so processes never take the same row; on SQLite the write transaction
   holds the database's one write lock, and a file lock in the data directory keeps
   one dispatcher per machine. Claiming counts the attempt and moves
   ``next_attempt_at`` past the attempt's timeout (a lease): a process that dies
   mid-attempt leaves the delivery to be retried, with the same ``webhook-id``, once
   the lease is over.
3. **Send**: each claimed attempt starts at once in a task of its own, outside any
   transaction, bounded by ``webhooks_timeout_seconds``, to the address checked just
   before. The pass does not wait for them: the next pass fans out and claims while
   slow attempts run, so a receiver that never answers holds its own slots, not the
   dispatcher.
4. **Record** the outcomes of the attempts finished since the last pass, in the
   transaction that claims the next (an attempt's end starts a pass at once, without
   the coalescing wait, and that pass does not fan out): 2xx succeeds; anything else waits
   ``base * 2^(attempts-1)`` (+0 to 25 % jitter) or fails for good after
   ``webhooks_max_attempts``; a webhook failing for ``webhooks_disable_after_seconds``
   is disabled, with the reason in ``DisabledReason``.

A commit that recorded events wakes this process's dispatcher (``outbound.loop``), which
waits ``COALESCE_SECONDS`` before its pass so that a burst of writes is fanned out in one
transaction instead of one each (a pass per event is a second write transaction for
every write, and on SQLite a second turn of the one write lock: docs/performance.md,
"Writes"); work committed by other processes is found by polling every
``webhooks_poll_seconds``. Requests never wait for any of this.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Select, and_, bindparam, case, delete, insert, not_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from questline import events
from questline.config import Settings
from questline.events import fanout
from questline.events.models import PLATFORM_ORG, Event
from questline.outbound import outbox, retry
from questline.outbound.fairness import Slots
from questline.outbound.outbox import Outbox, Slot, delete_settled
from questline.storage import sealing
from questline.storage.db import Database, new_id, utcnow
from questline.storage.many_rows import one_of
from questline.timeformat import rfc3339
from questline.webhooks.models import DeliveryStatus, Webhook, WebhookDelivery
from questline.webhooks.sending import (
    Attempt,
    Outcome,
    Sender,
    body_of,
    message_id,
    receiving_host,
)
from questline.webhooks.service import secret_sealer, signing_secrets

logger = logging.getLogger("questline.webhooks")

CLAIM_BATCH = 100
CLAIM_ROUNDS = 8
"""Claim queries in one pass at most: each round leaves out the organizations and
hosts the rounds before it found full."""
LEASE_MARGIN = dt.timedelta(seconds=30)
UNREADABLE_SECRET = (
    "The webhook's signing secret cannot be read (the service's signing secret changed): "
    "rotate it with POST /webhook/{id}/secret, then retry."
)


def backoff(settings: Settings, attempts: int) -> dt.timedelta:
    """The wait after the ``attempts``-th failed attempt: base, 2 x base, 4 x base, ..."""
    return retry.backoff(settings.webhooks_retry_base_seconds, attempts)


class Deliveries:
    """The webhooks' kind of outbound work (``outbound.outbox.Kind``): delivery rows,
    one signed POST an attempt."""

    name = "webhooks"

    def __init__(
        self, settings: Settings, db: Database, consumers: Sequence[fanout.Consumer]
    ) -> None:
        self.settings = settings
        self.db = db
        self.consumers = tuple(consumers)
        """Every consumer of the outbox of this build (``questline.app.outbox_consumers``)."""
        self.sender = Sender(settings)
        self.sealer = secret_sealer(settings)

    async def prepare(self) -> bool:
        return await self.fan_out() >= fanout.FANOUT_BATCH

    async def send(self, attempt: Attempt) -> Outcome:
        return await self.sender.send(attempt)

    def crashed(self, attempt: Attempt, exc: Exception) -> Outcome:
        return Outcome(attempt, None, f"Internal error: {type(exc).__name__}")

    def slot(self, attempt: Attempt) -> Slot:
        return Slot(attempt.organization_id, attempt.host, attempt.webhook_id)

    async def close(self) -> None:
        await self.sender.close()

    def _locking(self, query: Any) -> Any:
        return query if self.db.is_sqlite else query.with_for_update(skip_locked=True)

    async def fan_out(self) -> int:
        """One pass of the outbox's fan-out (``events.fanout``): every consumer's rows,
        this module's webhook deliveries among them."""
        return await fanout.fan_out(self.db, self.consumers)

    def _due(
        self,
        session: AsyncSession,
        query: Select[*tuple[Any, ...]],
        now: dt.datetime,
        organizations: set[uuid.UUID],
        webhooks: set[uuid.UUID],
    ) -> Select[*tuple[Any, ...]]:
        """Due deliveries, leaving out full organizations and webhooks of full hosts."""
        query = query.where(
            WebhookDelivery.status == DeliveryStatus.PENDING,
            WebhookDelivery.next_attempt_at <= now,
        )
        if organizations:
            query = query.where(
                not_(one_of(session, WebhookDelivery.organization_id, list(organizations)))
            )
        if webhooks:
            query = query.where(not_(one_of(session, WebhookDelivery.webhook_id, list(webhooks))))
        return query

    async def has_due(self, session: AsyncSession, now: dt.datetime, slots: Slots) -> bool:
        query = self._due(
            session,
            select(WebhookDelivery.id),
            now,
            slots.full_organizations(),
            slots.targets_of_full_hosts(),
        )
        return await session.scalar(query.limit(1)) is not None

    async def claim(
        self, session: AsyncSession, now: dt.datetime, slots: Slots, claimed: list[Attempt]
    ) -> bool:
        """Due deliveries claimed into the free slots, oldest due first; True when the
        rounds ran out with slots still free (there may be more right now)."""
        lease = dt.timedelta(seconds=self.settings.webhooks_timeout_seconds) + LEASE_MARGIN
        full_organizations = slots.full_organizations()
        full_host_webhooks = slots.targets_of_full_hosts()
        for _ in range(CLAIM_ROUNDS):
            room = slots.room()
            if room <= 0:
                break
            # No more rows locked than one organization may take: rows locked and
            # left (their organization full) are skipped by the claims of other
            # processes until this transaction ends.
            limit = min(CLAIM_BATCH, room, slots.per_organization)
            due = list(
                (
                    await session.execute(
                        self._locking(
                            self._due(
                                session,
                                select(*DUE_COLUMNS),
                                now,
                                full_organizations,
                                full_host_webhooks,
                            )
                            .order_by(WebhookDelivery.next_attempt_at)
                            .limit(limit)
                        )
                    )
                ).all()
            )
            if not due:
                break
            claim = _Claim()
            skipped = self._claim_rows(
                slots,
                due=due,
                hooks=await _webhooks(session, due),
                found=await _events(session, due),
                now=now,
                claim=claim,
                attempts=claimed,
                full_organizations=full_organizations,
                full_host_webhooks=full_host_webhooks,
            )
            # Written before the next round's query, which must not see them due.
            await claim.write(session, now, outbox.lease_end(now, lease))
            if not skipped and len(due) < limit:
                break  # every due delivery was seen
        else:
            return slots.room() > 0
        return False

    def _claim_rows(
        self,
        slots: Slots,
        *,
        due: Sequence[Any],
        hooks: dict[tuple[uuid.UUID, uuid.UUID], Webhook],
        found: dict[uuid.UUID, Any],
        now: dt.datetime,
        claim: _Claim,
        attempts: list[Attempt],
        full_organizations: set[uuid.UUID],
        full_host_webhooks: set[uuid.UUID],
    ) -> bool:
        """Claim what fits of one round's rows (``DUE_COLUMNS``) into ``claim``; True
        when some were left for want of a slot (the next round leaves their
        organization or webhook out)."""
        skipped = False
        for delivery in due:
            hook = hooks.get((delivery.organization_id, delivery.webhook_id))
            event = found.get(delivery.event_id)
            if hook is None or not hook.enabled or event is None:
                claim.fail(
                    delivery,
                    "The webhook is disabled." if event is not None else "The event expired.",
                )
                continue
            host = receiving_host(hook.url)
            if slots.organization_full(delivery.organization_id):
                full_organizations.add(delivery.organization_id)
                skipped = True
                continue
            if slots.host_full(host):
                full_host_webhooks.add(hook.id)
                skipped = True
                continue
            if slots.room() <= 0:
                break
            try:
                secrets = signing_secrets(self.sealer, hook, now)
            except sealing.Unreadable:
                claim.fail(delivery, UNREADABLE_SECRET)
                continue
            slots.take(delivery.organization_id, host, hook.id)
            claim.lease(delivery)
            attempts.append(
                Attempt(
                    organization_id=delivery.organization_id,
                    delivery_id=delivery.id,
                    generation=delivery.generation,
                    webhook_id=hook.id,
                    url=hook.url,
                    host=host,
                    secrets=secrets,
                    msg_id=message_id(event.id),
                    body=body_of(event),
                )
            )
        return skipped

    async def record(
        self, session: AsyncSession, outcomes: Sequence[Outcome], now: dt.datetime
    ) -> None:
        if all(o.ok for o in outcomes):
            await _record_successes(session, outcomes, now)
            return
        keys = sorted({(o.attempt.organization_id, o.attempt.webhook_id) for o in outcomes})
        hooks = {
            (h.organization_id, h.id): h
            for h in (
                await session.scalars(
                    _lock(
                        select(Webhook).where(
                            or_(
                                *(
                                    and_(Webhook.organization_id == o, Webhook.id == i)
                                    for o, i in keys
                                )
                            )
                        ),
                        self.db.is_sqlite,
                    )
                )
            ).all()
        }
        # Locked (PostgreSQL) so that a manual retry committing meanwhile either
        # comes first, and its generation is seen here, or waits for this record.
        deliveries = {
            d.id: d
            for d in (
                await session.scalars(
                    _lock(
                        select(WebhookDelivery)
                        .where(
                            WebhookDelivery.organization_id.in_(
                                {o.attempt.organization_id for o in outcomes}
                            ),
                            WebhookDelivery.id.in_([o.attempt.delivery_id for o in outcomes]),
                        )
                        .execution_options(populate_existing=True),
                        self.db.is_sqlite,
                    )
                )
            ).all()
        }
        for outcome in outcomes:
            attempt = outcome.attempt
            delivery = deliveries.get(attempt.delivery_id)
            hook = hooks.get((attempt.organization_id, attempt.webhook_id))
            if delivery is None or hook is None:
                continue  # deleted meanwhile
            if delivery.generation != attempt.generation:
                # Retried since this attempt was claimed: the retry's attempt is
                # still owed, so the row stays due; only what was seen is noted.
                _note(delivery, outcome, now)
                continue
            self._apply(delivery, hook, outcome, now)

    def _apply(
        self, delivery: WebhookDelivery, hook: Webhook, outcome: Outcome, now: dt.datetime
    ) -> None:
        _note(delivery, outcome, now)
        if outcome.ok:
            delivery.status = DeliveryStatus.SUCCEEDED
            hook.failing_since = None
            return
        if hook.failing_since is None:
            hook.failing_since = now
        failing_for = (now - hook.failing_since).total_seconds()
        if hook.enabled and failing_for >= self.settings.webhooks_disable_after_seconds:
            hook.enabled = False
            hook.disabled_reason = (
                f"Disabled at {rfc3339(now)}: every delivery failed since "
                f"{rfc3339(hook.failing_since)}. Fix the receiver, then PATCH Enabled=true."
            )
            hook.updated_at = now
            logger.warning(
                "webhook disabled after failing since %s",
                rfc3339(hook.failing_since),
                extra={"webhook_id": str(hook.id), "organization_id": str(hook.organization_id)},
            )
        if not hook.enabled or delivery.attempts >= self.settings.webhooks_max_attempts:
            delivery.status = DeliveryStatus.FAILED
        else:
            delivery.next_attempt_at = now + backoff(self.settings, delivery.attempts)

    async def purge(self, session: AsyncSession, now: dt.datetime) -> None:
        horizon = await delete_settled(
            session,
            self.settings,
            now,
            WebhookDelivery.created_at,
            WebhookDelivery.status,
            DeliveryStatus.PENDING,
        )
        await session.execute(
            delete(Event).where(Event.created_at < horizon, Event.pending.is_(False))
        )


class Dispatcher(Outbox[Attempt, Outcome]):
    """The webhooks' outbox dispatcher (``outbound.outbox``), woken by every commit
    that recorded events (a manual retry notes one too). Its passes fan the outbox out
    to ``consumers``: every consumer of the build, this module's ``CONSUMER`` among them."""

    def __init__(
        self, settings: Settings, db: Database, *, consumers: Sequence[fanout.Consumer]
    ) -> None:
        self.deliveries = Deliveries(settings, db, consumers)
        super().__init__(
            self.deliveries,
            settings=settings,
            db=db,
            slots=Slots.of(
                settings.webhooks_concurrency,
                per_organization=settings.webhooks_concurrency_per_organization,
                per_host=settings.webhooks_concurrency_per_host,
            ),
            poll_seconds=settings.webhooks_poll_seconds,
            lock_name="webhooks-dispatcher.lock",
            logger=logger,
            listen=events.on_committed,
        )

    async def fan_out(self) -> int:
        return await self.deliveries.fan_out()


def _note(delivery: WebhookDelivery, outcome: Outcome, now: dt.datetime) -> None:
    """What an attempt saw: the answer's status code, or why there was none."""
    delivery.last_status_code = outcome.status_code
    delivery.last_attempt_at = now
    delivery.last_error = (
        None if outcome.ok else (outcome.error or f"The receiver answered {outcome.status_code}.")
    )


async def _take_for_webhooks(
    session: AsyncSession, pending: Sequence[fanout.PendingEvent]
) -> set[uuid.UUID]:
    """The outbox consumer: one delivery per event and subscribed, enabled webhook
    (created after the webhook)."""
    hooks = await _subscribers(session, {e.organization_id for e in pending})
    now = utcnow()
    rows = [
        {
            "organization_id": hook.organization_id,
            "id": new_id(),
            "webhook_id": hook.id,
            "event_id": event.id,
            "event_type": event.type,
            "status": DeliveryStatus.PENDING,
            "attempts": 0,
            "next_attempt_at": now,
            "created_at": now,
        }
        for event in pending
        for hook in hooks
        if event.type in hook.events
        and event.organization_id in (hook.organization_id, PLATFORM_ORG)
        and event.created_at >= hook.created_at
    ]
    if rows:
        await session.execute(insert(WebhookDelivery), rows)
    sent: set[uuid.UUID] = {row["event_id"] for row in rows}  # type: ignore[misc]
    return sent


CONSUMER = fanout.Consumer(
    name="webhooks",
    take=_take_for_webhooks,
    listens="EXISTS (SELECT 1 FROM webhooks AS h "
    "WHERE h.organization_id = {organization} AND h.enabled)",
)
"""The webhooks' consumer of the outbox (``questline.app.outbox_consumers`` lists it)."""


def _lock(query: Any, is_sqlite: bool) -> Any:
    return query if is_sqlite else query.with_for_update()


async def _subscribers(session: AsyncSession, org_ids: set[uuid.UUID]) -> list[Webhook]:
    query = select(Webhook).where(Webhook.enabled.is_(True))
    if PLATFORM_ORG not in org_ids:
        query = query.where(Webhook.organization_id.in_(org_ids))
    return list((await session.scalars(query)).all())


DUE_COLUMNS = (
    WebhookDelivery.organization_id,
    WebhookDelivery.id,
    WebhookDelivery.webhook_id,
    WebhookDelivery.event_id,
    WebhookDelivery.generation,
)
"""What a claim reads of a due delivery (rows, not entities: a claim writes its changes
in two statements, ``_Claim.write``)."""

_DELIVERIES = WebhookDelivery.__table__
_HOOKS = Webhook.__table__


class _Claim:
    """One claim round's changes, written in a statement each: the deliveries leased
    (their attempt counted, due again at the lease's end) and those failed for good
    (their webhook disabled or gone, their event expired, their secret unreadable)."""

    def __init__(self) -> None:
        self.leased: list[dict[str, Any]] = []
        self.failed: list[dict[str, Any]] = []

    def lease(self, delivery: Any) -> None:
        self.leased.append({"b_org": delivery.organization_id, "b_id": delivery.id})

    def fail(self, delivery: Any, error: str) -> None:
        self.failed.append(
            {"b_org": delivery.organization_id, "b_id": delivery.id, "b_error": error}
        )

    async def write(self, session: AsyncSession, now: dt.datetime, due: dt.datetime) -> None:
        connection = await session.connection()
        if self.leased:
            await connection.execute(
                _by_key(_DELIVERIES).values(
                    attempts=_DELIVERIES.c.attempts + 1,
                    next_attempt_at=due,
                    last_attempt_at=now,
                ),
                self.leased,
            )
        if self.failed:
            await connection.execute(
                _by_key(_DELIVERIES).values(
                    status=DeliveryStatus.FAILED, last_error=bindparam("b_error")
                ),
                self.failed,
            )


def _by_key(table: Any) -> Any:
    """An UPDATE of ``table``'s row by its key, run once per parameter set."""
    return update(table).where(
        table.c.organization_id == bindparam("b_org"), table.c.id == bindparam("b_id")
    )


async def _record_successes(
    session: AsyncSession, outcomes: Sequence[Outcome], now: dt.datetime
) -> None:
    """Outcomes that are all 2xx, in two statements: each delivery succeeded (noted
    only, and left due, when a manual retry bumped its generation since the claim: the
    retry's attempt is still owed), and each webhook is no longer failing. Each
    statement locks the rows it writes, so a retry committing meanwhile either came
    first, and its generation is seen here, or waits for this record."""
    connection = await session.connection()
    await connection.execute(
        _by_key(_DELIVERIES).values(
            status=case(
                # The stored value, as the column's type writes it (a bare enum member
                # would be bound by its name).
                (
                    _DELIVERIES.c.generation == bindparam("b_generation"),
                    DeliveryStatus.SUCCEEDED.value,
                ),
                else_=_DELIVERIES.c.status,
            ),
            last_status_code=bindparam("b_code"),
            last_attempt_at=now,
            last_error=None,
        ),
        [
            {
                "b_org": o.attempt.organization_id,
                "b_id": o.attempt.delivery_id,
                "b_generation": o.attempt.generation,
                "b_code": o.status_code,
            }
            for o in outcomes
        ],
    )
    hooks = sorted({(o.attempt.organization_id, o.attempt.webhook_id) for o in outcomes})
    await connection.execute(
        _by_key(_HOOKS).where(_HOOKS.c.failing_since.is_not(None)).values(failing_since=None),
        [{"b_org": org, "b_id": hook} for org, hook in hooks],
    )


async def _webhooks(
    session: AsyncSession, due: Sequence[Any]
) -> dict[tuple[uuid.UUID, uuid.UUID], Webhook]:
    ids = {d.webhook_id for d in due}
    orgs = {d.organization_id for d in due}
    rows = await session.scalars(
        select(Webhook).where(Webhook.organization_id.in_(orgs), Webhook.id.in_(ids))
    )
    return {(h.organization_id, h.id): h for h in rows.all()}


async def _events(session: AsyncSession, due: Sequence[Any]) -> dict[uuid.UUID, Any]:
    """The events of ``due``: what their bodies say (``sending.EventFields``)."""
    ids = {d.event_id for d in due}
    orgs = {d.organization_id for d in due} | {PLATFORM_ORG}
    rows = await session.execute(
        select(Event.id, Event.type, Event.created_at, Event.payload).where(
            Event.organization_id.in_(orgs), Event.id.in_(ids)
        )
    )
    return {e.id: e for e in rows.all()}
