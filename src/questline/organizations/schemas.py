"""The organization as its people see it, and an admin's change of its name."""

from __future__ import annotations

import uuid

from pydantic import Field

from questline.web.example_ids import AT, ORG
from questline.web.schemas import (
    InputModel,
    Name,
    OutputModel,
    UtcDateTime,
    examples,
)

OrganizationName = Name


class Organization(OutputModel):
    model_config = examples({"Id": ORG, "Name": "Example Learning", "CreatedAt": AT})

    id: uuid.UUID
    name: str | None = Field(
        description="Shown to people, e.g. in invitations (null until an admin sets it)."
    )
    created_at: UtcDateTime


class OrganizationUpdate(InputModel):
    model_config = examples({"Name": "Example Learning"})

    name: OrganizationName | None = Field(
        alias="Name", description="The organization's name (null removes it)."
    )
