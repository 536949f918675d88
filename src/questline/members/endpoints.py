from __future__ import annotations

from fastapi import APIRouter

from questline.members import schemas, service
from questline.web.access import MemberOf
from questline.web.openapi import problem_responses
from questline.web.pagination import (
    BoundedPagingDep,
)
from questline.web.paths import MemberId
from questline.web.routing import SessionDep, TransactionalRoute

router = APIRouter(prefix="/member", tags=["members"], route_class=TransactionalRoute)


@router.get("", response_model=list[schemas.Member], responses=problem_responses(401, 403, 422))
async def list_members(
    tenant: MemberOf, session: SessionDep, paging: BoundedPagingDep
) -> list[schemas.Member]:
    """The members of the caller's organization, by e-mail, with the teams each is in;
    paged (`limit`, default 100, at most 1000; the next page in the `Link` header).
    Members (role `member`) see names, not e-mail addresses (`Email` is null)."""
    rows = await service.list_members(session, org_id=tenant.org_id, page=paging.page)
    members = paging.rows(rows, service.cursor_of)
    described = await service.describe(session, org_id=tenant.org_id, members=members)
    return service.as_seen_by(tenant, described)


@router.get(
    "/{member_id}", response_model=schemas.Member, responses=problem_responses(401, 403, 404)
)
async def get_member(member_id: MemberId, tenant: MemberOf, session: SessionDep) -> schemas.Member:
    """One member of the caller's organization, with the teams it is in (members see no
    e-mail address)."""
    member = await service.get_member(session, org_id=tenant.org_id, member_id=member_id)
    described = await service.describe(session, org_id=tenant.org_id, members=[member])
    return service.as_seen_by(tenant, described)[0]
