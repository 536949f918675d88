"""LTI 1.3 routes.

* ``/lti/platform``: an admin registers the organization's learning platforms
  (transactional, audited).
* ``/.well-known/jwks.json``: Questline's public keys, for the platforms.
* ``/lti/login``, ``/lti/launch``, ``/lti/deep-link``: the browser's way in from the
  platform (``browser``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response, status
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials

from questline.lti import advantage, keys, registrations, roster, schemas
from questline.storage import tenancy
from questline.web.access import Access, AdminOf, authorize, bearer_scheme
from questline.web.errors import PublicUrlRequired, ServiceUnavailable
from questline.web.openapi import problem_responses
from questline.web.paths import PlatformId
from questline.web.routing import SessionDep, TransactionalRoute, url_of
from questline.web.state import app_state

router = APIRouter(prefix="/lti/platform", tags=["lti"], route_class=TransactionalRoute)
keys_router = APIRouter(tags=["lti"])


def public_url(request: Request) -> str:
    """The platform posts launches to absolute URLs registered with it: on
    ``QUESTLINE_PUBLIC_URL``, never guessed from a request's ``Host``."""
    found = app_state(request).settings.public_url
    if found is None:
        raise PublicUrlRequired(
            "A learning platform launches Questline at the URLs registered with it: "
            "set QUESTLINE_PUBLIC_URL."
        )
    return found


def shown_tool_urls(request: Request) -> schemas.ToolUrls | None:
    """The tool's URLs for a read: none while ``QUESTLINE_PUBLIC_URL`` is unset (a read
    does not fail for a setting only a registration needs)."""
    if app_state(request).settings.public_url is None:
        return None
    return tool_urls(request)


def tool_urls(request: Request) -> schemas.ToolUrls:
    base = public_url(request)
    return schemas.ToolUrls(
        login_url=f"{base}/lti/login",
        redirect_url=f"{base}/lti/launch",
        key_set_url=f"{base}/.well-known/jwks.json",
        deep_linking_url=f"{base}/lti/launch",
        target_link_uri=f"{base}/lti/view/leaderboard",
    )


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.Platform,
    summary="Register a learning platform",
    responses=problem_responses(400, 401, 403, 409, 413, 415, 422, 503),
)
async def create_lti_platform(
    request: Request,
    response: Response,
    tenant: AdminOf,
    session: SessionDep,
    data: schemas.PlatformCreate,
) -> schemas.Platform:
    """Register a platform (Moodle, Canvas, Open edX, Brightspace) that launches
    Questline with LTI 1.3. Its URLs must be https (unless the server sets
    `QUESTLINE_LTI_ALLOW_HTTP=true`); the token and key set URLs, which Questline
    fetches, must resolve to public addresses (unless
    `QUESTLINE_LTI_ALLOW_PRIVATE_URLS=true`). A deployment id that this issuer and
    client id already registered, here or in another organization, is 409. The answer's
    `Tool` gives the URLs to paste into the platform (docs/platforms.md)."""
    tool = tool_urls(request)  # before anything is saved
    settings = app_state(request).settings
    platform = await registrations.create_platform(
        session, org_id=tenant.org_id, data=data, settings=settings
    )
    response.headers["Location"] = url_of(request, "get_lti_platform", platform_id=str(platform.id))
    return registrations.to_schema(platform, data.deployment_ids, tool)


@router.get(
    "",
    response_model=list[schemas.Platform],
    summary="The organization's learning platforms",
    responses=problem_responses(401, 403),
)
async def list_lti_platforms(
    request: Request, tenant: AdminOf, session: SessionDep
) -> list[schemas.Platform]:
    """Every platform the organization registered, oldest first."""
    tool = shown_tool_urls(request)
    found = await registrations.list_platforms(session, org_id=tenant.org_id)
    return [
        registrations.to_schema(p, await registrations.deployment_ids(session, p), tool)
        for p in found
    ]


@router.get(
    "/{platform_id}",
    name="get_lti_platform",
    response_model=schemas.Platform,
    summary="A learning platform",
    responses=problem_responses(401, 403, 404),
)
async def get_lti_platform(
    request: Request, platform_id: PlatformId, tenant: AdminOf, session: SessionDep
) -> schemas.Platform:
    """The registration, the title of the course of its latest launch and the URLs to
    paste into the platform."""
    platform = await registrations.get_platform(
        session, org_id=tenant.org_id, platform_id=platform_id
    )
    deployments = await registrations.deployment_ids(session, platform)
    return registrations.to_schema(platform, deployments, shown_tool_urls(request))


