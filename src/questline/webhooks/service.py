"""Webhook rules: subscriptions, secret rotation, the deliveries list and manual retry."""

from __future__ import annotations

import contextlib
import datetime as dt
import uuid
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit, events
from questline.auth.tokens import load_or_create_secret
from questline.config import Settings
from questline.outbound import addresses
from questline.storage import sealing
from questline.storage.db import utcnow
from questline.web.errors import FieldError, Unprocessable, not_found
from questline.web.pagination import PageRequest, cursor_parts
from questline.web.schemas import shown_row
from questline.webhooks import schemas, signing
from questline.webhooks.models import DeliveryStatus, Webhook, WebhookDelivery

SECRET_OVERLAP = dt.timedelta(hours=24)
"""After a rotation the old secret keeps signing, alongside the new one, this long."""
SEALED_AS = "webhook secret"
"""The purpose the secrets are sealed for (``storage.sealing``)."""


async def check_url(url: str, *, allow_private: bool) -> None:
    try:
        await addresses.check(url, allow_private=allow_private)
    except addresses.UnsafeUrl as exc:
        raise Unprocessable(str(exc), errors=[FieldError(field="url", message=str(exc))]) from exc


def to_schema(webhook: Webhook) -> schemas.Webhook:
    return shown_row(
        schemas.Webhook,
        webhook,
        previous_secret_expires_at=_overlap_end(webhook, utcnow()),
    )


def _overlap_end(webhook: Webhook, now: dt.datetime) -> dt.datetime | None:
    expires = webhook.previous_secret_expires_at
    if webhook.previous_secret is None or expires is None or expires <= now:
        return None
    return expires


def secret_sealer(settings: Settings) -> sealing.Sealer:
    """Seals webhook secrets under the service's signing secret (and opens those sealed
    under the previous one, when configured)."""
    return sealing.Sealer(load_or_create_secret(settings), settings.jwt_previous_secret)


def _seal(sealer: sealing.Sealer, webhook: Webhook, secret: str) -> str:
    return sealer.seal(secret, organization=webhook.organization_id, purpose=SEALED_AS)


def _open(sealer: sealing.Sealer, webhook: Webhook, stored: str) -> str:
    """The clear secret of a stored value: sealed, or (written before secrets were
    sealed) a ``whsec_`` secret in clear, sealed on the webhook's next write."""
    if not sealing.is_sealed(stored):
        return stored
    return sealer.unseal(stored, organization=webhook.organization_id, purpose=SEALED_AS)


def _reseal(sealer: sealing.Sealer, webhook: Webhook) -> None:
    """Seal what is stored in clear, or under the previous signing secret, under the
    current one (a secret that no longer opens is left for a rotation to replace)."""
    try:
        if not sealer.is_current(webhook.secret):
            webhook.secret = _seal(sealer, webhook, _open(sealer, webhook, webhook.secret))
        previous = webhook.previous_secret
        if previous is not None and not sealer.is_current(previous):
            webhook.previous_secret = _seal(sealer, webhook, _open(sealer, webhook, previous))
    except sealing.Unreadable:
        pass


def signing_secrets(sealer: sealing.Sealer, webhook: Webhook, now: dt.datetime) -> list[str]:
    """The clear secrets that sign an attempt now: the current one, and the previous one
    during the 24 hours after a rotation (``sealing.Unreadable`` when the current one
    does not open: the service's signing secret changed)."""
    found = [_open(sealer, webhook, webhook.secret)]
    if _overlap_end(webhook, now) is not None and webhook.previous_secret:
        with contextlib.suppress(sealing.Unreadable):  # the new one alone still signs
            found.append(_open(sealer, webhook, webhook.previous_secret))
    return found


def audited(webhook: Webhook) -> dict[str, object]:
    """The fields of a webhook the audit log compares (its secrets never)."""
    return {
        "Url": webhook.url,
        "Events": list(webhook.events),
        "Description": webhook.description,
        "Enabled": webhook.enabled,
    }


async def _audit(
    session: AsyncSession,
    webhook: Webhook,
    action: str,
    before: dict[str, object] | None,
    after: dict[str, object] | None,
    target: audit.service.Target | None = None,
) -> None:
    await audit.record(
        session,
        organization_id=webhook.organization_id,
        action=action,
        target=target or ("webhook", webhook.id),
        before=before,
        after=after,
    )


async def create_webhook(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    data: schemas.WebhookCreate,
    allow_private: bool,
    sealer: sealing.Sealer,
) -> tuple[Webhook, str]:
    """The new webhook and its signing secret in clear (for the creation's answer only;
    the row keeps it sealed)."""
    await check_url(data.url, allow_private=allow_private)
    now = utcnow()
    secret = signing.new_secret()
    webhook = Webhook(
        organization_id=org_id,
        url=data.url,
        events=list(data.events),
        description=data.description,
        enabled=True,
        created_at=now,
        updated_at=now,
    )
    webhook.secret = _seal(sealer, webhook, secret)
    session.add(webhook)
    await session.flush()
    await _audit(session, webhook, "webhook.created", None, audited(webhook))
    return webhook, secret


async def list_webhooks(session: AsyncSession, *, org_id: uuid.UUID) -> Sequence[Webhook]:
    rows = await session.scalars(
        select(Webhook).where(Webhook.organization_id == org_id).order_by(Webhook.id)
    )
    return rows.all()


