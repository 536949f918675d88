"""Read-your-writes across processes: the ``Questline-Read-After`` header and cookie.

With replicas configured (``questline.storage.replicas``), every successful write
response carries the primary's WAL position after its commit, as the
``Questline-Read-After`` response header and a cookie of the same content. A later
request that sends either back (header first) reads from a replica only once that
replica has replayed the position, on whichever process it lands. Browsers and HTTP
clients that keep cookies do this by themselves; other clients copy the header. The
cookie lives as long as the replica lag bound: after that every replica in use has the
write anyway. A malformed value sends the read to the primary.

Without replicas nothing here adds a query, a header or a cookie.
"""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from questline.storage.replicas import UNREACHABLE_LSN, ReplicaBehind, format_lsn, parse_lsn
from questline.web.state import AppState, RequestState, request_state

HEADER = "Questline-Read-After"
COOKIE = "questline_read_after"

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def requested_position(request: Request) -> int:
    """The WAL position the request's reads must see (0: none asked for)."""
    value = request.headers.get(HEADER) or request.cookies.get(COOKIE)
    if not value:
        return 0
    try:
        return parse_lsn(value.strip())
    except ValueError:
        return UNREACHABLE_LSN


def _organization(request: Request) -> uuid.UUID | None:
    """The caller's organization (None: an operator); LookupError before authentication."""
    state = getattr(request.state, "questline", None)
    caller = state.caller if isinstance(state, RequestState) else None
    if caller is None:
        raise LookupError("no caller yet")
    return caller.org_id


def route_reads(state: AppState, session: AsyncSession, request: Request) -> None:
    """Let this read request's transaction run on a replica when that is safe."""
    replicas = state.db.replicas
    if replicas.enabled:
        replicas.route_reads(session, lambda: _organization(request), requested_position(request))


async def call_endpoint(
    original: Handler,
    request: Request,
    session: AsyncSession,
    *,
    begin: Callable[[AsyncSession], Awaitable[None]] | None = None,
) -> Response:
    """Run the endpoint (after ``begin``, which opens the transaction); a read that fails
    on a replica runs again, from ``begin``, on the primary."""
    try:
        if begin is not None:
            await begin(session)
        return await original(request)
    except (DBAPIError, OSError, TimeoutError, ReplicaBehind) as exc:
        replicas = request.app.state.questline.db.replicas
        replica = replicas.replica_of(session) if replicas.enabled else None
        if replica is None and not isinstance(exc, ReplicaBehind):
            raise  # (a build shared with another request can fail on its replica)
        lost = isinstance(exc, OSError | TimeoutError) or getattr(
            exc, "connection_invalidated", False
        )
        if replica is not None and lost:
            replica.mark_down(f"read failed: {type(exc).__name__}")
        with contextlib.suppress(Exception):
            await session.rollback()
        replicas.use_primary(session)
        caller = request_state(request).caller
        request.state.questline = RequestState(session=session, caller=caller)
        if begin is not None:
            await begin(session)
        return await original(request)


async def after_write(state: AppState, request: Request, response: Response) -> None:
    """After a successful write's commit: remember its position and hand it out."""
    replicas = state.db.replicas
    if not replicas.enabled or not 200 <= response.status_code < 300:
        return
    try:
        organization = _organization(request)
    except LookupError:
        organization = None  # every organization's reads must see it
    position = await replicas.note_write(organization)
    if position is None:
        return
    value = format_lsn(position)
    response.headers[HEADER] = value
    response.set_cookie(
        COOKIE,
        value,
        max_age=math.ceil(state.settings.database_replica_max_lag_seconds) + 1,
        path="/",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https"
        or (state.settings.public_url or "").startswith("https://"),
    )
