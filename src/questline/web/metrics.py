"""How services bump the counters of ``/metrics`` cheaply, and the boundary's counters.

Each domain defines its own counters beside the code that counts (``teams.service``'s
``TEAMS_CREATED``); the progress counters still wait here for theirs.

A service calls :func:`count_on_commit` inside its transaction; the count is applied
when that transaction commits (a request that fails and rolls back counts nothing) and
dropped when it rolls back. The cost on a hot path is one list append in
``session.info`` and, at commit, one ``Counter.inc`` per call.

Counters that are not tied to a transaction (a replayed response, a refused request)
are bumped directly.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, disable_created_metrics
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

# No ``*_created`` series (a timestamp per counter and histogram series): a tenth of a
# scrape's lines and render time, and nothing here reads them.
disable_created_metrics()  # type: ignore[no-untyped-call]

TASKS_COMPLETED = Counter(
    "questline_tasks_completed", "Task completions recorded (a repeated completion is not)"
)
TASKS_WITHDRAWN = Counter("questline_tasks_withdrawn", "Task completions withdrawn")
PROGRESS_BATCHES = Counter(
    "questline_progress_batches",
    "Batches of progress writes committed by the group commit (one transaction each)",
)
PROGRESS_BATCH_WRITES = Counter(
    "questline_progress_batch_writes", "Progress writes in those batches (refusals included)"
)
PROGRESS_BATCHES_FAILED = Counter(
    "questline_progress_batches_failed",
    "Batches that failed and left each of their writes to the route",
)
IDEMPOTENT_REPLAYS = Counter(
    "questline_idempotent_replays",
    "Responses replayed for a repeated Idempotency-Key instead of running the request again",
)
RATE_LIMITED = Counter(
    "questline_rate_limited_requests",
    "Requests refused with 429 by the rate limiter, by class of route",
    ["route_class"],
)

_PENDING = "questline.metrics.pending"


def count_on_commit(session: AsyncSession | Session, counter: Any, amount: float = 1) -> None:
    """Add ``amount`` to ``counter`` (a Counter or a labelled child) when the session's
    transaction commits."""
    if amount:
        session.info.setdefault(_PENDING, []).append((counter, amount))


@event.listens_for(Session, "after_commit")
def _apply(session: Session) -> None:
    pending = session.info.pop(_PENDING, None)
    if pending:
        for counter, amount in pending:
            counter.inc(amount)


@event.listens_for(Session, "after_rollback")
def _drop(session: Session) -> None:
    session.info.pop(_PENDING, None)
