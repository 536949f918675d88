"""The statement dispatcher: pending statements → batches POSTed to each LRS.

Statements are made by the outbox's fan-out (``events.fanout``; the consumer is
``consumer.consumers``) in the transaction that marks their events done. A pass:

1. **Claim** due statements, oldest due first, and group them by organization into
   batches of ``xapi_batch_size`` — one batch per organization at a time (statements
   of a team reach its LRS in order: a ``voided`` statement after its target), and only
   as many as ``outbound.fairness`` has slots for (in the process, per organization,
   per LRS host). ``FOR UPDATE SKIP LOCKED`` on PostgreSQL; on SQLite the one write
   lock, and one dispatcher per machine (``outbound.outbox``, the kind
   ``Statements``). Claiming counts the attempt and moves ``next_attempt_at`` past
   the attempt's timeout (a lease: a process that dies mid-send leaves the batch to be
   sent again — with the same statement ids, which the LRS stores once).
2. **Send** each batch in a task of its own, outside any transaction.
3. **Record** the outcomes: 2xx → sent; a 4xx about the statements with more than
   one in the batch → each is marked to go alone, at once (isolating the bad one:
   the others are then stored); a 4xx for a statement alone → failed for good, shown
   by ``GET /organization/xapi/failures``; anything else (no answer, 5xx, 401/403/404,
   429) → retried after ``base * 2^(attempts-1)`` (+ jitter) until
   ``xapi_max_attempts``.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import not_, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import events
from questline.config import Settings
from questline.outbound import calls, outbox, retry
from questline.outbound.fairness import Slots
from questline.outbound.outbox import Outbox, Slot, delete_settled
from questline.storage.db import Database
from questline.storage.many_rows import one_of
from questline.xapi import sealing, sending
from questline.xapi.consumer import XAPI_TOPIC
from questline.xapi.models import LrsConnection, StatementStatus, XapiStatement

logger = logging.getLogger("questline.xapi")

CLAIM_ROWS = 500
"""Due statements read per claim (then grouped into batches by organization)."""
LEASE_MARGIN = dt.timedelta(seconds=30)


@dataclass(slots=True)
class Batch:
    organization_id: uuid.UUID
    endpoint: str
    host: str
    authorization: str = field(repr=False)
    ids: list[uuid.UUID]
    statements: list[Any]


@dataclass(frozen=True, slots=True)
class Sent:
    batch: Batch
    answer: sending.Answer


class Statements:
    """The xAPI kind of outbound work (``outbound.outbox.Kind``): statement rows, one
    batch of an organization's statements an attempt."""

    name = "xapi"

    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        self._http = calls.client(
            timeout=settings.xapi_timeout_seconds, max_connections=settings.xapi_concurrency
        )

    async def prepare(self) -> bool:
        return False

    def slot(self, batch: Batch) -> Slot:
        return Slot(batch.organization_id, batch.host, batch.organization_id)

    async def send(self, batch: Batch) -> Sent:
        answer = await sending.post_statements(
            self._http,
            endpoint=batch.endpoint,
            authorization=batch.authorization,
            statements=batch.statements,
            seconds=self.settings.xapi_timeout_seconds,
            allow_private=self.settings.xapi_allow_private_urls,
        )
        return Sent(batch, answer)

    def crashed(self, batch: Batch, exc: Exception) -> Sent:
        return Sent(
            batch,
            sending.Answer(sending.Verdict.RETRY, None, f"Internal error: {type(exc).__name__}"),
        )

    async def close(self) -> None:
        await self._http.aclose()

    def _due(self, session: AsyncSession, query: Any, now: dt.datetime, slots: Slots) -> Any:
        query = query.where(
            XapiStatement.status == StatementStatus.PENDING,
            XapiStatement.next_attempt_at <= now,
        )
        busy = slots.full_organizations()
        if busy:
            query = query.where(not_(one_of(session, XapiStatement.organization_id, list(busy))))
        return query

    async def has_due(self, session: AsyncSession, now: dt.datetime, slots: Slots) -> bool:
        query = self._due(session, select(XapiStatement.id), now, slots)
        return await session.scalar(query.limit(1)) is not None

    async def claim(
        self, session: AsyncSession, now: dt.datetime, slots: Slots, claimed: list[Batch]
    ) -> bool:
        lease = dt.timedelta(seconds=self.settings.xapi_timeout_seconds) + LEASE_MARGIN
        query = (
            self._due(session, select(XapiStatement), now, slots)
            .order_by(XapiStatement.next_attempt_at, XapiStatement.id)
            .limit(CLAIM_ROWS)
        )
        if not self.db.is_sqlite:
            query = query.with_for_update(skip_locked=True)
        due = list((await session.scalars(query)).all())
        if not due:
            return False
        connections = await _connections(session, {r.organization_id for r in due})
        by_org: dict[uuid.UUID, list[XapiStatement]] = {}
        for row in due:
            by_org.setdefault(row.organization_id, []).append(row)
        for org_id, rows in by_org.items():
            lrs = connections.get(org_id)
            if lrs is None:
                continue  # deleted meanwhile (its statements go with it)
            host = calls.receiving_host(lrs.endpoint)
            if slots.room() <= 0:
                break
            if slots.organization_full(org_id) or slots.host_full(host):
                continue
            chosen = _batch_of(rows, self.settings.xapi_batch_size)
            try:
                authorization = sending.authorization(self.settings, lrs)
            except sealing.Unreadable as exc:
                # Nothing can be sent until the admin gives the secret again.
                lrs.failing_since = lrs.failing_since or now
                lrs.last_error = str(exc)
                for row in rows:
                    row.next_attempt_at = now + lease
                continue
            slots.take(org_id, host, org_id)
            for row in chosen:
                outbox.lease(row, now, lease)
                row.last_attempt_at = now
            claimed.append(
                Batch(
                    organization_id=org_id,
                    endpoint=lrs.endpoint,
                    host=host,
                    authorization=authorization,
                    ids=[r.id for r in chosen],
                    statements=[r.statement for r in chosen],
                )
            )
        return len(due) >= CLAIM_ROWS

    async def record(
        self, session: AsyncSession, finished: Sequence[Sent], now: dt.datetime
    ) -> None:
        connections = await _connections(
            session, {s.batch.organization_id for s in finished}, lock=not self.db.is_sqlite
        )
        for sent in finished:
            batch, answer = sent.batch, sent.answer
            rows = list(
                (
                    await session.scalars(
                        select(XapiStatement).where(
                            XapiStatement.organization_id == batch.organization_id,
                            one_of(session, XapiStatement.id, batch.ids),
                        )
                    )
                ).all()
            )
            lrs = connections.get(batch.organization_id)
            for row in rows:
                self._apply(row, answer, alone=len(batch.ids) == 1, now=now)
            if lrs is not None:
                if answer.verdict is sending.Verdict.RETRY:
                    lrs.failing_since = lrs.failing_since or now
                    lrs.last_error = _error_text(answer)
                else:
                    lrs.failing_since = None
                    lrs.last_error = None

    def _apply(
        self, row: XapiStatement, answer: sending.Answer, *, alone: bool, now: dt.datetime
    ) -> None:
        row.last_status_code = answer.status_code
        row.last_attempt_at = now
        if answer.verdict is sending.Verdict.STORED:
            row.status = StatementStatus.SENT
            row.last_error = None
            return
        row.last_error = _error_text(answer)
        if answer.verdict is sending.Verdict.REFUSED:
            if alone:
                row.status = StatementStatus.FAILED
            else:
                # One of the batch is bad: each goes alone, now, to find which.
                row.alone = True
                row.next_attempt_at = now
            return
        if row.attempts >= self.settings.xapi_max_attempts:
            row.status = StatementStatus.FAILED
        else:
            row.next_attempt_at = now + retry.backoff(
                self.settings.xapi_retry_base_seconds, row.attempts
            )

    async def purge(self, session: AsyncSession, now: dt.datetime) -> None:
        # Sent statements are kept as long as events (a withdrawal voids by them);
        # failures too, for the admin to read.
        await delete_settled(
            session,
            self.settings,
            now,
            XapiStatement.created_at,
            XapiStatement.status,
            StatementStatus.PENDING,
        )


