"""Platform registrations: saved, changed and removed by an organization's admin,
each change written to the audit log in its transaction."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit
from questline.config import Settings
from questline.lti import schemas
from questline.lti.framing import usable_origin
from questline.lti.models import LtiDeployment, LtiPerson, LtiPlatform
from questline.organizations.service import ensure_organization
from questline.outbound import addresses
from questline.storage.db import utcnow
from questline.web.errors import Conflict, FieldError, Unprocessable
from questline.web.lookups import one_or_not_found
from questline.web.schemas import shown_row

URL_FIELDS = {
    "AuthLoginUrl": "auth_login_url",
    "AuthTokenUrl": "auth_token_url",
    "KeySetUrl": "key_set_url",
}
FETCHED = ("AuthTokenUrl", "KeySetUrl")
"""The URLs the service itself calls (the login URL is the browser's to follow)."""


def _refuse(field: str, message: str) -> Unprocessable:
    return Unprocessable(message, errors=[FieldError(field=field, message=message)])


async def check_url(url: str, *, field: str, settings: Settings, fetched: bool) -> None:
    """https (http only when ``QUESTLINE_LTI_ALLOW_HTTP``), no credentials or fragment;
    a URL the service fetches resolves to public addresses only (SSRF)."""
    parts = urlsplit(url)
    schemes = ("https", "http") if settings.lti_allow_http else ("https",)
    if parts.scheme not in schemes or not parts.hostname:
        raise _refuse(field, f"{field} must be an absolute https URL.")
    if parts.username or parts.password or parts.fragment:
        raise _refuse(field, f"{field} may not carry credentials or a fragment.")
    if fetched:
        try:
            await addresses.check(url, allow_private=settings.lti_allow_private_urls)
        except addresses.UnsafeUrl as exc:
            raise _refuse(field, str(exc)) from exc


def frame_origins(values: Sequence[str], settings: Settings) -> list[str]:
    """``FrameOrigins``: each a bare origin (scheme, host, port), https (http only when
    ``QUESTLINE_LTI_ALLOW_HTTP``): it goes into a ``frame-ancestors`` directive."""
    found: list[str] = []
    for value in values:
        origin = usable_origin(value.rstrip("/"), settings=settings)
        if origin is None:
            raise _refuse(
                "FrameOrigins",
                f"{value!r} is not an origin: https://host or https://host:port, nothing else.",
            )
        found.append(origin)
    return list(dict.fromkeys(found))


def check_issuer(issuer: str, settings: Settings) -> None:
    """An issuer is a URL (Moodle, Canvas, Brightspace: the platform's address); only
    compared, never fetched."""
    parts = urlsplit(issuer)
    schemes = ("https", "http") if settings.lti_allow_http else ("https",)
    if parts.scheme not in schemes or not parts.hostname:
        raise _refuse("Issuer", "Issuer must be an absolute https URL, as the platform names it.")


async def get_platform(
    session: AsyncSession, *, org_id: uuid.UUID, platform_id: uuid.UUID, for_update: bool = False
) -> LtiPlatform:
    query = select(LtiPlatform).where(
        LtiPlatform.organization_id == org_id, LtiPlatform.id == platform_id
    )
    return await one_or_not_found(session, query, kind="LTI platform", for_update=for_update)


async def list_platforms(session: AsyncSession, *, org_id: uuid.UUID) -> list[LtiPlatform]:
    return list(
        (
            await session.scalars(
                select(LtiPlatform)
                .where(LtiPlatform.organization_id == org_id)
                .order_by(LtiPlatform.created_at, LtiPlatform.id)
            )
        ).all()
    )


async def deployment_ids(session: AsyncSession, platform: LtiPlatform) -> list[str]:
    return list(
        (
            await session.scalars(
                select(LtiDeployment.deployment_id)
                .where(
                    LtiDeployment.organization_id == platform.organization_id,
                    LtiDeployment.platform_id == platform.id,
                )
                .order_by(LtiDeployment.deployment_id)
            )
        ).all()
    )


async def _set_deployments(
    session: AsyncSession, platform: LtiPlatform, wanted: Sequence[str]
) -> None:
    """Replace the platform's deployment ids; one taken (by this organization or another)
    is a 409 that names it, never which organization has it."""
    await session.execute(
        delete(LtiDeployment).where(
            LtiDeployment.organization_id == platform.organization_id,
            LtiDeployment.platform_id == platform.id,
        )
    )
    taken = list(
        (
            await session.scalars(
                select(LtiDeployment.deployment_id).where(
                    LtiDeployment.issuer == platform.issuer,
                    LtiDeployment.client_id == platform.client_id,
                    LtiDeployment.deployment_id.in_(list(wanted)),
                )
            )
        ).all()
    )
    if taken:
        raise Conflict(
            f"The deployment {taken[0]!r} of this issuer and client id is registered already "
            "(a launch must name one organization): remove it there first."
        )
    for deployment_id in wanted:
        session.add(
            LtiDeployment(
                organization_id=platform.organization_id,
                platform_id=platform.id,
                deployment_id=deployment_id,
                issuer=platform.issuer,
                client_id=platform.client_id,
            )
        )
    await session.flush()


def _shown(platform: LtiPlatform, deployments: Sequence[str]) -> dict[str, Any]:
    return {
        "Issuer": platform.issuer,
        "ClientId": platform.client_id,
        "DeploymentIds": list(deployments),
        "AuthLoginUrl": platform.auth_login_url,
        "AuthTokenUrl": platform.auth_token_url,
        "KeySetUrl": platform.key_set_url,
        "FrameOrigins": list(platform.frame_origins or []),
    }


async def create_platform(
    session: AsyncSession, *, org_id: uuid.UUID, data: schemas.PlatformCreate, settings: Settings
) -> LtiPlatform:
    check_issuer(data.issuer, settings)
    for field, attribute in URL_FIELDS.items():
        await check_url(
            getattr(data, attribute), field=field, settings=settings, fetched=field in FETCHED
        )
    await ensure_organization(session, org_id)
    now = utcnow()
    platform = LtiPlatform(
        organization_id=org_id,
        issuer=data.issuer,
        client_id=data.client_id,
        auth_login_url=data.auth_login_url,
        auth_token_url=data.auth_token_url,
        key_set_url=data.key_set_url,
        frame_origins=frame_origins(data.frame_origins or [], settings),
        created_at=now,
        updated_at=now,
    )
    session.add(platform)
    await session.flush()
    await _set_deployments(session, platform, data.deployment_ids)
    await audit.record(
        session,
        organization_id=org_id,
        action="lti.platform_registered",
        target=("lti_platform", platform.id),
        after=_shown(platform, data.deployment_ids),
    )
    return platform


async def update_platform(
    session: AsyncSession,
    *,
    platform: LtiPlatform,
    data: schemas.PlatformUpdate,
    settings: Settings,
) -> LtiPlatform:
    before = _shown(platform, await deployment_ids(session, platform))
    given = data.model_fields_set
    if "issuer" in given and data.issuer is not None:
        check_issuer(data.issuer, settings)
        platform.issuer = data.issuer
    if "client_id" in given and data.client_id is not None:
        platform.client_id = data.client_id
    for field, attribute in URL_FIELDS.items():
        value = getattr(data, attribute)
        if attribute in given and value is not None:
            await check_url(value, field=field, settings=settings, fetched=field in FETCHED)
            setattr(platform, attribute, value)
    if "frame_origins" in given and data.frame_origins is not None:
        platform.frame_origins = frame_origins(data.frame_origins, settings)
    platform.updated_at = utcnow()
    await session.flush()
    wanted = data.deployment_ids if data.deployment_ids is not None else before["DeploymentIds"]
    # Issuer and client id are copied onto each deployment (their unique key): rewrite.
    await _set_deployments(session, platform, wanted)
    after = _shown(platform, wanted)
    if after != before:
        await audit.record_on(
            session, "lti_platform", platform, "lti.platform_changed", before=before, after=after
        )
    return platform


async def delete_platform(session: AsyncSession, *, platform: LtiPlatform) -> None:
    before = _shown(platform, await deployment_ids(session, platform))
    for table in (LtiDeployment, LtiPerson):  # not left to ON DELETE CASCADE (SQLite)
        await session.execute(
            delete(table).where(
                table.organization_id == platform.organization_id,
                table.platform_id == platform.id,
            )
        )
    await session.delete(platform)
    await session.flush()
    await audit.record_on(session, "lti_platform", platform, "lti.platform_removed", before=before)


def to_schema(
    platform: LtiPlatform, deployments: Sequence[str], tool: schemas.ToolUrls | None
) -> schemas.Platform:
    return shown_row(
        schemas.Platform,
        platform,
        deployment_ids=list(deployments),
        frame_origins=list(platform.frame_origins or []),
        tool=tool,
    )
