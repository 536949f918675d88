from __future__ import annotations

from collections.abc import Iterator

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pydantic import BaseModel
from sqlalchemy import text

from questline.storage.db import Database
from questline.storage.pool import pool_status
from questline.web.errors import ServiceUnavailable
from questline.web.openapi import problem_responses
from questline.web.state import app_state

router = APIRouter(tags=["operations"])


class Health(BaseModel):
    status: str


@router.get("/healthz", response_model=Health)
async def healthz() -> Health:
    """Liveness: the process answers."""
    return Health(status="ok")


@router.get("/readyz", response_model=Health, responses=problem_responses(503))
async def readyz(request: Request) -> Health:
    """Readiness: the database answers."""
    db = app_state(request).db
    try:
        async with db.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except Exception as exc:
        raise ServiceUnavailable(
            "The database is not reachable.", headers={"Retry-After": "5"}
        ) from exc
    return Health(status="ready")


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request) -> Response:
    """Prometheus metrics of this process: requests and latency, the business counters
    (``questline.web.metrics``), and the database pool of this application."""
    pool = CollectorRegistry(auto_describe=False)
    pool.register(PoolCollector(app_state(request).db))
    return Response(generate_latest() + generate_latest(pool), media_type=CONTENT_TYPE_LATEST)


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
