from __future__ import annotations

from fastapi import APIRouter, Request, Response

from questline.auth.dependencies import MemberOf
from questline.members import schemas, service
from questline.web.openapi import problem_responses
from questline.web.pagination import PageDep, announce_next_page, split_page
from questline.web.paths import MemberId
from questline.web.routing import SessionDep, TransactionalRoute

router = APIRouter(prefix="/member", tags=["members"], route_class=TransactionalRoute)


@router.get("", response_model=list[schemas.Member], responses=problem_responses(401, 403, 422))
async def list_members(
    request: Request, response: Response, tenant: MemberOf, session: SessionDep, page: PageDep
) -> list[schemas.Member]:
    """Every member of the caller's organization, by e-mail, with the teams each is in."""
    rows = await service.list_members(session, org_id=tenant.org_id, page=page)
    rows, more = split_page(rows, page)
    announce_next_page(request, response, page, service.cursor_of(rows[-1]) if more else None)
    return await service.describe(session, org_id=tenant.org_id, members=rows)


@router.get(
    "/{member_id}", response_model=schemas.Member, responses=problem_responses(401, 403, 404)
)
async def get_member(member_id: MemberId, tenant: MemberOf, session: SessionDep) -> schemas.Member:
    """One member of the caller's organization, with the teams it is in."""
    member = await service.get_member(session, org_id=tenant.org_id, member_id=member_id)
    [described] = await service.describe(session, org_id=tenant.org_id, members=[member])
    return described
