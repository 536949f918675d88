from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field

from questline.web.example_ids import AT, TEAM
from questline.web.schemas import OutputModel, UtcDateTime, examples

ENTRY = "0193a6fa-8b92-7da4-9ebf-2a3b4c5d6e71"


class AuditEntry(OutputModel):
    """One change made in the organization."""

    model_config = examples(
        {
            "Id": ENTRY,
            "At": AT,
            "Actor": "admin@example.org",
            "ActorRole": "admin",
            "ActorVia": "token",
            "Action": "team.renamed",
            "TargetType": "team",
            "TargetId": TEAM,
            "RequestId": "6f1c0a4e3b2d4c5e8f9a0b1c2d3e4f50",
            "Changes": {"Name": {"Before": "Rockets", "After": "Comets"}},
        }
    )

    id: uuid.UUID
    at: UtcDateTime = Field(description="When the change was made.")
    actor: str = Field(description="Who made it: the caller's subject (`system`: no request).")
    actor_role: str | None = Field(description="The caller's role: admin, operator, scim, …")
    actor_via: str = Field(
        description="How the caller proved it: token, session, scim (the directory), provider "
        "(single sign-on), system."
    )
    action: str = Field(description="What was done, e.g. `team.renamed`, `member.added`.")
    target_type: str = Field(description="The kind of resource changed: team, member, …")
    target_id: str | None = Field(description="Its id.")
    request_id: str | None = Field(description="The request's `X-Request-Id`.")
    changes: dict[str, dict[str, Any]] = Field(
        description='The fields changed: `{"Field": {"Before": …, "After": …}}` (never a secret).'
    )


class AuditEntryRow(OutputModel):
    """An entry as a CSV row: `Changes` as its JSON text."""

    id: uuid.UUID
    at: UtcDateTime
    actor: str
    actor_role: str | None
    actor_via: str
    action: str
    target_type: str
    target_id: str | None
    request_id: str | None
    changes: str
