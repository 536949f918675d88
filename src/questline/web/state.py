"""What the application and each request carry.

Kept apart from ``routing`` so that authentication (which records the caller on the
request) and the transactional route (which calls authentication) need not import
each other.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import cast

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncSession

from questline.auth.tokens import Caller, TokenService
from questline.config import Settings
from questline.readmodel.model import ReadModel
from questline.storage.db import Database
from questline.web import idempotency


@dataclass
class AppState:
    """What the application shares between requests (kept on ``app.state.questline``)."""

    settings: Settings
    db: Database
    tokens: TokenService
    readmodel: ReadModel
    known_orgs: set[uuid.UUID] = field(default_factory=set)
    cancelled_requests: set[asyncio.Task[None]] = field(default_factory=set)
    """Requests past their timeout, still rolling back (see ``questline.web.hardening``)."""


@dataclass
class RequestState:
    session: AsyncSession
    caller: Caller | None = None
    pending_key: idempotency.PendingKey | None = None
    committing: bool = False
    """The commit was sent: a failure now leaves the outcome unknown (never retried)."""


def app_state(request: Request) -> AppState:
    return cast(AppState, request.app.state.questline)


def request_state(request: Request) -> RequestState:
    return cast(RequestState, request.state.questline)
