from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import AfterValidator, Field, Strict

from questline.adjustments.models import MAX_POINTS, MAX_REASON
from questline.web.example_ids import AT, LATER, TEAM
from questline.web.schemas import (
    InputDateTime,
    InputModel,
    OutputModel,
    UtcDateTime,
    examples,
    text,
)

ADJUSTMENT = "0193a6f9-7a81-7c93-8dae-1f2a3b4c5d61"


def _not_zero(points: int) -> int:
    if points == 0:
        raise ValueError("An adjustment of 0 points changes nothing; give a non-zero integer.")
    return points


Points = Annotated[int, Strict(), Field(ge=-MAX_POINTS, le=MAX_POINTS), AfterValidator(_not_zero)]
"""A JSON integer (not a string, a float or a boolean), non-zero, within 32 bits."""


class AdjustmentCreate(InputModel):
    """``POST /team/{id}/adjustments``."""

    model_config = examples(
        {"Points": -20, "Reason": "Shared a solution on the forum (rule 4).", "At": AT}
    )

    points: Points = Field(
        alias="Points",
        description=f"Added to the score (negative: taken away); non-zero, at most "
        f"{MAX_POINTS:,} either way.",
    )
    reason: Annotated[str, text(MAX_REASON)] = Field(
        alias="Reason", description=f"Why (1 to {MAX_REASON} characters, trimmed)."
    )
    at: InputDateTime | None = Field(
        default=None,
        alias="At",
        description="When it counts on the timeline (RFC 3339); default now; not future.",
    )


class Adjustment(OutputModel):
    """A manual change of a team's score."""

    model_config = examples(
        {
            "Id": ADJUSTMENT,
            "TeamId": TEAM,
            "Points": -20,
            "Reason": "Shared a solution on the forum (rule 4).",
            "At": AT,
            "RecordedBy": "admin@example.org",
            "CreatedAt": AT,
            "WithdrawnAt": LATER,
            "WithdrawnBy": "admin@example.org",
            "Score": 40,
        }
    )

    id: uuid.UUID
    team_id: uuid.UUID
    points: int
    reason: str
    at: UtcDateTime = Field(description="When it counts on the timeline.")
    recorded_by: str | None = Field(
        description="Who made it (the admin's subject; null for members' reads)."
    )
    created_at: UtcDateTime
    withdrawn_at: UtcDateTime | None = Field(
        default=None,
        description="When it was withdrawn (it no longer counts); null while it stands.",
    )
    withdrawn_by: str | None = Field(default=None, description="Who withdrew it (admins' reads).")
    score: int | None = Field(
        default=None, description="The team's score after this request (on writes)."
    )
