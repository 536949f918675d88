from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field

from questline.web.example_ids import AT, MEMBER, ORG, TEAM
from questline.web.schemas import OutputModel, UtcDateTime, examples

EXAMPLE: dict[str, Any] = {
    "Id": MEMBER,
    "OrganizationId": ORG,
    "Email": "ada@example.org",
    "GivenName": "Ada",
    "TeamIds": [TEAM],
    "CreatedAt": AT,
}


class Member(OutputModel):
    model_config = examples(EXAMPLE)

    id: uuid.UUID
    organization_id: uuid.UUID
    email: str | None = Field(
        description="The member's e-mail address; null for callers with the member role."
    )
    given_name: str
    team_ids: list[uuid.UUID]
    created_at: UtcDateTime
