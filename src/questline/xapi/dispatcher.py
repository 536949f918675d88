"""The statement dispatcher: pending statements → batches POSTed to each LRS.

Statements are made by the outbox's fan-out (``events.fanout``; the consumer is
``consumer.register_consumer``) in the transaction that marks their events done. A pass:

1. **Claim** due statements, oldest due first, and group them by organization into
   batches of ``xapi_batch_size`` — one batch per organization at a time (statements
   of a team reach its LRS in order: a ``voided`` statement after its target), and only
   as many as ``outbound.fairness`` has slots for (in the process, per organization,
   per LRS host). ``FOR UPDATE SKIP LOCKED`` on PostgreSQL; on SQLite the one write
   lock, and one dispatcher per machine (``outbound.loop``). Claiming counts the
   attempt and moves ``next_attempt_at`` past the attempt's timeout (a lease: a
   process that dies mid-send leaves the batch to be sent again — with the same
   statement ids, which the LRS stores once).
2. **Send** each batch in a task of its own, outside any transaction.
3. **Record** the outcomes: 2xx → sent; a 4xx about the statements with more than
   one in the batch → each is marked to go alone, at once (isolating the bad one:
   the others are then stored); a 4xx for a statement alone → failed for good, shown
   by ``GET /organization/xapi/failures``; anything else (no answer, 5xx, 401/403/404,
   429) → retried after ``base * 2^(attempts-1)`` (+ jitter) until
   ``xapi_max_attempts``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, not_, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.config import Settings
from questline.outbound import posting, retry
from questline.outbound.fairness import Slots
from questline.outbound.loop import PassLoop
from questline.storage import tenancy
from questline.storage.db import Database, utcnow
from questline.storage.many_rows import one_of
from questline.xapi import sealing, sending
from questline.xapi.models import LrsConnection, StatementStatus, XapiStatement

logger = logging.getLogger("questline.xapi")

CLAIM_ROWS = 500
"""Due statements read per claim (then grouped into batches by organization)."""
LEASE_MARGIN = dt.timedelta(seconds=30)
PURGE_EVERY = dt.timedelta(hours=1)


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


class Dispatcher:
    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        self.slots = Slots.of(
            settings.xapi_concurrency,
            per_organization=1,
            per_host=settings.xapi_concurrency,
        )
        self._http = posting.client(
            timeout=settings.xapi_timeout_seconds, max_connections=settings.xapi_concurrency
        )
        self._sending: set[asyncio.Task[None]] = set()
        self._finished: list[Sent] = []
        self._last_purge: dt.datetime | None = None
        self.loop = PassLoop(
            name="questline-xapi",
            run_once=self.run_once,
            poll_seconds=settings.xapi_poll_seconds,
            lock_path=(settings.ensure_data_dir() / "xapi-dispatcher.lock")
            if db.is_sqlite
            else None,
            logger=logger,
        )

    # Life cycle -----------------------------------------------------------------------

    def start(self) -> None:
        # Woken only when this process's fan-out made statements (the consumer's
        # ``taken``, see app.py), not by every commit: a progress write commits an event
        # but makes no statement until the fan-out runs, and a pass per commit was a
        # claim query per write for organizations without an LRS (docs/performance.md).
        # Statements fanned out by another process arrive with the poll.
        self.loop.start()

    def wake(self) -> None:
        self.loop.wake()

    async def stop(self) -> None:
        await self.loop.stop()
        await self.close()

    async def close(self) -> None:
        """Cancel the sends in flight (their leases bring them back) and let go."""
        sending_now = list(self._sending)
        for task in sending_now:
            task.cancel()
        await asyncio.gather(*sending_now, return_exceptions=True)
        await self._http.aclose()

    @property
    def in_flight(self) -> int:
        return len(self._sending)

    async def settle(self) -> None:
        """Wait for every send in flight and record the outcomes (tests, tools)."""
        while self._sending:
            await asyncio.gather(*list(self._sending), return_exceptions=True)
        await self.record_finished()

    # One pass -------------------------------------------------------------------------

    @tenancy.serves_every_organization
    async def run_once(self) -> bool:
        """Record what finished, claim and start sending. True when a full claim was
        made (there may be more right now)."""
        await self.record_finished()
        batches, more = await self.claim()
        for batch in batches:
            self._start(batch)
        await self._purge_now_and_then()
        return more

    async def record_finished(self) -> None:
        finished, self._finished = self._finished, []
        if finished:
            await self.record(finished)

    def _start(self, batch: Batch) -> None:
        task = asyncio.create_task(self._send(batch), name="questline-xapi-batch")
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, batch: Batch) -> None:
        try:
            answer = await sending.post_statements(
                self._http,
                endpoint=batch.endpoint,
                authorization=batch.authorization,
                statements=batch.statements,
                seconds=self.settings.xapi_timeout_seconds,
                allow_private=self.settings.xapi_allow_private_urls,
            )
        except Exception as exc:  # a bug, not the LRS: the lease would hide it
            logger.exception("xAPI batch failed unexpectedly")
            answer = sending.Answer(
                sending.Verdict.RETRY, None, f"Internal error: {type(exc).__name__}"
            )
        finally:
            self.slots.give_back(batch.organization_id, batch.host, batch.organization_id)
        self._finished.append(Sent(batch, answer))
        self.loop.wake()

    def _due(self, session: AsyncSession, query: Any, now: dt.datetime) -> Any:
        query = query.where(
            XapiStatement.status == StatementStatus.PENDING,
            XapiStatement.next_attempt_at <= now,
        )
        busy = self.slots.full_organizations()
        if busy:
            query = query.where(not_(one_of(session, XapiStatement.organization_id, list(busy))))
        return query

    async def claim(self) -> tuple[list[Batch], bool]:
        if self.slots.room() <= 0:
            return [], False
        now = utcnow()
        async with self.db.session(write=False) as session:
            # A cheap read first: an idle pass takes no write lock (SQLite has one).
            if (
                await session.scalar(self._due(session, select(XapiStatement.id), now).limit(1))
                is None
            ):
                return [], False
        lease = dt.timedelta(seconds=self.settings.xapi_timeout_seconds) + LEASE_MARGIN
        batches: list[Batch] = []
        try:
            async with self.db.session(write=True) as session:
                query = (
                    self._due(session, select(XapiStatement), now)
                    .order_by(XapiStatement.next_attempt_at, XapiStatement.id)
                    .limit(CLAIM_ROWS)
                )
                if not self.db.is_sqlite:
                    query = query.with_for_update(skip_locked=True)
                due = list((await session.scalars(query)).all())
                if not due:
                    return [], False
                connections = await _connections(session, {r.organization_id for r in due})
                by_org: dict[uuid.UUID, list[XapiStatement]] = {}
                for row in due:
                    by_org.setdefault(row.organization_id, []).append(row)
                for org_id, rows in by_org.items():
                    lrs = connections.get(org_id)
                    if lrs is None:
                        continue  # deleted meanwhile (its statements go with it)
                    host = posting.receiving_host(lrs.endpoint)
                    if self.slots.room() <= 0:
                        break
                    if self.slots.organization_full(org_id) or self.slots.host_full(host):
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
                    self.slots.take(org_id, host, org_id)
                    for row in chosen:
                        row.attempts += 1
                        row.last_attempt_at = now
                        row.next_attempt_at = now + lease
                    batches.append(
                        Batch(
                            organization_id=org_id,
                            endpoint=lrs.endpoint,
                            host=host,
                            authorization=authorization,
                            ids=[r.id for r in chosen],
                            statements=[r.statement for r in chosen],
                        )
                    )
        except BaseException:
            for batch in batches:
                self.slots.give_back(batch.organization_id, batch.host, batch.organization_id)
            raise
        return batches, len(due) >= CLAIM_ROWS and self.slots.room() > 0

    async def record(self, finished: Sequence[Sent]) -> None:
        now = utcnow()
        async with self.db.session(write=True) as session:
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

    async def _purge_now_and_then(self) -> None:
        now = utcnow()
        if self._last_purge is not None and now - self._last_purge < PURGE_EVERY:
            return
        self._last_purge = now
        horizon = now - dt.timedelta(days=self.settings.events_retention_days)
        async with self.db.session(write=True) as session:
            # Sent statements are kept as long as events (a withdrawal voids by them);
            # failures too, for the admin to read.
            await session.execute(
                delete(XapiStatement).where(
                    XapiStatement.created_at < horizon,
                    XapiStatement.status != StatementStatus.PENDING,
                )
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
