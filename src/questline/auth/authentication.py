"""How a request proves who calls: a bearer token, else the dashboard's session cookie.

The boundary (``questline.web.access``) asks ``Identity.authenticate`` through
``AppState.authenticate``; the access rules themselves live there, once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import cast

from fastapi import Request
from starlette.requests import HTTPConnection

from questline.auth import sessions
from questline.auth.tokens import TokenService
from questline.organizations.service import ensure_organization
from questline.web.errors import Unauthorized
from questline.web.identity import Caller
from questline.web.state import app_state


@dataclass
class Identity:
    """The process's token service and the organizations it has recorded (on
    ``app.state.identity``)."""

    tokens: TokenService
    known_orgs: set[uuid.UUID] = field(default_factory=set)

    async def authenticate(self, request: Request, token: str | None) -> Caller:
        """The verified caller of a bearer token, or else of the dashboard's session
        cookie (its organization recorded once). A bearer token wins: API clients never
        depend on a cookie they may carry."""
        if token is not None:
            caller = await self.tokens.verify_async(token)
        elif cookie := request.cookies.get(sessions.SESSION_COOKIE):
            caller = await caller_from_cookie(request, cookie)
        else:
            raise Unauthorized(
                "Send a bearer token: 'Authorization: Bearer <JWT>' "
                "(or sign in to the dashboard at /ui/)."
            )
        if caller.org_id is not None and caller.org_id not in self.known_orgs:
            # Its own short write transaction: a read request stays a pure read, and the
            # row exists (committed) before anything of the organization refers to it.
            state = app_state(request)
            async with state.db.session(write=True) as org_session:
                await ensure_organization(org_session, caller.org_id)
            self.known_orgs.add(caller.org_id)
        return caller


def identity_of(connection: HTTPConnection) -> Identity:
    return cast(Identity, connection.app.state.identity)


async def caller_from_cookie(request: Request, cookie: str) -> Caller:
    """The caller of a dashboard session cookie (its CSRF token checked on writes)."""
    state = app_state(request)
    async with state.db.session(write=False) as lookup:
        row = await sessions.find_session(lookup, cookie)
    if row is None:
        raise Unauthorized("Your dashboard session has expired or was ended. Sign in again.")
    sessions.check_csrf(request, row, state.settings)
    return sessions.caller_of(row)
