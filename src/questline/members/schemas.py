from __future__ import annotations

import uuid

from questline.web.schemas import OutputModel, UtcDateTime


class Member(OutputModel):
    id: uuid.UUID
    organization_id: uuid.UUID
    email: str
    given_name: str
    team_ids: list[uuid.UUID]
    created_at: UtcDateTime
