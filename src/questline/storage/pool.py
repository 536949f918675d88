"""The connection pool, metered: how often a request had to wait for a connection.

``MeteredQueuePool`` is SQLAlchemy's asyncio queue pool that counts each checkout which
found every connection in use and no room to open another (a *wait*), and the seconds
spent waiting. ``/metrics`` reads the rest (size, in use, overflow) from the pool.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from prometheus_client import Counter
from sqlalchemy.pool import AsyncAdaptedQueuePool, ConnectionPoolEntry, Pool

from questline.storage.internals import max_overflow_of

POOL_WAITS = Counter(
    "questline_db_pool_waits",
    "Connection checkouts that found the pool exhausted and had to wait",
)
POOL_WAIT_SECONDS = Counter(
    "questline_db_pool_wait_seconds", "Seconds spent waiting for a pooled connection"
)


class MeteredQueuePool(AsyncAdaptedQueuePool):
    def _do_get(self) -> ConnectionPoolEntry:
        exhausted = self.checkedin() == 0 and 0 <= max_overflow_of(self) <= self.overflow()
        if not exhausted:
            return super()._do_get()
        started = time.perf_counter()
        try:
            return super()._do_get()
        finally:
            POOL_WAITS.inc()
            POOL_WAIT_SECONDS.inc(time.perf_counter() - started)


@dataclass(frozen=True, slots=True)
class PoolStatus:
    size: int
    """Connections the pool keeps (``QUESTLINE_DATABASE_POOL_SIZE``)."""
    max_overflow: int
    """Connections it may open beyond ``size`` under load (-1: no bound)."""
    in_use: int
    """Connections checked out now."""
    idle: int
    overflow: int
    """Connections open beyond ``size`` now (negative while fewer than ``size`` are open)."""


def pool_status(pool: Pool) -> PoolStatus | None:
    """The status of a queue pool; None for pools that keep no queue (NullPool…)."""
    if not isinstance(pool, AsyncAdaptedQueuePool):
        return None
    return PoolStatus(
        size=pool.size(),
        max_overflow=max_overflow_of(pool),
        in_use=pool.checkedout(),
        idle=pool.checkedin(),
        overflow=pool.overflow(),
    )
