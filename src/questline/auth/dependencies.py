"""FastAPI dependencies that authenticate the caller and check its role."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from questline.auth import sessions
from questline.auth.tokens import Caller, Role
from questline.organizations.service import ensure_organization
from questline.web.errors import Forbidden, Unauthorized
from questline.web.state import app_state, request_state

bearer_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="A JWT with the claims `sub`, `org` (organization UUID) and `role`.",
)


@dataclass(frozen=True, slots=True)
class Tenant:
    """A caller acting inside its organization."""

    org_id: uuid.UUID
    caller: Caller

    @property
    def is_admin(self) -> bool:
        return self.caller.role is Role.ADMIN


async def caller_from_cookie(request: Request, cookie: str) -> Caller:
    """The caller of a dashboard session cookie (its CSRF token checked on writes)."""
    state = app_state(request)
    async with state.db.session(write=False) as lookup:
        row = await sessions.find_session(lookup, cookie)
    if row is None:
        raise Unauthorized("Your dashboard session has expired or was ended. Sign in again.")
    sessions.check_csrf(request, row, state.settings)
    return sessions.caller_of(row)


async def authenticate(request: Request, token: str | None) -> Caller:
    """The verified caller of a bearer token, or else of the dashboard's session cookie
    (its organization recorded once). A bearer token wins: API clients never depend on
    a cookie they may carry."""
    state = app_state(request)
    if token is not None:
        caller = await state.tokens.verify_async(token)
    elif cookie := request.cookies.get(sessions.SESSION_COOKIE):
        caller = await caller_from_cookie(request, cookie)
    else:
        raise Unauthorized(
            "Send a bearer token: 'Authorization: Bearer <JWT>' "
            "(or sign in to the dashboard at /ui/)."
        )
    if caller.org_id is not None and caller.org_id not in state.known_orgs:
        # Its own short write transaction: a read request stays a pure read, and the
        # row exists (committed) before anything of the organization refers to it.
        async with state.db.session(write=True) as org_session:
            await ensure_organization(org_session, caller.org_id)
        state.known_orgs.add(caller.org_id)
    return caller


async def get_caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
) -> Caller:
    state = request_state(request)
    if state.caller is not None:  # authorized by the route before the body was read
        return state.caller
    caller = await authenticate(request, credentials.credentials if credentials else None)
    state.caller = caller
    return caller


CallerDep = Annotated[Caller, Depends(get_caller)]


def require_member(caller: Caller) -> Tenant:
    if caller.org_id is None:
        raise Forbidden("This operation acts inside an organization; operator tokens have none.")
    return Tenant(org_id=caller.org_id, caller=caller)


def require_admin(caller: Caller) -> Tenant:
    if caller.role is not Role.ADMIN or caller.org_id is None:
        raise Forbidden("This operation needs an organization admin token.")
    return Tenant(org_id=caller.org_id, caller=caller)


async def tenant_member(caller: CallerDep) -> Tenant:
    return require_member(caller)


async def tenant_admin(caller: CallerDep) -> Tenant:
    return require_admin(caller)


MemberOf = Annotated[Tenant, Depends(tenant_member)]
"""Reads: any member (or admin) of the caller's organization."""
AdminOf = Annotated[Tenant, Depends(tenant_admin)]
"""Writes: an admin of the caller's organization."""
