from __future__ import annotations

import uuid

from pydantic import Field

from questline.web.example_ids import AT, LATER, TEAM
from questline.web.schemas import OutputModel, UtcDateTime, examples

_ENTRY_EXAMPLE = {
    "Rank": 1,
    "TeamId": TEAM,
    "Name": "Rockets",
    "Score": 60,
    "TasksCompleted": 3,
    "ReachedAt": LATER,
}


class LeaderboardEntry(OutputModel):
    model_config = examples(_ENTRY_EXAMPLE)

    rank: int = Field(description="1-based position (offset + index).")
    team_id: uuid.UUID
    name: str
    score: int = Field(description="Score, or points earned in the discipline asked for.")
    tasks_completed: int
    reached_at: UtcDateTime | None = Field(
        description="When the team reached this score (the tie-breaker: earlier ranks first)."
    )


class PerMemberEntry(LeaderboardEntry):
    """An entry of ``by=perMember``: both figures, the points and the points per member."""

    model_config = examples(
        {
            **_ENTRY_EXAMPLE,
            "MemberCount": 4,
            "PointsPerMember": 15.0,
        }
    )

    member_count: int = Field(description="The team's members (counted as 1 when none).")
    points_per_member: float = Field(
        description="`Score` divided by `MemberCount` (at least 1), rounded to 4 decimals; "
        "the ranking compares the exact quotients."
    )


class GraphPoint(OutputModel):
    at: UtcDateTime
    score: int


class Series(OutputModel):
    model_config = examples(
        {
            "TeamId": TEAM,
            "Name": "Rockets",
            "Points": [
                {"At": AT, "Score": 0},
                {"At": AT, "Score": 10},
                {"At": LATER, "Score": 60},
            ],
        }
    )

    team_id: uuid.UUID
    name: str
    points: list[GraphPoint]