@router.patch(
    "/{platform_id}",
    response_model=schemas.Platform,
    summary="Change a learning platform",
    responses=problem_responses(400, 401, 403, 404, 409, 415, 422, 503),
)
async def update_lti_platform(
    request: Request,
    platform_id: PlatformId,
    tenant: AdminOf,
    session: SessionDep,
    data: schemas.PlatformUpdate,
) -> schemas.Platform:
    """Change the fields given; `DeploymentIds` replaces the list (launches of a
    deployment left out are refused from now on)."""
    tool = tool_urls(request)
    platform = await registrations.get_platform(
        session, org_id=tenant.org_id, platform_id=platform_id, for_update=True
    )
    platform = await registrations.update_platform(
        session, platform=platform, data=data, settings=app_state(request).settings
    )
    return registrations.to_schema(
        platform, await registrations.deployment_ids(session, platform), tool
    )


@router.delete(
    "/{platform_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Remove a learning platform",
    responses=problem_responses(401, 403, 404),
)
async def delete_lti_platform(
    platform_id: PlatformId, tenant: AdminOf, session: SessionDep
) -> Response:
    """Launches from the platform are refused from now on; members it made stay
    (sessions already started run until they expire or their people sign out)."""
    platform = await registrations.get_platform(
        session, org_id=tenant.org_id, platform_id=platform_id, for_update=True
    )
    await registrations.delete_platform(session, platform=platform)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


_KEY_SET_EXAMPLE = {
    "keys": [
        {
            "kty": "RSA",
            "kid": "p1Yk3cT0vX8bQm2A",
            "use": "sig",
            "alg": "RS256",
            "e": "AQAB",
            "n": "vDTCne_xbfdueAS8JyxdQ2xyxnCI8dkLSWwZpMfcs0o8r2yXNEFCyzSH2S8MLIoN",
        }
    ]
}


@keys_router.get(
    "/.well-known/jwks.json",
    summary="Questline's public keys (JWKS)",
    response_class=JSONResponse,
    responses={
        200: {
            "description": "The JSON Web Key Set: the signing key and, after a rotation, "
            "the one before.",
            "content": {"application/json": {"example": _KEY_SET_EXAMPLE}},
        }
    },
)
async def get_lti_key_set(request: Request) -> JSONResponse:
    """The public keys that verify what Questline signs as an LTI tool (client
    assertions at a platform's token endpoint, deep-linking responses). Register this
    URL as the tool's public keyset URL. Two keys are listed after a rotation
    (docs/platforms.md, "Questline's keys")."""
    state = app_state(request)
    async with state.db.session(write=False) as session:
        published = await keys.published_key_set(session)
    if not published["keys"]:  # first use: make the first key
        async with state.db.session(write=True) as session:
            await keys.signing_key(
                session, settings=state.settings, signing_secret=state.signing_secret()
            )
            published = await keys.published_key_set(session)
    return JSONResponse(published, headers={"Cache-Control": "public, max-age=300"})


# Not transactional: the roster is read from the platform with no transaction open
# (on SQLite a POST's transaction holds the one write lock); ``roster.sync`` runs its
# own short ones around the calls.
sync_router = APIRouter(prefix="/lti/platform", tags=["lti"])


@sync_router.post(
    "/{platform_id}/sync",
    response_model=schemas.RosterSync,
    summary="Sync the course roster (NRPS)",
    responses=problem_responses(401, 403, 404, 409, 503),
)
async def sync_lti_roster(
    request: Request,
    platform_id: PlatformId,
    _declared: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)],
) -> schemas.RosterSync:
    """Read the course's roster with the platform's Names and Role Provisioning
    Services (a client-credentials token signed with Questline's key) and make the
    organization's members follow it: new people are added (by e-mail, else by their
    platform id), people gone from the course or inactive there are deactivated (out of
    their teams, their progress kept). Idempotent. 409 before a launch has named the
    roster service; 503 when the platform refuses or cannot be reached."""
    # Checked here, as a transactional route's access is (web.access.authorize): the
    # route opens no request transaction to hold while the platform answers.
    caller = await authorize(request, Access.ADMIN)
    assert caller is not None
    assert caller.org_id is not None
    state = app_state(request)
    # Its own transaction acts for the caller's organization, as a transactional
    # route's does (row-level security; ``roster.sync`` acts for it too).
    with tenancy.acting_for(caller.org_id):
        async with state.db.session(write=False) as session:
            await registrations.get_platform(session, org_id=caller.org_id, platform_id=platform_id)
    try:
        outcome = await roster.sync(
            state.db,
            settings=state.settings,
            signing_secret=state.signing_secret(),
            org_id=caller.org_id,
            platform_id=platform_id,
            actor=caller,
        )
    except advantage.ServiceFailed as exc:
        raise ServiceUnavailable(
            f"The platform's roster could not be read: {exc}", headers={"Retry-After": "60"}
        ) from exc
    return schemas.RosterSync(
        read=outcome.read,
        added=outcome.added,
        reactivated=outcome.reactivated,
        deactivated=outcome.deactivated,
    )
