"""The organization's single sign-on configuration: saved only once its provider answers."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit
from questline.sso import schemas, sealing
from questline.sso.models import SsoConfiguration
from questline.sso.provider import Provider, ProviderDirectory, ProviderUnusable
from questline.storage.db import utcnow
from questline.web.errors import FieldError, Unprocessable, not_found

logger = logging.getLogger("questline.sso")


@dataclass(frozen=True, slots=True)
class Saved:
    configuration: SsoConfiguration
    provider: Provider
    created: bool


async def get_configuration(
    session: AsyncSession, *, org_id: uuid.UUID, for_update: bool = False
) -> SsoConfiguration | None:
    query = select(SsoConfiguration).where(SsoConfiguration.organization_id == org_id)
    if for_update:
        query = query.with_for_update()
    return await session.scalar(query)


async def require_configuration(session: AsyncSession, *, org_id: uuid.UUID) -> SsoConfiguration:
    found = await get_configuration(session, org_id=org_id)
    if found is None:
        raise not_found("single sign-on configuration")
    return found


async def save_configuration(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    data: schemas.SsoConfigurationPut,
    providers: ProviderDirectory,
    signing_secret: str,
) -> Saved:
    """Create or replace the configuration, after fetching the provider's discovery
    document and keys (422 with the reason when they cannot be had).

    The provider is fetched before the first statement, so that no database transaction
    (on SQLite: the write lock) waits on another server."""
    try:
        provider = await providers.fetch(data.issuer)
    except ProviderUnusable as exc:
        raise Unprocessable(
            f"The OpenID provider cannot be used: {exc}",
            errors=[FieldError(field="Issuer", message=str(exc))],
        ) from exc
    existing = await get_configuration(session, org_id=org_id, for_update=True)
    if data.client_secret is None and existing is None:
        message = "A ClientSecret is required the first time single sign-on is configured."
        raise Unprocessable(message, errors=[FieldError(field="ClientSecret", message=message)])
    now = utcnow()
    row = existing or SsoConfiguration(organization_id=org_id, created_at=now)
    row.issuer = provider.issuer  # as the provider names it (ID tokens carry this)
    row.client_id = data.client_id
    if data.client_secret is not None:
        row.client_secret_sealed = sealing.seal(
            data.client_secret, signing_secret=signing_secret, organization=org_id
        )
    row.admin_groups = list(data.admin_groups)
    row.groups_claim = data.groups_claim
    row.allowed_email_domains = list(data.allowed_email_domains)
    row.enabled = data.enabled
    row.updated_at = now
    if existing is None:
        session.add(row)
    await session.flush()
    await audit.record(  # never the client secret: only the settings that show
        session,
        organization_id=org_id,
        action="sso.configured" if existing is None else "sso.changed",
        target=("organization", org_id),
        after={
            "Issuer": row.issuer,
            "ClientId": row.client_id,
            "AdminGroups": row.admin_groups,
            "GroupsClaim": row.groups_claim,
            "AllowedEmailDomains": row.allowed_email_domains,
            "Enabled": row.enabled,
        },
    )
    providers.remember(provider.issuer, provider)  # the name logins look it up by
    logger.info("single sign-on configured for %s with issuer %s", org_id, provider.issuer)
    return Saved(configuration=row, provider=provider, created=existing is None)


async def delete_configuration(session: AsyncSession, *, org_id: uuid.UUID) -> None:
    result = await session.execute(
        delete(SsoConfiguration).where(SsoConfiguration.organization_id == org_id)
    )
    if not getattr(result, "rowcount", 0):
        raise not_found("single sign-on configuration")
    await audit.record(
        session, organization_id=org_id, action="sso.removed", target=("organization", org_id)
    )


def to_schema(
    row: SsoConfiguration, *, provider: Provider | None, login_url: str, redirect_uri: str
) -> schemas.SsoConfiguration:
    return schemas.SsoConfiguration(
        organization_id=row.organization_id,
        issuer=row.issuer,
        client_id=row.client_id,
        client_secret_set=bool(row.client_secret_sealed),
        admin_groups=list(row.admin_groups),
        groups_claim=row.groups_claim,
        allowed_email_domains=list(row.allowed_email_domains),
        enabled=row.enabled,
        redirect_uri=redirect_uri,
        login_url=login_url,
        end_session_endpoint=provider.end_session_endpoint if provider else None,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
