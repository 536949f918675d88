"""Who may call a route: the access rules, written once.

A route declares its access by the dependency it takes (``MemberOf``, ``AdminOf``,
``CallerDep``); ``access_of`` reads that declaration back from the route's dependency
tree, and ``authorize`` enforces it. The transactional route calls ``authorize`` before
it reads a body, and the fast lane (``questline.web.fastlane``) calls the very same
function before it answers early: the rule has no second copy.

How a token or a session cookie becomes a ``Caller`` is the ``auth`` domain's business;
the boundary reaches it through ``AppState.authenticate``, which the application wires.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from questline.web.errors import Forbidden
from questline.web.identity import Caller, Role, scope_bearer
from questline.web.state import app_state, request_state

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

bearer_scheme = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="A JWT with the claims `sub`, `org` (organization UUID) and `role`.",
)


class Access(enum.Enum):
    """Who may call a route, read from its dependencies (checked before the body)."""

    ANYONE = "anyone"
    CALLER = "caller"
    """Any valid token."""
    WRITER = "writer"
    """A write with any valid token: admins and operators (the service checks more)."""
    MEMBER = "member"
    ADMIN = "admin"
    SCIM = "scim"
    """A directory's ``scim`` token, and no other (the ``/scim/v2`` routes)."""


@dataclass(frozen=True, slots=True)
class Tenant:
    """A caller acting inside its organization."""

    org_id: uuid.UUID
    caller: Caller

    @property
    def is_admin(self) -> bool:
        return self.caller.role is Role.ADMIN


def require_member(caller: Caller) -> Tenant:
    if caller.role is Role.SCIM:
        raise Forbidden(SCIM_ONLY)
    if caller.org_id is None:
        raise Forbidden("This operation acts inside an organization; operator tokens have none.")
    return Tenant(org_id=caller.org_id, caller=caller)


def require_admin(caller: Caller) -> Tenant:
    if caller.role is not Role.ADMIN or caller.org_id is None:
        raise Forbidden("This operation needs an organization admin token.")
    return Tenant(org_id=caller.org_id, caller=caller)


SCIM_ONLY = "A scim token provisions through /scim/v2 and can do nothing else."


def require_scim(caller: Caller) -> Tenant:
    if caller.role is not Role.SCIM or caller.org_id is None:
        raise Forbidden("The SCIM API needs the organization's scim token (role scim).")
    return Tenant(org_id=caller.org_id, caller=caller)


def check_access(caller: Caller, access: Access) -> None:
    """Forbidden unless ``caller`` may call a route of ``access``. A ``scim`` token is
    refused everywhere but on the SCIM routes, and only it is taken there."""
    if access is Access.SCIM:
        require_scim(caller)
    elif caller.role is Role.SCIM:
        raise Forbidden(SCIM_ONLY)
    elif access is Access.ADMIN:
        require_admin(caller)
    elif access is Access.MEMBER:
        require_member(caller)
    elif access is Access.WRITER and caller.role is Role.MEMBER:
        raise Forbidden("This operation needs an organization admin (or operator) token.")


async def authorize(request: Request, access: Access) -> Caller | None:
    """Token, organization and role, before anything reads the body (docs/reliability.md)."""
    if access is Access.ANYONE:
        return None
    authenticate = app_state(request).authenticate
    caller = await authenticate(request, scope_bearer(request.scope))
    check_access(caller, access)
    return caller


async def get_caller(
    request: Request,
    _declared: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
) -> Caller:
    """The route's caller. ``bearer_scheme`` declares the scheme in the API document;
    the token itself is read by ``scope_bearer``, as ``authorize`` reads it."""
    state = request_state(request)
    if state.caller is not None:  # authorized by the route before the body was read
        return state.caller
    authenticate = app_state(request).authenticate
    caller = await authenticate(request, scope_bearer(request.scope))
    state.caller = caller
    return caller


CallerDep = Annotated[Caller, Depends(get_caller)]


async def tenant_member(caller: CallerDep) -> Tenant:
    return require_member(caller)


async def tenant_admin(caller: CallerDep) -> Tenant:
    return require_admin(caller)


async def tenant_scim(caller: CallerDep) -> Tenant:
    return require_scim(caller)


MemberOf = Annotated[Tenant, Depends(tenant_member)]
"""Reads: any member (or admin) of the caller's organization."""
AdminOf = Annotated[Tenant, Depends(tenant_admin)]
"""Writes: an admin of the caller's organization."""
ScimOf = Annotated[Tenant, Depends(tenant_scim)]
"""Provisioning: the organization's directory, with a ``scim`` token."""


def access_of(dependant: Dependant, methods: set[str]) -> Access:
    """The access a route declares through its dependencies."""
    calls: set[Any] = set()
    stack = [dependant]
    while stack:
        current = stack.pop()
        stack.extend(current.dependencies)
        calls.add(current.call)
    if tenant_scim in calls:
        return Access.SCIM
    if tenant_admin in calls:
        return Access.ADMIN
    if tenant_member in calls:
        return Access.MEMBER
    if get_caller in calls:
        return Access.WRITER if methods & WRITE_METHODS else Access.CALLER
    return Access.ANYONE
