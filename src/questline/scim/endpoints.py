"""``/scim/v2``: a directory provisions members (``Users``) and teams (``Groups``).

Every route takes the organization's ``scim`` token (``ScimOf``) and nothing else takes
it; bodies and answers are ``application/scim+json`` (plain JSON is read too); errors
are SCIM error documents (``questline.scim.errors``). Discovery lives in
``questline.scim.discovery``. ``/organization/scim-tokens`` is the admin's way to
create, list and revoke those tokens (``questline.auth.scim_tokens``).
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request, Response, status
from scim2_models import Context, Group, ResponseParameters, User

from questline import audit
from questline.auth import scim_tokens
from questline.scim import discovery, resources, service
from questline.scim.errors import ScimRoute
from questline.scim.http import (
    BASE_PATH,
    GROUP_EXAMPLE,
    PATCH_EXAMPLE,
    USER_EXAMPLE,
    Attributes,
    Count,
    Excluded,
    Filter,
    IfMatch,
    SortBy,
    SortOrder,
    StartIndex,
    base_url,
    documented,
    listing,
    page_of,
    read_body,
    response_parameters,
    single,
)
from questline.scim.schemas import ScimToken, ScimTokenCreate, ScimTokenInfo
from questline.web.access import AdminOf, ScimOf
from questline.web.errors import FieldError, Unprocessable, not_found
from questline.web.openapi import problem_responses
from questline.web.routing import SessionDep, TransactionalRoute
from questline.web.state import app_state

router = APIRouter(prefix=BASE_PATH, tags=["scim"], route_class=ScimRoute)
router.include_router(discovery.router)


# Users ------------------------------------------------------------------------------


@router.get(
    "/Users",
    summary="List or filter SCIM users",
    **documented(400),
)
async def scim_list_users(
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    filter: Filter = None,
    start_index: StartIndex = None,
    count: Count = None,
    attributes: Attributes = None,
    excluded_attributes: Excluded = None,
    sort_by: SortBy = None,
    sort_order: SortOrder = None,
) -> Response:
    """The organization's members as SCIM users, filtered (`userName`, `emails.value`,
    `externalId`, `name.givenName`, `active`, `id`; `eq ne co sw ew gt ge lt le pr`,
    `and or not`) and paged (`startIndex`, `count`)."""
    parameters = response_parameters(User, attributes, excluded_attributes)
    page = page_of(start_index, count, request)
    total, users = await service.list_users(
        session, org_id=tenant.org_id, filter=filter, page=page, base_url=base_url(request)
    )
    return listing(total, page, users, parameters)


@router.post(
    "/Users",
    status_code=status.HTTP_201_CREATED,
    summary="Create a SCIM user",
    **documented(400, 409, 413, 415, body=USER_EXAMPLE),
)
async def scim_create_user(request: Request, tenant: ScimOf, session: SessionDep) -> Response:
    """A new member of the organization (409 `uniqueness` when the `userName` or e-mail
    is taken)."""
    user = service.parse_resource(User, await read_body(request), Context.RESOURCE_CREATION_REQUEST)
    member = await service.create_user(session, org_id=tenant.org_id, user=user)
    created = await service.user_of(session, member, base_url(request))
    return single(created, status_code=201, location=True)


@router.get("/Users/{user_id}", summary="Read a SCIM user", **documented(400, 404))
async def scim_get_user(
    user_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    attributes: Attributes = None,
    excluded_attributes: Excluded = None,
) -> Response:
    """One member as a SCIM user, with its `ETag` (`meta.version`)."""
    parameters = response_parameters(User, attributes, excluded_attributes)
    member = await service.get_member(session, org_id=tenant.org_id, user_id=user_id)
    return single(await service.user_of(session, member, base_url(request)), parameters)


async def _current_user(
    session: SessionDep, request: Request, tenant: ScimOf, user_id: str, if_match: str | None
) -> User[Any]:
    member = await service.get_member(
        session, org_id=tenant.org_id, user_id=user_id, for_update=True
    )
    current = await service.user_of(session, member, base_url(request))
    service.check_if_match(resources.dump(current)["meta"]["version"], if_match)
    return current


@router.put(
    "/Users/{user_id}",
    summary="Replace a SCIM user",
    **documented(400, 404, 409, 412, 413, 415, body=USER_EXAMPLE),
)
async def scim_replace_user(
    user_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    if_match: IfMatch = None,
) -> Response:
    """Replace the member's attributes (`active: false` deactivates it: out of sign-in
    and of its teams, which keep their progress)."""
    await _current_user(session, request, tenant, user_id, if_match)
    user = service.parse_resource(
        User, await read_body(request), Context.RESOURCE_REPLACEMENT_REQUEST
    )
    member = await service.get_member(session, org_id=tenant.org_id, user_id=user_id)
    member = await service.write_user(session, member=member, user=user)
    return single(await service.user_of(session, member, base_url(request)))


@router.patch(
    "/Users/{user_id}",
    summary="Patch a SCIM user",
    **documented(
        400,
        404,
        409,
        412,
        413,
        415,
        body={
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "replace", "path": "active", "value": False}],
        },
    ),
)
async def scim_patch_user(
    user_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    if_match: IfMatch = None,
) -> Response:
    """Add, remove or replace attributes (RFC 7644 §3.5.2)."""
    current = await _current_user(session, request, tenant, user_id, if_match)
    patch = service.parse_patch(User, await read_body(request))
    patched = service.apply_patch(patch, service.patch_target(current, patch))
    member = await service.get_member(session, org_id=tenant.org_id, user_id=user_id)
    member = await service.write_user(session, member=member, user=patched)
    return single(await service.user_of(session, member, base_url(request)))


@router.delete(
    "/Users/{user_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Delete a SCIM user",
    **documented(404, 412),
)
async def scim_delete_user(
    user_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    if_match: IfMatch = None,
) -> Response:
    """Remove the member from the organization: out of its teams (which keep their
    progress and history) and out of sign-in."""
    await _current_user(session, request, tenant, user_id, if_match)
    member = await service.get_member(session, org_id=tenant.org_id, user_id=user_id)
    await service.delete_user(session, member=member)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


# Groups -----------------------------------------------------------------------------


@router.get("/Groups", summary="List or filter SCIM groups", **documented(400))
async def scim_list_groups(
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    filter: Filter = None,
    start_index: StartIndex = None,
    count: Count = None,
    attributes: Attributes = None,
    excluded_attributes: Excluded = None,
    sort_by: SortBy = None,
    sort_order: SortOrder = None,
) -> Response:
    """The organization's teams as SCIM groups, filtered (`displayName`, `externalId`,
    `id`, `members.value`) and paged; `excludedAttributes=members` leaves the member
    lists out (and unread)."""
    parameters = response_parameters(Group, attributes, excluded_attributes)
    page = page_of(start_index, count, request)
    wants_members = parameters is None or _wants_members(parameters)
    total, groups = await service.list_groups(
        session,
        org_id=tenant.org_id,
        filter=filter,
        page=page,
        base_url=base_url(request),
        with_members=wants_members,
    )
    return listing(total, page, groups, parameters)


def _wants_members(parameters: ResponseParameters[Any]) -> bool:
    excluded = {str(p).lower() for p in parameters.excluded_attributes or []}
    wanted = {str(p).lower().split(".")[0] for p in parameters.attributes or []}
    if parameters.attributes:
        return "members" in wanted
    return "members" not in excluded


@router.post(
    "/Groups",
    status_code=status.HTTP_201_CREATED,
    summary="Create a SCIM group",
    **documented(400, 409, 413, 415, body=GROUP_EXAMPLE),
)
async def scim_create_group(request: Request, tenant: ScimOf, session: SessionDep) -> Response:
    """A new team with the members listed (409 `uniqueness` when the name is taken)."""
    group = service.parse_resource(
        Group, await read_body(request), Context.RESOURCE_CREATION_REQUEST
    )
    team = await service.create_group(session, org_id=tenant.org_id, group=group)
    created = await service.group_of(session, team, base_url(request))
    return single(created, status_code=201, location=True)


@router.get("/Groups/{group_id}", summary="Read a SCIM group", **documented(400, 404))
async def scim_get_group(
    group_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    attributes: Attributes = None,
    excluded_attributes: Excluded = None,
) -> Response:
    """One team as a SCIM group, with its members and `ETag`."""
    parameters = response_parameters(Group, attributes, excluded_attributes)
    team = await service.get_team(session, org_id=tenant.org_id, group_id=group_id)
    return single(await service.group_of(session, team, base_url(request)), parameters)


async def _current_group(
    session: SessionDep, request: Request, tenant: ScimOf, group_id: str, if_match: str | None
) -> Group:
    team = await service.get_team(session, org_id=tenant.org_id, group_id=group_id, for_update=True)
    current = await service.group_of(session, team, base_url(request))
    service.check_if_match(resources.dump(current)["meta"]["version"], if_match)
    return current


@router.put(
    "/Groups/{group_id}",
    summary="Replace a SCIM group",
    **documented(400, 404, 409, 412, 413, 415, body=GROUP_EXAMPLE),
)
async def scim_replace_group(
    group_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    if_match: IfMatch = None,
) -> Response:
    """Rename the team and set its members to exactly those listed."""
    await _current_group(session, request, tenant, group_id, if_match)
    group = service.parse_resource(
        Group, await read_body(request), Context.RESOURCE_REPLACEMENT_REQUEST
    )
    team = await service.get_team(session, org_id=tenant.org_id, group_id=group_id)
    team = await service.write_group(session, team=team, group=group)
    return single(await service.group_of(session, team, base_url(request)))


@router.patch(
    "/Groups/{group_id}",
    summary="Patch a SCIM group",
    **documented(400, 404, 409, 412, 413, 415, body=PATCH_EXAMPLE),
)
async def scim_patch_group(
    group_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    if_match: IfMatch = None,
) -> Response:
    """Add, remove or replace members (`members[value eq "…"]` paths too), the name or
    `externalId`."""
    current = await _current_group(session, request, tenant, group_id, if_match)
    patch = service.parse_patch(Group, await read_body(request))
    patched = service.apply_patch(patch, current)
    team = await service.get_team(session, org_id=tenant.org_id, group_id=group_id)
    team = await service.write_group(session, team=team, group=patched)
    return single(await service.group_of(session, team, base_url(request)))


@router.delete(
    "/Groups/{group_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Delete a SCIM group",
    **documented(404, 412),
)
async def scim_delete_group(
    group_id: str,
    request: Request,
    tenant: ScimOf,
    session: SessionDep,
    if_match: IfMatch = None,
) -> Response:
    """Delete the team, as `DELETE /team/{id}` does (its memberships and progress go;
    its members stay in the organization)."""
    await _current_group(session, request, tenant, group_id, if_match)
    team = await service.get_team(session, org_id=tenant.org_id, group_id=group_id)
    await service.delete_group(session, team=team)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


# The admin's tokens -----------------------------------------------------------------

token_router = APIRouter(prefix="/organization", tags=["scim"], route_class=TransactionalRoute)


def _lifetime(request: Request, days: int | None) -> dt.timedelta:
    most = app_state(request).settings.scim_token_max_days
    if days is not None and days > most:
        raise Unprocessable(
            f"A SCIM token is valid for {most} days at most here.",
            errors=[FieldError(field="Days", message=f"At most {most}.")],
        )
    return dt.timedelta(days=days or most)


async def _issue(
    request: Request, tenant: AdminOf, session: SessionDep, data: ScimTokenCreate
) -> ScimToken:
    issued = await scim_tokens.issue(
        session,
        org_id=tenant.org_id,
        label=data.label,
        lifetime=_lifetime(request, data.days),
    )
    record = issued.record
    await audit.record(  # never the token itself
        session,
        organization_id=tenant.org_id,
        action="scim_token.created",
        target=("scim_token", record.id),
        after={"Label": record.label, "ExpiresAt": record.expires_at.isoformat()},
    )
    return ScimToken(
        id=record.id,
        label=record.label,
        token=issued.token,
        base_url=base_url(request),
        created_at=record.created_at,
        expires_at=record.expires_at,
    )


@token_router.post(
    "/scim-tokens",
    status_code=status.HTTP_201_CREATED,
    response_model=ScimToken,
    summary="Create a SCIM token",
    responses=problem_responses(400, 401, 403, 415, 422),
)
async def create_scim_token(
    request: Request,
    tenant: AdminOf,
    session: SessionDep,
    data: Annotated[ScimTokenCreate | None, Body()] = None,
) -> ScimToken:
    """A bearer token for the organization's directory (Okta, Entra ID, Keycloak…): it
    can call `/scim/v2` and nothing else. The secret is in this answer only; the token
    is valid `Days` days (at most `QUESTLINE_SCIM_TOKEN_MAX_DAYS`, 365 unless set
    shorter) until revoked. Rotate by creating a new one, then revoking the old one."""
    return await _issue(request, tenant, session, data or ScimTokenCreate())


@token_router.post(
    "/scim-token",
    status_code=status.HTTP_201_CREATED,
    response_model=ScimToken,
    summary="Create a SCIM token (the dashboard's route)",
    responses=problem_responses(400, 401, 403, 415, 422),
)
async def create_scim_token_from_dashboard(
    request: Request,
    tenant: AdminOf,
    session: SessionDep,
    data: Annotated[ScimTokenCreate | None, Body()] = None,
) -> ScimToken:
    """As `POST /organization/scim-tokens`: kept for the dashboard and scripts that
    call it."""
    return await _issue(request, tenant, session, data or ScimTokenCreate())


@token_router.get(
    "/scim-tokens",
    response_model=list[ScimTokenInfo],
    summary="List the SCIM tokens",
    responses=problem_responses(401, 403),
)
async def list_scim_tokens(tenant: AdminOf, session: SessionDep) -> list[ScimTokenInfo]:
    """The organization's SCIM tokens, newest first, revoked and expired ones included
    (`Status`), with when each was last used; never their secrets."""
    now = dt.datetime.now(dt.UTC)
    return [
        ScimTokenInfo(
            id=record.id,
            label=record.label,
            status=scim_tokens.status_of(record, now),
            created_at=record.created_at,
            expires_at=record.expires_at,
            revoked_at=record.revoked_at,
            last_used_at=record.last_used_at,
        )
        for record in await scim_tokens.list_tokens(session, org_id=tenant.org_id)
    ]


@token_router.delete(
    "/scim-tokens/{token_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Revoke a SCIM token",
    responses=problem_responses(401, 403, 404),
)
async def revoke_scim_token(token_id: uuid.UUID, tenant: AdminOf, session: SessionDep) -> Response:
    """The token stops working at once (`401` on its next request). Revoking a revoked
    token changes nothing (`204`)."""
    record = await scim_tokens.get_token(session, org_id=tenant.org_id, token_id=token_id)
    if record is None:
        raise not_found("SCIM token")
    if await scim_tokens.revoke(session, record):
        await audit.record(
            session,
            organization_id=tenant.org_id,
            action="scim_token.revoked",
            target=("scim_token", record.id),
            before={"Label": record.label, "RevokedAt": None},
            after={
                "Label": record.label,
                "RevokedAt": record.revoked_at.isoformat() if record.revoked_at else None,
            },
        )
    return Response(status_code=status.HTTP_204_NO_CONTENT)
