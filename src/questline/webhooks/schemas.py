from __future__ import annotations

import uuid
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from questline.events.service import EVENT_TYPES, EventType
from questline.web.example_ids import AT, DELIVERY, EVENT, LATER, ORG, WEBHOOK
from questline.web.schemas import InputModel, OutputModel, UtcDateTime, examples, text
from questline.webhooks.models import DeliveryStatus


def _dedupe(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


EventTypes = Annotated[
    list[EventType],
    # As many as there are: one webhook may subscribe to every event.
    Field(min_length=1, max_length=len(EVENT_TYPES)),
    AfterValidator(_dedupe),
]
Url = Annotated[str, text(2048)]
Description = Annotated[str, text(500)]


class WebhookCreate(InputModel):
    model_config = examples(
        {
            "url": "https://hooks.example.org/questline",
            "events": ["progress.completed", "team.created"],
            "description": "Progress into the learning channel",
        }
    )

    url: Url = Field(description="Absolute http(s) URL of a public address.")
    events: EventTypes = Field(description="The event types to send.")
    description: Description | None = None


class WebhookUpdate(InputModel):
    """``PATCH /webhook/{id}``: only the fields given change."""

    model_config = examples({"Enabled": False})

    url: Url | None = Field(default=None, alias="Url")
    events: EventTypes | None = Field(default=None, alias="Events")
    enabled: bool | None = Field(
        default=None, alias="Enabled", description="`true` re-enables a disabled webhook."
    )
    description: Description | None = Field(default=None, alias="Description")


EXAMPLE: dict[str, Any] = {
    "Id": WEBHOOK,
    "OrganizationId": ORG,
    "Url": "https://hooks.example.org/questline",
    "Events": ["progress.completed", "team.created"],
    "Description": "Progress into the learning channel",
    "Enabled": True,
    "DisabledReason": None,
    "FailingSince": None,
    "PreviousSecretExpiresAt": None,
    "CreatedAt": AT,
    "UpdatedAt": AT,
}
_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


class Webhook(OutputModel):
    model_config = examples(EXAMPLE)

    id: uuid.UUID
    organization_id: uuid.UUID
    url: str
    events: list[str]
    description: str | None
    enabled: bool
    disabled_reason: str | None = Field(
        description="Why the service disabled the webhook (null when enabled or disabled "
        "by an admin)."
    )
    failing_since: UtcDateTime | None = Field(
        description="The first failed attempt since the last success."
    )
    previous_secret_expires_at: UtcDateTime | None = Field(
        description="Until then, the secret before the last rotation signs too."
    )
    created_at: UtcDateTime
    updated_at: UtcDateTime


class WebhookWithSecret(Webhook):
    model_config = examples({**EXAMPLE, "Secret": _SECRET})

    secret: str = Field(description="The signing secret (`whsec_…`): shown only here.")


class SecretRotated(OutputModel):
    model_config = examples({"Secret": _SECRET, "PreviousSecretExpiresAt": LATER})

    secret: str = Field(description="The new signing secret: shown only here.")
    previous_secret_expires_at: UtcDateTime = Field(
        description="The old secret keeps signing (alongside the new one) until then."
    )


class Delivery(OutputModel):
    model_config = examples(
        {
            "Id": DELIVERY,
            "WebhookId": WEBHOOK,
            "EventId": EVENT,
            "Event": "progress.completed",
            "Status": "Succeeded",
            "Attempts": 1,
            "LastStatusCode": 204,
            "LastAttemptAt": AT,
            "LastError": None,
            "NextAttemptAt": None,
            "CreatedAt": AT,
        }
    )

    id: uuid.UUID
    webhook_id: uuid.UUID
    event_id: uuid.UUID = Field(description="`webhook-id` is `msg_` + this, on every attempt.")
    event: str = Field(description="The event type.")
    status: DeliveryStatus
    attempts: int
    last_status_code: int | None
    last_attempt_at: UtcDateTime | None
    last_error: str | None
    next_attempt_at: UtcDateTime | None = Field(description="When Pending: the next attempt.")
    created_at: UtcDateTime
