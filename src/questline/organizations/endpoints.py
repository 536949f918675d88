"""``/organization``: the caller's organization (its name, shown in invitations)."""

from __future__ import annotations

from fastapi import APIRouter

from questline.organizations import schemas, service
from questline.web.access import AdminOf, MemberOf
from questline.web.openapi import problem_responses
from questline.web.routing import SessionDep, TransactionalRoute

router = APIRouter(prefix="/organization", tags=["organization"], route_class=TransactionalRoute)


@router.get("", response_model=schemas.Organization, responses=problem_responses(401, 403))
async def get_organization(tenant: MemberOf, session: SessionDep) -> schemas.Organization:
    """The caller's organization."""
    row = await service.get_organization(session, tenant.org_id)
    return schemas.Organization.model_validate(row)


@router.patch(
    "",
    response_model=schemas.Organization,
    responses=problem_responses(400, 401, 403, 415, 422),
)
async def update_organization(
    tenant: AdminOf, session: SessionDep, data: schemas.OrganizationUpdate
) -> schemas.Organization:
    """Set (or, with `null`, remove) the organization's name."""
    row = await service.rename_organization(session, tenant.org_id, data.name)
    return schemas.Organization.model_validate(row)
