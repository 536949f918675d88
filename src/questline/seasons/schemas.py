from __future__ import annotations

import enum
import uuid
from typing import Any

from pydantic import Field

from questline.web.example_ids import AT, DISCIPLINE, LATER, ORG, SEASON
from questline.web.schemas import (
    InputDateTime,
    InputModel,
    Name,
    OutputModel,
    UtcDateTime,
    examples,
)

SeasonName = Name

STARTS = "2026-12-01T00:00:00Z"
FREEZES = "2026-12-20T00:00:00Z"
ENDS = "2027-01-01T00:00:00Z"


class Phase(enum.StrEnum):
    """Where a season stands now (what members see of it)."""

    UPCOMING = "Upcoming"
    """Before ``StartsAt``: nothing counts yet."""
    RUNNING = "Running"
    """Live standings for everyone."""
    FROZEN = "Frozen"
    """From ``FreezesAt`` until ``EndsAt`` or the reveal: members see the standings as
    at ``FreezesAt``; admins see them live."""
    ENDED = "Ended"
    """After ``EndsAt`` (or the reveal, while running): the final standings."""


class SeasonCreate(InputModel):
    """``POST /season``."""

    model_config = examples(
        {
            "Name": "Winter cup",
            "StartsAt": STARTS,
            "EndsAt": ENDS,
            "FreezesAt": FREEZES,
            "DisciplineId": DISCIPLINE,
        }
    )

    name: SeasonName = Field(alias="Name")
    starts_at: InputDateTime = Field(alias="StartsAt", description="Start (inclusive).")
    ends_at: InputDateTime = Field(alias="EndsAt", description="End (exclusive).")
    freezes_at: InputDateTime | None = Field(
        default=None,
        alias="FreezesAt",
        description="From then until `EndsAt` (or a reveal) members see the standings as "
        "they were at this instant. `StartsAt < FreezesAt ≤ EndsAt`.",
    )
    discipline_id: uuid.UUID | None = Field(
        default=None,
        alias="DisciplineId",
        description="Rank by this discipline's points (default: every discipline).",
    )


class SeasonUpdate(InputModel):
    """``PATCH /season/{id}``: only the fields given change (`null` clears `FreezesAt` and
    `DisciplineId`)."""

    model_config = examples({"EndsAt": LATER}, {"FreezesAt": None})

    name: SeasonName | None = Field(default=None, alias="Name")
    starts_at: InputDateTime | None = Field(default=None, alias="StartsAt")
    ends_at: InputDateTime | None = Field(default=None, alias="EndsAt")
    freezes_at: InputDateTime | None = Field(default=None, alias="FreezesAt")
    discipline_id: uuid.UUID | None = Field(default=None, alias="DisciplineId")


EXAMPLE: dict[str, Any] = {
    "Id": SEASON,
    "OrganizationId": ORG,
    "Name": "Winter cup",
    "StartsAt": STARTS,
    "EndsAt": ENDS,
    "FreezesAt": FREEZES,
    "RevealedAt": None,
    "DisciplineId": DISCIPLINE,
    "Phase": "Running",
    "CreatedAt": AT,
    "UpdatedAt": AT,
}


class Season(OutputModel):
    model_config = examples(EXAMPLE)

    id: uuid.UUID
    organization_id: uuid.UUID
    name: str
    starts_at: UtcDateTime
    ends_at: UtcDateTime
    freezes_at: UtcDateTime | None
    revealed_at: UtcDateTime | None = Field(
        description="When an admin ended the freeze early (null: not revealed)."
    )
    discipline_id: uuid.UUID | None
    phase: Phase = Field(description="Where the season stands now.")
    created_at: UtcDateTime
    updated_at: UtcDateTime
