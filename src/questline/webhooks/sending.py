"""Sending one attempt: the body, the Standard Webhooks headers, the HTTP POST.

Each attempt re-checks the URL's address and connects to the address it checked
(``outbound.calls``); the whole attempt is bounded by ``webhooks_timeout_seconds``; the
answer's body is never read (only its status matters).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from questline import __version__
from questline.config import Settings
from questline.outbound import addresses, calls
from questline.storage.db import utcnow
from questline.timeformat import rfc3339
from questline.webhooks import signing


@dataclass(frozen=True, slots=True)
class Attempt:
    organization_id: uuid.UUID
    delivery_id: uuid.UUID
    generation: int
    """The delivery's generation when claimed (a manual retry bumps it)."""
    webhook_id: uuid.UUID
    url: str
    host: str
    """``receiving_host(url)``: what the per-host limit counts."""
    secrets: list[str]
    msg_id: str
    body: bytes


@dataclass(frozen=True, slots=True)
class Outcome:
    attempt: Attempt
    status_code: int | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def message_id(event_id: uuid.UUID) -> str:
    return f"msg_{event_id.hex}"


class EventFields(Protocol):
    """What a delivery's body says of its event (an ``Event``, or a row of its columns)."""

    @property
    def type(self) -> str: ...
    @property
    def created_at(self) -> dt.datetime: ...
    @property
    def payload(self) -> Any: ...


def body_of(event: EventFields) -> bytes:
    document = {"type": event.type, "timestamp": rfc3339(event.created_at), "data": event.payload}
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()


class Sender:
    """The HTTP side of a dispatcher (one connection pool per process). The dispatcher
    decides how many attempts run at once (``questline.outbound.fairness``); the pool
    holds as many connections as the process may have attempts in flight."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client: calls.Caller | None = None

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _http(self) -> calls.Caller:
        if self._client is None:
            self._client = calls.client(
                timeout=self.settings.webhooks_timeout_seconds,
                max_connections=self.settings.webhooks_concurrency,
            )
        return self._client

    async def send(self, attempt: Attempt) -> Outcome:
        try:
            async with asyncio.timeout(self.settings.webhooks_timeout_seconds):
                timestamp = int(utcnow().timestamp())
                headers = {
                    "content-type": "application/json",
                    "user-agent": f"Questline-Webhooks/{__version__}",
                    **signing.headers(
                        attempt.secrets,
                        msg_id=attempt.msg_id,
                        timestamp=timestamp,
                        body=attempt.body,
                    ),
                }
                answer = await calls.post(
                    self._http(),
                    attempt.url,
                    content=attempt.body,
                    headers=headers,
                    allow_private=self.settings.webhooks_allow_private_urls,
                )
                return Outcome(attempt, answer.status_code, None)
        except addresses.UnsafeUrl as exc:
            return Outcome(attempt, None, str(exc)[:500])
        except TimeoutError:
            return Outcome(attempt, None, "The receiver did not answer in time.")
        except calls.CallFailed as exc:
            return Outcome(attempt, None, str(exc)[:500])


receiving_host = calls.receiving_host
"""The per-host limit's host of a webhook URL (``outbound.calls.receiving_host``)."""
