from __future__ import annotations

import datetime as dt
import enum
import uuid

from sqlalchemy import (
    JSON,
    BigInteger,
    ForeignKey,
    Index,
    String,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, text_enum, utcnow


class TeamStatus(enum.StrEnum):
    ACTIVE = "Active"
    ARCHIVED = "Archived"


class Team(Base):
    __tablename__ = "teams"
    __table_args__ = (UniqueConstraint("organization_id", "name_key"),)

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(100))
    name_key: Mapped[str] = mapped_column(String(300))
    """The case-folded name (up to 3 characters a character: 'ß' folds to 'ss')."""
    """The name lower-cased: unique per organization, and the list order."""
    status: Mapped[TeamStatus] = mapped_column(
        text_enum(TeamStatus),
        default=TeamStatus.ACTIVE,
    )
    tags: Mapped[list[str]] = mapped_column(JSON, default=list)
    score: Mapped[int] = mapped_column(BigInteger, default=0)
    """Up to 9,223,372,036,854,775,807 (BIGINT); a task is worth at most 1,000,000."""
    tasks_completed: Mapped[int] = mapped_column(default=0, server_default="0")
    """The team's current completions, kept beside the score (no count per ranked row)."""
    score_reached_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    """When the team reached its current score: the leaderboard's tie-breaker."""
    is_survey_completed: Mapped[bool] = mapped_column(default=False)
    is_admin_team: Mapped[bool] = mapped_column(default=False)
    is_ranked: Mapped[bool] = mapped_column(default=True)
    """Neither an admin team nor archived: kept in step by the service, indexed."""
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)
    version: Mapped[int] = mapped_column(default=1)
    external_id: Mapped[str | None] = mapped_column(String(255), default=None)
    """The organization's directory's own id for the team (SCIM ``externalId``)."""

    __mapper_args__ = {"version_id_col": version}

    def refresh_ranking_flag(self) -> None:
        self.is_ranked = not self.is_admin_team and self.status is TeamStatus.ACTIVE


# Serves the leaderboard without a sort: the order of teams/ranking.py, term for term.
Index(
    "ix_teams_leaderboard",
    Team.organization_id,
    Team.is_ranked,
    Team.score.desc(),
    Team.score_reached_at,
    Team.name_key,
)
