from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel
from sqlalchemy import text

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
async def metrics() -> Response:
    """Prometheus metrics of this process."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
