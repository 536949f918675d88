from __future__ import annotations

import asyncio
import hmac
import math
import time
from collections.abc import Iterator

import anyio
from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pydantic import BaseModel
from sqlalchemy import text

from questline.storage.db import Database, utcnow
from questline.storage.pool import pool_status
from questline.web.edge import PROBE, Edge, at_the_edge
from questline.web.errors import Forbidden, ServiceUnavailable
from questline.web.identity import bearer_token
from questline.web.openapi import problem_responses
from questline.web.schemas import examples
from questline.web.state import app_state, made_once

router = APIRouter(tags=["operations"])


class Health(BaseModel):
    model_config = examples({"status": "ok"})

    status: str


@router.get("/healthz", response_model=Health)
@at_the_edge(PROBE)
async def healthz() -> Health:
    """Liveness: the process answers."""
    return Health(status="ok")


PROBE_WRITE = text(
    "INSERT INTO health_probe (id, checked_at) VALUES (1, :at) "
    "ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at"
)


@router.get("/readyz", response_model=Health, responses=problem_responses(503))
@at_the_edge(PROBE)
async def readyz(request: Request) -> Health:
    """Readiness: the database accepts a write (one row of ``health_probe``, committed):
    a full disk, a read-only file or a read-only replica is not ready."""
    db = app_state(request).db
    try:
        async with db.session(write=True) as session:
            await session.execute(PROBE_WRITE, {"at": utcnow()})
    except Exception as exc:
        raise ServiceUnavailable(
            "The database does not accept writes right now.", headers={"Retry-After": "5"}
        ) from exc
    return Health(status="ready")


async def check_scraper(request: Request) -> None:
    """``/metrics`` is closed unless opened: to anyone with ``QUESTLINE_METRICS_PUBLIC``;
    else to a bearer ``operator`` JWT (``questline token create --role operator``) or the
    static ``QUESTLINE_METRICS_TOKEN``. 401 without a credential (or with one that does
    not verify), 403 for a member's or an admin's: an organization's callers never see
    the whole process's figures. No exception for loopback clients: behind a reverse
    proxy on the same host every client is one."""
    settings = app_state(request).settings
    if settings.metrics_public:
        return
    token = bearer_token(request.headers.get("authorization", "").encode("latin-1"))
    static = settings.metrics_token
    if token is not None and static and hmac.compare_digest(token.encode(), static.encode()):
        return
    caller = await app_state(request).authenticate(request, token)
    if not caller.is_operator:
        raise Forbidden("/metrics needs an operator token (or the metrics token).")


class RenderedMetrics:
    """The exposition of this process, rendered at most once in ``max_age`` seconds.

    Rendering walks every series (the request counter and latency histogram hold one
    per route, method and status), long CPU work on a busy process. It runs in a
    worker thread, one render for every scrape waiting meanwhile, and scrapes within
    ``max_age`` (``QUESTLINE_METRICS_CACHE_SECONDS``, 1 s) get the same bytes, so
    however often ``/metrics`` is called it costs at most one render a second."""

    def __init__(self, db: Database, max_age: float) -> None:
        self.max_age = max_age
        self.body = b""
        self.rendered_at = -math.inf
        self.lock = asyncio.Lock()
        self.pool = CollectorRegistry(auto_describe=False)
        self.pool.register(PoolCollector(db))

    def _render(self) -> bytes:
        return generate_latest() + generate_latest(self.pool)

    async def get(self) -> bytes:
        async with self.lock:
            if time.monotonic() - self.rendered_at >= self.max_age:
                self.body = await anyio.to_thread.run_sync(self._render)
                self.rendered_at = time.monotonic()
            return self.body


def _rendered(request: Request) -> RenderedMetrics:
    state = app_state(request)
    return made_once(
        request.app.state,
        "rendered_metrics",
        RenderedMetrics,
        lambda: RenderedMetrics(state.db, state.settings.metrics_cache_seconds),
    )


@router.get("/metrics", include_in_schema=False)
@at_the_edge(Edge.NOT_RATE_LIMITED)
async def metrics(request: Request) -> Response:
    """Prometheus metrics of this process: requests and latency, the business counters
    (``questline.web.metrics``), and the database pool of this application."""
    await check_scraper(request)
    body = await _rendered(request).get()
    return Response(body, media_type=CONTENT_TYPE_LATEST)


class PoolCollector(Collector):
    """The pool's gauges, read when scraped (nothing is kept on the hot path)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def collect(self) -> Iterator[Metric]:
        status = pool_status(self.db.engine.sync_engine.pool)
        if status is None:
            return
        backend = "sqlite" if self.db.is_sqlite else "postgresql"
        gauges = {
            "questline_db_pool_size": ("Connections the pool keeps open", status.size),
            "questline_db_pool_max_overflow": (
                "Connections it may open beyond the size under load",
                status.max_overflow,
            ),
            "questline_db_pool_in_use": ("Connections checked out now", status.in_use),
            "questline_db_pool_idle": ("Open connections waiting in the pool", status.idle),
            "questline_db_pool_overflow": (
                "Connections open beyond the size now (negative: fewer are open)",
                status.overflow,
            ),
        }
        for name, (documentation, value) in gauges.items():
            gauge = GaugeMetricFamily(name, documentation, labels=["backend"])
            gauge.add_metric([backend], value)
            yield gauge
