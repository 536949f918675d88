"""Group commit of progress writes: the writes that arrive while one transaction
commits share the next one.

Every progress write bumps its organization's read-model version, and that row stays
locked until the commit; on PostgreSQL with ``synchronous_commit = on`` the commit
waits for its WAL flush (an ``fdatasync``). One write a transaction therefore means
one flush at a time for the whole organization, whatever the number of workers: the
disk's flush latency, not the CPU, capped the rate of writes.

``GroupCommit`` keeps one queue per process. A write joins the queue and waits; one
task takes everything queued (up to ``max_batch``) and runs it in ONE transaction
(three statements on PostgreSQL, ``progress.batchwrite``; one round trip to the
driver's thread on SQLite, ``record.record_many_sqlite``), then answers each write.
While that transaction commits, the next writes queue up: under load a batch holds
many writes, one flush and one version-row lock for all of them; a lone write runs at
once, in a batch of one.

A refusal (unknown team or task, archived team, a future ``CompletedAt``) writes
nothing and is answered ``None``: the caller lets the route answer it (with its
problem document). A database error rolls the whole batch back and answers ``None``
to every write in it: the route runs each again on its own (with its retries), so an
error costs a detour, never a wrong answer. Every write of a committed batch is as
durable, and as visible, as a write of its own: the commit is the same commit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from questline.progress import batchwrite, record
from questline.storage.db import Database

logger = logging.getLogger("questline.progress")

MAX_BATCH = 64
"""Writes per transaction at most: bounds a transaction's locks and the time its
writes wait for the slowest of them."""


class GroupCommit:
    """The process's queue of progress writes and the task that commits them."""

    def __init__(self, db: Database, *, max_batch: int = MAX_BATCH) -> None:
        self.db = db
        self.max_batch = max_batch
        self._queue: list[tuple[record.Write, asyncio.Future[record.Outcome]]] = []
        self._runner: asyncio.Task[None] | None = None
        self.batches = 0
        """Transactions committed (for tests and ``bench``: writes ÷ batches)."""
        self.writes = 0
        self.failed_batches = 0

    async def write(self, write: record.Write) -> record.Outcome:
        """Run ``write`` in the next batch; ``None``: nothing written, the route answers."""
        future: asyncio.Future[record.Outcome] = asyncio.get_running_loop().create_future()
        self._queue.append((write, future))
        if self._runner is None or self._runner.done():
            self._runner = asyncio.get_running_loop().create_task(self._run())
        return await future

    async def _run(self) -> None:
        batch: list[tuple[record.Write, asyncio.Future[record.Outcome]]] = []
        try:
            while self._queue:
                batch = self._queue[: self.max_batch]
                del self._queue[: self.max_batch]
                outcomes = await self._commit([write for write, _ in batch])
                for (_, future), outcome in zip(batch, outcomes, strict=True):
                    if not future.done():  # its request may have been cancelled
                        future.set_result(outcome)
                batch = []
        finally:
            # Cancelled (the loop is closing): nothing waits forever.
            for _, future in [*batch, *self._queue]:
                if not future.done():
                    future.set_result(None)
            self._queue.clear()

    async def _commit(self, writes: Sequence[record.Write]) -> list[record.Outcome]:
        try:
            async with self.db.session(write=True) as session:
                if self.db.is_sqlite:
                    outcomes = await record.record_many_sqlite(session, writes)
                else:
                    outcomes = await batchwrite.write_batch(session, list(writes))
        except Exception:
            self.failed_batches += 1
            logger.info(
                "a batch of %s progress writes failed; the route runs each",
                len(writes),
                exc_info=True,
            )
            return [None] * len(writes)
        self.batches += 1
        self.writes += len(writes)
        return outcomes

    async def close(self) -> None:
        """Let the queued writes finish (at shutdown, after the server stopped taking
        requests)."""
        runner = self._runner
        if runner is not None and not runner.done():
            await runner
