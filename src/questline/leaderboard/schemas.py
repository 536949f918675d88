from __future__ import annotations

import uuid

from pydantic import Field

from questline.web.schemas import OutputModel, UtcDateTime


class LeaderboardEntry(OutputModel):
    rank: int = Field(description="1-based position (offset + index).")
    team_id: uuid.UUID
    name: str
    score: int = Field(description="Score, or points earned in the discipline asked for.")
    tasks_completed: int
    reached_at: UtcDateTime | None = Field(
        description="When the team reached this score (the tie-breaker: earlier ranks first)."
    )


class GraphPoint(OutputModel):
    at: UtcDateTime
    score: int


class Series(OutputModel):
    team_id: uuid.UUID
    name: str
    points: list[GraphPoint]
