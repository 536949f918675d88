"""``/webhook``: signed webhooks of the caller's organization (admin only)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from questline.storage import sealing
from questline.web.access import AdminOf
from questline.web.errors import Conflict
from questline.web.openapi import problem_responses
from questline.web.pagination import PagingDep
from questline.web.paths import DeliveryId, WebhookId
from questline.web.routing import SessionDep, TransactionalRoute, url_of
from questline.web.state import app_state
from questline.webhooks import schemas, service

router = APIRouter(prefix="/webhook", tags=["webhooks"], route_class=TransactionalRoute)


def _allow_private(request: Request) -> bool:
    return app_state(request).settings.webhooks_allow_private_urls


def _sealer(request: Request) -> sealing.Sealer:
    return service.secret_sealer(app_state(request).settings)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.WebhookWithSecret,
    responses=problem_responses(400, 401, 403, 413, 415, 422),
)
async def create_webhook(
    request: Request,
    response: Response,
    tenant: AdminOf,
    session: SessionDep,
    data: schemas.WebhookCreate,
) -> schemas.WebhookWithSecret:
    """Subscribe a URL to events. The answer carries the signing `Secret` (`whsec_…`),
    shown only here (rotate it with `POST /webhook/{id}/secret`).

    The URL must be http(s) and resolve to public addresses only: loopback, private and
    link-local targets are refused (422) unless the server sets
    `QUESTLINE_WEBHOOKS_ALLOW_PRIVATE_URLS=true`. Every request is signed per the
    Standard Webhooks specification (`webhook-id`, `webhook-timestamp`,
    `webhook-signature`); see docs/webhooks.md for a receiver."""
    webhook, secret = await service.create_webhook(
        session,
        org_id=tenant.org_id,
        data=data,
        allow_private=_allow_private(request),
        sealer=_sealer(request),
    )
    response.headers["Location"] = url_of(request, "get_webhook", webhook_id=str(webhook.id))
    return schemas.WebhookWithSecret(**service.to_schema(webhook).model_dump(), secret=secret)


@router.get("", response_model=list[schemas.Webhook], responses=problem_responses(401, 403))
async def list_webhooks(tenant: AdminOf, session: SessionDep) -> list[schemas.Webhook]:
    """The organization's webhooks, oldest first (secrets are never shown again)."""
    return [
        service.to_schema(w) for w in await service.list_webhooks(session, org_id=tenant.org_id)
    ]


@router.get(
    "/{webhook_id}", response_model=schemas.Webhook, responses=problem_responses(401, 403, 404)
)
async def get_webhook(
    webhook_id: WebhookId, tenant: AdminOf, session: SessionDep
) -> schemas.Webhook:
    """One webhook. `Enabled: false` with a `DisabledReason` means the service disabled
    it after its deliveries kept failing."""
    webhook = await service.get_webhook(session, org_id=tenant.org_id, webhook_id=webhook_id)
    return service.to_schema(webhook)


@router.patch(
    "/{webhook_id}",
    response_model=schemas.Webhook,
    responses=problem_responses(400, 401, 403, 404, 415, 422),
)
async def update_webhook(
    webhook_id: WebhookId,
    request: Request,
    tenant: AdminOf,
    session: SessionDep,
    data: schemas.WebhookUpdate,
) -> schemas.Webhook:
    """Change `Url`, `Events`, `Enabled` or `Description`. `Enabled: true` re-enables a
    webhook the service disabled (and clears `DisabledReason`)."""
    webhook = await service.get_webhook(
        session, org_id=tenant.org_id, webhook_id=webhook_id, for_update=True
    )
    webhook = await service.update_webhook(
        session,
        webhook=webhook,
        data=data,
        allow_private=_allow_private(request),
        sealer=_sealer(request),
    )
    return service.to_schema(webhook)


@router.delete(
    "/{webhook_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(401, 403, 404),
)
async def delete_webhook(webhook_id: WebhookId, tenant: AdminOf, session: SessionDep) -> Response:
    """Delete the webhook and its deliveries (nothing more is sent)."""
    webhook = await service.get_webhook(
        session, org_id=tenant.org_id, webhook_id=webhook_id, for_update=True
    )
    await service.delete_webhook(session, webhook=webhook)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/{webhook_id}/secret",
    response_model=schemas.SecretRotated,
    responses=problem_responses(401, 403, 404),
)
async def rotate_secret(
    webhook_id: WebhookId, request: Request, tenant: AdminOf, session: SessionDep
) -> schemas.SecretRotated:
    """A new signing secret. For 24 hours the old one keeps signing too: every request
    then carries two signatures, so receivers can switch without losing one."""
    webhook = await service.get_webhook(
        session, org_id=tenant.org_id, webhook_id=webhook_id, for_update=True
    )
    return await service.rotate_secret(session, webhook=webhook, sealer=_sealer(request))


@router.get(
    "/{webhook_id}/deliveries",
    response_model=list[schemas.Delivery],
    responses=problem_responses(401, 403, 404, 422),
)
async def list_deliveries(
    webhook_id: WebhookId, tenant: AdminOf, session: SessionDep, paging: PagingDep
) -> list[schemas.Delivery]:
    """The webhook's deliveries, newest first: event, status, attempts, the last answer's
    status code and time (opt-in paging: `limit`, `after`)."""
    webhook = await service.get_webhook(session, org_id=tenant.org_id, webhook_id=webhook_id)
    rows = await service.list_deliveries(session, webhook=webhook, page=paging.page)
    return [service.delivery_schema(d) for d in paging.rows(rows, lambda d: [str(d.id)])]


@router.post(
    "/{webhook_id}/deliveries/{delivery_id}/retry",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=schemas.Delivery,
    responses=problem_responses(401, 403, 404, 409),
)
async def retry_delivery(
    webhook_id: WebhookId,
    delivery_id: DeliveryId,
    tenant: AdminOf,
    session: SessionDep,
) -> schemas.Delivery:
    """Send the delivery again, as soon as possible, with the same `webhook-id` (one more
    attempt). 409 while the webhook is disabled: enable it first."""
    webhook = await service.get_webhook(session, org_id=tenant.org_id, webhook_id=webhook_id)
    if not webhook.enabled:
        raise Conflict("The webhook is disabled; PATCH it with Enabled=true first.")
    delivery = await service.get_delivery(session, webhook=webhook, delivery_id=delivery_id)
    return service.delivery_schema(await service.retry_delivery(session, delivery=delivery))