class Dispatcher(Outbox[Batch, Sent]):
    """The statements' outbox dispatcher (``outbound.outbox``), woken when this
    process's fan-out made statements (``XAPI_TOPIC``), not by every commit: a progress
    write commits an event but makes no statement until the fan-out runs, and a pass per
    commit was a claim query per write for organizations without an LRS
    (docs/performance.md). Statements fanned out by another process arrive with the
    poll."""

    def __init__(self, settings: Settings, db: Database) -> None:
        super().__init__(
            Statements(settings, db),
            settings=settings,
            db=db,
            slots=Slots.of(
                settings.xapi_concurrency, per_organization=1, per_host=settings.xapi_concurrency
            ),
            poll_seconds=settings.xapi_poll_seconds,
            lock_name="xapi-dispatcher.lock",
            logger=logger,
            listen=functools.partial(events.on_committed, topic=XAPI_TOPIC),
        )


def _batch_of(rows: Sequence[XapiStatement], size: int) -> list[XapiStatement]:
    """The next batch of an organization's due rows (in order): a row marked ``alone``
    goes by itself; otherwise up to ``size`` rows, stopping before one that must."""
    if rows[0].alone:
        return [rows[0]]
    chosen: list[XapiStatement] = []
    for row in rows:
        if row.alone or len(chosen) >= size:
            break
        chosen.append(row)
    return chosen


def _error_text(answer: sending.Answer) -> str:
    status = f"The LRS answered {answer.status_code}" if answer.status_code else "No answer"
    return f"{status}: {answer.text or ''}"[:1000] if answer.text else status + "."


async def _connections(
    session: AsyncSession, org_ids: set[uuid.UUID], *, lock: bool = False
) -> dict[uuid.UUID, LrsConnection]:
    query = select(LrsConnection).where(LrsConnection.organization_id.in_(org_ids))
    if lock:
        query = query.with_for_update()
    return {c.organization_id: c for c in (await session.scalars(query)).all()}
