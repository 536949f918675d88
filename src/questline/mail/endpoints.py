"""The e-mail routes: ``POST /auth/signin-link`` (anyone) and ``POST /member/{id}/invite``
(admins).

They live here, not in ``auth`` or ``members``: e-mail builds on both (it mints the sign-in
codes of ``auth`` for the members of ``members``), and a package never imports one that
builds on it (tests/test_layering.py).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Request, Response, status

from questline.auth import sessions
from questline.mail import schemas, service
from questline.mail.limits import limits_of
from questline.members import service as members_service
from questline.storage import tenancy
from questline.storage.db import utcnow
from questline.web.access import AdminOf
from questline.web.bodies import CheckedBodyRoute
from questline.web.errors import Conflict, not_found
from questline.web.openapi import problem_responses
from questline.web.paths import MemberId
from questline.web.routing import SessionDep, TransactionalRoute
from questline.web.state import app_state

signin_router = APIRouter(prefix="/auth", tags=["sign-in"], route_class=CheckedBodyRoute)
invite_router = APIRouter(prefix="/member", tags=["members"], route_class=TransactionalRoute)

_ACCEPTED = schemas.SigninLinkAccepted().model_dump_json(by_alias=True).encode()


@signin_router.post(
    "/signin-link",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=schemas.SigninLinkAccepted,
    summary="E-mail me a sign-in link",
    responses=problem_responses(400, 403, 409, 413, 415, 422, 429, 503),
)
async def request_signin_link(
    request: Request, data: Annotated[schemas.SigninLinkRequest, Body()]
) -> Response:
    """Ask for a one-time sign-in link by e-mail; no authentication. When the address is
    an active member's of the organization (not one its directory or a platform's roster
    deactivated), an e-mail with a link to the dashboard goes out
    within seconds (the session has the role `member`). The answer is the same `202`
    either way, and so is the work done before it (the request is queued; the sender
    decides), so it tells nobody who is a member. Limited per address and per client
    (`429`). `409` (`mail-not-configured`) when this service sends no e-mail (the
    problem says what to set)."""
    state = app_state(request)
    # Another site's page may not make a visitor's browser ask (a nuisance, not a leak).
    sessions.check_origin(request, state.settings)
    service.require_mail(state.settings)
    await limits_of(request).check(request, org_id=data.organization_id, email=str(data.email))
    # The request names its organization, and queueing reads nothing of it: the
    # transaction acts for that one (row-level security), as an authenticated one would.
    with tenancy.acting_for(data.organization_id):
        async with state.db.session(write=True) as session:
            await service.queue_signin_link(
                session, org_id=data.organization_id, email=str(data.email)
            )
    return Response(
        content=_ACCEPTED,
        status_code=status.HTTP_202_ACCEPTED,
        media_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


@invite_router.post(
    "/{member_id}/invite",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=schemas.Invitation,
    summary="E-mail a member an invitation",
    responses=problem_responses(401, 403, 404, 409, 503),
)
async def invite_member(
    member_id: MemberId, request: Request, tenant: AdminOf, session: SessionDep
) -> schemas.Invitation:
    """Send the member an e-mail inviting them to the organization's dashboard (with the
    organization's name, `PATCH /organization`), holding a one-time sign-in link valid
    `QUESTLINE_MAIL_INVITE_LINK_HOURS` (72). Each call sends one more; send an
    `Idempotency-Key` to make a retry safe. `409` when the member was deactivated (by
    the organization's directory or a platform's roster): it may not sign in; `409`
    (`mail-not-configured`) when this service sends no e-mail. Each invitation is in the
    audit log (`member.invited`)."""
    member = await members_service.get_member(session, org_id=tenant.org_id, member_id=member_id)
    if member.active is False:
        raise Conflict(
            "This member was deactivated (by the organization's directory or a platform's "
            "roster) and may not sign in: activate it again before inviting it."
        )
    service.require_mail(app_state(request).settings)
    queued = await service.queue_invites(session, org_id=tenant.org_id, member_ids=[member.id])
    if member.id not in queued:  # deleted meanwhile
        raise not_found("member")
    return schemas.Invitation(
        id=queued[member.id], member_id=member.id, email=member.email, queued_at=utcnow()
    )