async def get_webhook(
    session: AsyncSession, *, org_id: uuid.UUID, webhook_id: uuid.UUID, for_update: bool = False
) -> Webhook:
    query = select(Webhook).where(Webhook.organization_id == org_id, Webhook.id == webhook_id)
    if for_update:
        query = query.with_for_update()
    webhook = await session.scalar(query)
    if webhook is None:
        raise not_found("webhook")
    return webhook


async def update_webhook(
    session: AsyncSession,
    *,
    webhook: Webhook,
    data: schemas.WebhookUpdate,
    allow_private: bool,
    sealer: sealing.Sealer,
) -> Webhook:
    before = audited(webhook)
    _reseal(sealer, webhook)
    if data.url is not None and data.url != webhook.url:
        await check_url(data.url, allow_private=allow_private)
        webhook.url = data.url
    if data.events is not None:
        webhook.events = list(data.events)
    if "description" in data.model_fields_set:
        webhook.description = data.description
    if data.enabled is not None:
        webhook.enabled = data.enabled
        if data.enabled:
            webhook.disabled_reason = None
            webhook.failing_since = None
    webhook.updated_at = utcnow()
    await session.flush()
    await _audit(session, webhook, "webhook.updated", before, audited(webhook))
    return webhook


async def delete_webhook(session: AsyncSession, *, webhook: Webhook) -> None:
    await _audit(session, webhook, "webhook.deleted", audited(webhook), None)
    await session.delete(webhook)
    await session.flush()


async def rotate_secret(
    session: AsyncSession, *, webhook: Webhook, sealer: sealing.Sealer
) -> schemas.SecretRotated:
    """A new secret (in clear in the answer only); the old one keeps signing beside it
    for ``SECRET_OVERLAP``, unless it no longer opens (the service's signing secret
    changed): then the new one signs alone at once."""
    now = utcnow()
    try:
        old: str | None = _seal(sealer, webhook, _open(sealer, webhook, webhook.secret))
    except sealing.Unreadable:
        old = None
    secret = signing.new_secret()
    webhook.previous_secret = old
    webhook.previous_secret_expires_at = now + SECRET_OVERLAP if old is not None else now
    webhook.secret = _seal(sealer, webhook, secret)
    webhook.updated_at = now
    await session.flush()
    # Which secret is never logged: only that it changed, and until when the old one
    # signs too (a field named after secrets would be dropped by the recorder).
    await _audit(
        session,
        webhook,
        "webhook.secret_rotated",
        {"OverlapEndsAt": None},
        {"OverlapEndsAt": webhook.previous_secret_expires_at},
    )
    return schemas.SecretRotated(
        secret=secret, previous_secret_expires_at=webhook.previous_secret_expires_at
    )


def delivery_schema(delivery: WebhookDelivery) -> schemas.Delivery:
    pending = delivery.status is DeliveryStatus.PENDING
    return shown_row(
        schemas.Delivery,
        delivery,
        event=delivery.event_type,
        next_attempt_at=delivery.next_attempt_at if pending else None,
    )


async def list_deliveries(
    session: AsyncSession, *, webhook: Webhook, page: PageRequest
) -> list[WebhookDelivery]:
    """The webhook's deliveries, newest first (keyset paging on the time-ordered id)."""
    query = select(WebhookDelivery).where(
        WebhookDelivery.organization_id == webhook.organization_id,
        WebhookDelivery.webhook_id == webhook.id,
    )
    if page.after is not None:
        (before_id,) = cursor_parts(page.after, uuid.UUID)
        query = query.where(WebhookDelivery.id < before_id)
    query = query.order_by(WebhookDelivery.id.desc())
    if page.fetch_size is not None:
        query = query.limit(page.fetch_size)
    return list((await session.scalars(query)).all())


async def get_delivery(
    session: AsyncSession, *, webhook: Webhook, delivery_id: uuid.UUID
) -> WebhookDelivery:
    delivery = await session.scalar(
        select(WebhookDelivery)
        .where(
            WebhookDelivery.organization_id == webhook.organization_id,
            WebhookDelivery.webhook_id == webhook.id,
            WebhookDelivery.id == delivery_id,
        )
        .with_for_update()
    )
    if delivery is None:
        raise not_found("delivery")
    return delivery


async def retry_delivery(session: AsyncSession, *, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send again as soon as the dispatcher can, with the same ``webhook-id``, whatever
    the delivery's state. The generation moves on, so an attempt in flight (or sent and
    not yet recorded) cannot record its result over this retry: the row stays due until
    an attempt claimed after the retry is recorded."""
    before = delivery.status
    delivery.status = DeliveryStatus.PENDING
    delivery.generation += 1
    delivery.next_attempt_at = utcnow()
    await session.flush()
    # Wakes this process's dispatcher after the commit (others find it by polling).
    events.note_recorded(session)
    await audit.record(
        session,
        organization_id=delivery.organization_id,
        action="webhook.delivery_retried",
        target=("delivery", delivery.id),
        before={"Status": before, "WebhookId": delivery.webhook_id},
        after={"Status": delivery.status, "WebhookId": delivery.webhook_id},
    )
    return delivery
