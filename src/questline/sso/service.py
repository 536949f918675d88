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
from questline.web.schemas import shown_row

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
    if data.client_secret is None and existing is not None:
        _require_secret_for_another_client(existing, issuer=provider.issuer, data=data)
    before = None if existing is None else audited(existing)
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
    await audit.record(
        session,
        organization_id=org_id,
        action="sso.configured" if existing is None else "sso.changed",
        target=("organization", org_id),
        before=before,
        after=audited(row, credential="replaced" if before and data.client_secret else "stored"),
    )
    providers.remember(provider.issuer, provider)  # the name logins look it up by
    logger.info("single sign-on configured for %s with issuer %s", org_id, provider.issuer)
    return Saved(configuration=row, provider=provider, created=existing is None)


async def delete_configuration(session: AsyncSession, *, org_id: uuid.UUID) -> None:
    existing = await get_configuration(session, org_id=org_id, for_update=True)
    if existing is None:
        raise not_found("single sign-on configuration")
    before = audited(existing)
    await session.execute(
        delete(SsoConfiguration).where(SsoConfiguration.organization_id == org_id)
    )
    await audit.record(
        session,
        organization_id=org_id,
        action="sso.removed",
        target=("organization", org_id),
        before=before,
    )


def _same_issuer(stored: str, issuer: str) -> bool:
    """Issuers compare as Discovery compares them: a trailing slash aside."""
    return stored.rstrip("/") == issuer.rstrip("/")


def _require_secret_for_another_client(
    existing: SsoConfiguration, *, issuer: str, data: schemas.SsoConfigurationPut
) -> None:
    """A client secret belongs to one client at one provider. Kept for another issuer,
    the token endpoint of that issuer would be sent it (HTTP Basic), so a change of
    issuer or client id without a new secret is refused rather than carrying the old
    secret over; clearing it silently would leave a configuration that cannot sign
    anyone in."""
    moved = [
        name
        for name, changed in (
            ("Issuer", not _same_issuer(existing.issuer, issuer)),
            ("ClientId", existing.client_id != data.client_id),
        )
        if changed
    ]
    if moved:
        message = (
            f"A new ClientSecret is required with a new {' and a new '.join(moved)}: the "
            "stored secret belongs to the client it was given for and is never sent to "
            "another."
        )
        raise Unprocessable(message, errors=[FieldError(field="ClientSecret", message=message)])


def audited(row: SsoConfiguration, *, credential: str = "stored") -> dict[str, object]:
    """The fields the audit log compares before and after a change. Never the secret:
    ``ClientCredential`` says a secret is ``stored`` (or was ``replaced`` by this
    change). Not named ``ClientSecret…``: the audit log drops every field named like a
    secret, and this one carries none."""
    return {
        "Issuer": row.issuer,
        "ClientId": row.client_id,
        "ClientCredential": credential if row.client_secret_sealed else None,
        "AdminGroups": list(row.admin_groups),
        "GroupsClaim": row.groups_claim,
        "AllowedEmailDomains": list(row.allowed_email_domains),
        "Enabled": row.enabled,
    }


def to_schema(
    row: SsoConfiguration, *, provider: Provider | None, login_url: str, redirect_uri: str
) -> schemas.SsoConfiguration:
    return shown_row(
        schemas.SsoConfiguration,
        row,
        client_secret_set=bool(row.client_secret_sealed),
        redirect_uri=redirect_uri,
        login_url=login_url,
        end_session_endpoint=provider.end_session_endpoint if provider else None,
    )
