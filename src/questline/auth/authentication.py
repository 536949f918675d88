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

from questline.auth import scim_tokens, sessions
from questline.auth.tokens import TokenService
from questline.organizations.service import ensure_organization
from questline.storage import tenancy
from questline.storage.db import Database
from questline.web.errors import Unauthorized
from questline.web.identity import Caller, Role
from questline.web.state import app_state

SCIM_JWT_REFUSED = (
    "A scim role in a JWT is not accepted: the directory needs a SCIM token of "
    "Questline's own, which an admin creates (POST /organization/scim-tokens) and can "
    "revoke."
)
SCIM_TOKEN_REFUSED = "The SCIM token is unknown, revoked or expired."


@dataclass
class Identity:
    """The process's token service and the organizations it has recorded (on
    ``app.state.identity``)."""

    tokens: TokenService
    db: Database | None = None
    """Where SCIM tokens are looked up (``verify_bearer``, without a request)."""
    known_orgs: set[uuid.UUID] = field(default_factory=set)

    async def verify_bearer(self, token: str) -> Caller:
        """The caller of a bearer token: a SCIM token by its stored row (the row alone
        names the organization), any other as a JWT. A JWT claiming the role ``scim``
        is refused: only a stored token can be revoked."""
        if scim_tokens.is_scim_token(token):
            if self.db is None:
                raise Unauthorized(SCIM_TOKEN_REFUSED)
            return (await self._scim_record(self.db, token)).caller
        caller = await self.tokens.verify_async(token)
        if caller.role is Role.SCIM:
            raise Unauthorized(SCIM_JWT_REFUSED)
        return caller

    async def _scim_record(self, db: Database, token: str) -> _ScimUse:
        async with db.session(write=False) as lookup:
            record = await scim_tokens.find_live(lookup, token)
        if record is None:
            raise Unauthorized(SCIM_TOKEN_REFUSED)
        return _ScimUse(scim_tokens.caller_of(record), record)

    async def _scim_caller(self, db: Database, token: str) -> Caller:
        """A SCIM token's caller, its ``last_used_at`` written (at most once a minute,
        in its own short transaction)."""
        use = await self._scim_record(db, token)
        if scim_tokens.needs_touch(use.record):
            with tenancy.acting_for(use.record.organization_id):
                async with db.session(write=True) as touching:
                    await scim_tokens.touch(touching, use.record)
        return use.caller

    async def authenticate(self, request: Request, token: str | None) -> Caller:
        """The verified caller of a bearer token, or else of the dashboard's session
        cookie (its organization recorded once). A bearer token wins: API clients never
        depend on a cookie they may carry."""
        if token is not None and scim_tokens.is_scim_token(token):
            caller = await self._scim_caller(app_state(request).db, token)
        elif token is not None:
            caller = await self.verify_bearer(token)
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


@dataclass(frozen=True, slots=True)
class _ScimUse:
    caller: Caller
    record: scim_tokens.ScimTokenRecord


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
