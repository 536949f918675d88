"""``/auth/session``: the dashboard's cookie session (sign in, who am I, sign out).

Not a ``TransactionalRoute``: signing in has no caller yet. Each handler runs its own
short transaction.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import jwt
from fastapi import APIRouter, Body, Request, Response, status
from fastapi.openapi.models import Example
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.auth import sessions
from questline.auth.authentication import identity_of
from questline.auth.models import DashboardSession
from questline.auth.schemas import SessionCreate, SessionInfo
from questline.members.models import Member, TeamMembership, membership_of_member
from questline.members.service import email_key
from questline.organizations.service import ensure_organization
from questline.storage import tenancy
from questline.web.bodies import CheckedBodyRoute
from questline.web.errors import Unauthorized
from questline.web.openapi import problem_responses
from questline.web.state import app_state

router = APIRouter(prefix="/auth", tags=["sign-in"], route_class=CheckedBodyRoute)

_EXAMPLES: dict[str, Example] = {
    "code": Example(
        summary="A sign-in link's code",
        value={"Code": "Qm9vdHN0cmFwLWNvZGUtZXhhbXBsZS0wMDAwMDAwMDAwMDA"},
    ),
    "idToken": Example(
        summary="An identity provider's ID token",
        value={"IdToken": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhZGEifQ.c2lnbmF0dXJl"},
    ),
}


async def _team_ids(session: AsyncSession, org_id: uuid.UUID, email: str | None) -> list[uuid.UUID]:
    if not email:
        return []
    rows = await session.execute(
        select(TeamMembership.team_id)
        .join(Member, membership_of_member())
        .where(Member.organization_id == org_id, Member.email_key == email_key(email))
        .order_by(TeamMembership.team_id)
    )
    return list(rows.scalars())


async def _info(session: AsyncSession, row: DashboardSession) -> SessionInfo:
    return SessionInfo(
        subject=row.subject,
        role=row.role,
        organization_id=row.organization_id,
        email=row.email,
        team_ids=await _team_ids(session, row.organization_id, row.email),
        expires_at=row.expires_at,
        csrf_token=row.csrf_token,
    )


def _email_claim(token: str) -> str | None:
    """The `email` claim of a token already verified (read only after verification)."""
    claims = jwt.decode(token, options={"verify_signature": False})
    email = claims.get("email")
    return email if isinstance(email, str) and "@" in email and len(email) <= 320 else None


def _cookie(request: Request) -> str:
    cookie = request.cookies.get(sessions.SESSION_COOKIE)
    if not cookie:
        raise Unauthorized("Not signed in to the dashboard.")
    return cookie


def _json(info: SessionInfo, status_code: int = 200) -> Response:
    return Response(
        content=info.model_dump_json(by_alias=True),
        status_code=status_code,
        media_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


_RESPONSES: dict[int | str, dict[str, Any]] = {
    **problem_responses(400, 401, 403, 415, 422),
}


@router.post(
    "/session",
    status_code=status.HTTP_201_CREATED,
    response_model=SessionInfo,
    summary="Sign in to the dashboard",
    responses=_RESPONSES,
)
async def create_session(
    request: Request,
    data: Annotated[SessionCreate, Body(openapi_examples=_EXAMPLES)],
) -> Response:
    """Exchange a one-time sign-in code (`questline signin-link`) or a verified token
    (an identity provider's ID token) for the session cookie `questline_session`
    (HttpOnly, SameSite=Strict, Secure over HTTPS). The body repeats `GET /auth/session`."""
    state = app_state(request)
    # No page of another site may sign a browser in (to an account of its choosing).
    sessions.check_origin(request, state.settings)
    async with state.db.session(write=True) as session:
        if data.code is not None:
            grant = await sessions.exchange_code(session, settings=state.settings, code=data.code)
        else:
            caller = identity_of(request).tokens.verify(data.id_token or "")
            if caller.org_id is not None:
                await tenancy.act_for(session, caller.org_id)
            grant = await sessions.session_for_caller(
                session,
                settings=state.settings,
                caller=caller,
                email=_email_claim(data.id_token or ""),
            )
        await ensure_organization(session, grant.row.organization_id)
        await tenancy.act_for(session, grant.row.organization_id)
        info = await _info(session, grant.row)
    identity_of(request).known_orgs.add(grant.row.organization_id)
    response = _json(info, status.HTTP_201_CREATED)
    sessions.set_cookie(response, request, state.settings, grant)
    return response


@router.get(
    "/session",
    response_model=SessionInfo,
    summary="The current dashboard session",
    responses=problem_responses(401),
)
async def read_session(request: Request) -> Response:
    """Who is signed in (from the session cookie), their teams, and the CSRF token."""
    state = app_state(request)
    async with state.db.session(write=False) as session:
        row = await sessions.find_session(session, _cookie(request))
        if row is None:
            raise Unauthorized("Your dashboard session has expired or was ended. Sign in again.")
        await tenancy.act_for(session, row.organization_id)
        return _json(await _info(session, row))


@router.delete(
    "/session",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Sign out of the dashboard",
    responses=problem_responses(401, 403),
)
async def delete_session(request: Request) -> Response:
    """End the session (needs `X-CSRF-Token`) and clear the cookie."""
    state = app_state(request)
    cookie = _cookie(request)
    async with state.db.session(write=True) as session:
        row = await sessions.find_session(session, cookie)
        if row is not None:
            sessions.check_csrf(request, row, state.settings)
            await sessions.end_session(session, cookie)
    response = Response(status_code=status.HTTP_204_NO_CONTENT)
    sessions.clear_cookie(response, request, state.settings)
    return response
