"""``Idempotency-Key`` on POST (DESIGN §2).

The first successful response is stored per organization and key, in the same
transaction as the change it reports, so a change and its record commit together or
not at all. A retry with the same key and request replays it; the same key with another
request is 422. Two concurrent requests with one key: the second one's insert of the
record conflicts, its transaction rolls back, and it replays the first one's response.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from sqlalchemy import JSON, LargeBinary, String, delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from questline.config import Settings
from questline.storage.db import Base, Database, UTCDateTime, utcnow
from questline.storage.purging import purge_every
from questline.web.errors import Unprocessable
from questline.web.metrics import IDEMPOTENT_REPLAYS

logger = logging.getLogger("questline.web.idempotency")

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_LENGTH = 255
_KEPT_HEADERS = ("content-type", "location", "etag")
PLATFORM_SCOPE = uuid.UUID(int=0)
"""The key scope of operators, who belong to no organization."""


class IdempotencyRecord(Base):
    __tablename__ = "idempotency_keys"

    organization_id: Mapped[uuid.UUID] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(MAX_KEY_LENGTH), primary_key=True)
    request_hash: Mapped[str] = mapped_column(String(64))
    status_code: Mapped[int]
    headers: Mapped[dict[str, str]] = mapped_column(JSON)
    body: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, index=True)


@dataclass(frozen=True, slots=True)
class PendingKey:
    """A key seen on this request, to be stored with its successful response."""

    organization_id: uuid.UUID
    key: str
    request_hash: str


class ReplayStoredResponse(Exception):
    """Raised to answer with a stored response (built at once: the session rolls back)."""

    def __init__(self, record: IdempotencyRecord) -> None:
        super().__init__(record.key)
        self.response = replay(record)


def request_fingerprint(request: Request, body: bytes, subject: str) -> str:
    digest = hashlib.sha256()
    for part in (request.method, request.url.path, request.url.query, subject):
        digest.update(part.encode())
        digest.update(b"\0")
    digest.update(body)
    return digest.hexdigest()


async def check_key(
    session: AsyncSession,
    *,
    request: Request,
    organization_id: uuid.UUID,
    subject: str,
    ttl: dt.timedelta,
) -> PendingKey | None:
    """Replay a stored response, refuse a reused key, or note the key for storing."""
    key = request.headers.get(HEADER)
    if key is None:
        return None
    if not key or len(key) > MAX_KEY_LENGTH:
        raise Unprocessable(f"{HEADER} must be 1 to {MAX_KEY_LENGTH} characters.")
    fingerprint = request_fingerprint(request, await request.body(), subject)
    record = await session.get(IdempotencyRecord, (organization_id, key))
    if record is not None and record.created_at < utcnow() - ttl:
        await session.delete(record)
        await session.flush()
        record = None
    if record is not None:
        if record.request_hash != fingerprint:
            raise Unprocessable(
                f"This {HEADER} was already used for a different request; use a new key."
            )
        raise ReplayStoredResponse(record)
    return PendingKey(organization_id=organization_id, key=key, request_hash=fingerprint)


async def store_response(session: AsyncSession, pending: PendingKey, response: Response) -> None:
    headers = {name: response.headers[name] for name in _KEPT_HEADERS if name in response.headers}
    session.add(
        IdempotencyRecord(
            organization_id=pending.organization_id,
            key=pending.key,
            request_hash=pending.request_hash,
            status_code=response.status_code,
            headers=headers,
            body=bytes(response.body),
            created_at=utcnow(),
        )
    )
    await session.flush()


async def load_record(session: AsyncSession, pending: PendingKey) -> IdempotencyRecord | None:
    return await session.scalar(
        select(IdempotencyRecord).where(
            IdempotencyRecord.organization_id == pending.organization_id,
            IdempotencyRecord.key == pending.key,
        )
    )


def replay(record: IdempotencyRecord) -> Response:
    IDEMPOTENT_REPLAYS.inc()
    headers: dict[str, Any] = dict(record.headers)
    headers[REPLAYED_HEADER] = "true"
    media_type = headers.pop("content-type", None)
    return Response(
        content=record.body, status_code=record.status_code, headers=headers, media_type=media_type
    )


async def purge_expired(session: AsyncSession, *, ttl: dt.timedelta) -> int:
    result = await session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at < utcnow() - ttl)
    )
    return int(getattr(result, "rowcount", 0) or 0)


async def purge_periodically(db: Database, settings: Settings) -> None:
    """Delete expired records every ``QUESTLINE_IDEMPOTENCY_PURGE_INTERVAL_SECONDS`` (each
    process; the deletes are idempotent). Started by the application's lifespan."""
    ttl = dt.timedelta(hours=settings.idempotency_ttl_hours)
    await purge_every(
        db,
        settings.idempotency_purge_interval_seconds,
        lambda session: purge_expired(session, ttl=ttl),
        log=logger,
        name="idempotency",
        purged_message="purged %s expired idempotency records",
    )
