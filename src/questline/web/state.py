"""What the application and each request carry.

Kept apart from ``routing`` so that the access rules (which record the caller on the
request) and the transactional route (which calls them) need not import each other.
Only the boundary's own needs are here; a domain keeps what it shares between requests
on ``app.state`` under its own name, behind an accessor of its own
(``questline.readmodel.service.readmodel_of``, ``questline.auth.authentication.identity_of``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar, cast

from fastapi import Request
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import State

from questline.config import Settings
from questline.storage.db import Database
from questline.web import idempotency
from questline.web.identity import Caller

Authenticate = Callable[[Request, str | None], Awaitable[Caller]]
"""The caller of a request's bearer token (or, without one, of its session cookie);
``Unauthorized`` when there is none or it does not verify."""


@dataclass
class AppState:
    """What the application shares between requests (kept on ``app.state.questline``)."""

    settings: Settings
    db: Database
    authenticate: Authenticate
    signing_secret: Callable[[], str]
    """The service's signing secret (paging cursors are keyed by it)."""
    cancelled_requests: set[asyncio.Future[None]] = field(default_factory=set)
    """Requests past their timeout, still rolling back (see ``questline.web.hardening``)."""


@dataclass
class RequestState:
    session: AsyncSession
    caller: Caller | None = None
    pending_key: idempotency.PendingKey | None = None
    committing: bool = False
    """The commit was sent: a failure now leaves the outcome unknown (never retried)."""


T = TypeVar("T")


def made_once(state: State, name: str, kind: type[T], make: Callable[[], T]) -> T:
    """``state.<name>``: one ``kind`` per application, made by ``make`` on first use and
    kept on the application's state (not in a module-level registry)."""
    found = getattr(state, name, None)
    if found is None:
        found = make()
        setattr(state, name, found)
    assert isinstance(found, kind)
    return found


def app_state(request: Request) -> AppState:
    return cast(AppState, request.app.state.questline)


def request_state(request: Request) -> RequestState:
    return cast(RequestState, request.state.questline)
