from __future__ import annotations

import uuid

from pydantic import Field

from questline.web.schemas import OutputModel, UtcDateTime


class Member(OutputModel):
    id: uuid.UUID
    organization_id: uuid.UUID
    email: str | None = Field(
        description="The member's e-mail address; null for callers with the member role."
    )
    given_name: str
    team_ids: list[uuid.UUID]
    created_at: UtcDateTime
