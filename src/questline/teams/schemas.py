from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import AfterValidator, EmailStr, Field

from questline.members.schemas import Member
from questline.teams.models import TeamStatus
from questline.web.schemas import (
    InputModel,
    OutputModel,
    StrictBoolean,
    UtcDateTime,
    fits_when_case_folded,
    normalized_name,
    text,
)

MAX_TAGS = 20
NAME_KEY_LENGTH = 300
MAX_MEMBERS_ON_CREATE = 1000

TeamName = Annotated[str, text(100), normalized_name(100), fits_when_case_folded(NAME_KEY_LENGTH)]
"""NFKC-normalized (a fullwidth R is a plain R), no invisible characters, 1 to 100
characters after normalization; its case-folded key fits ``teams.name_key``."""
Tag = Annotated[str, text(50), normalized_name(50)]


def _dedupe_tags(tags: list[str]) -> list[str]:
    """Case-insensitive de-duplication that keeps the first spelling and the order."""
    seen: dict[str, str] = {}
    for tag in tags:
        seen.setdefault(tag.casefold(), tag)
    return list(seen.values())


Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS), AfterValidator(_dedupe_tags)]


class TeamCreate(InputModel):
    name: TeamName
    members: Annotated[list[uuid.UUID], Field(max_length=MAX_MEMBERS_ON_CREATE)] = Field(
        default_factory=list, description="Ids of members of the organization to put in the team."
    )
    tags: Tags = Field(default_factory=list)


class TeamUpdate(InputModel):
    """``PATCH /team/{id}``: only the fields given change."""

    name: TeamName | None = Field(default=None, alias="Name")
    tags: Tags | None = Field(default=None, alias="Tags")
    status: TeamStatus | None = Field(default=None, alias="Status")


class AdminFlag(InputModel):
    is_admin_team: StrictBoolean = Field(alias="IsAdminTeam")


class SurveyFlag(InputModel):
    is_survey_completed: StrictBoolean = Field(default=True, alias="IsSurveyCompleted")


class MemberAdd(InputModel):
    email: Annotated[EmailStr, Field(max_length=320)]
    given_name: Annotated[str, text(100), normalized_name(100)] = Field(alias="givenName")


class Team(OutputModel):
    """A team as listed: the seed's seven fields first, then additive ones."""

    id: uuid.UUID
    name: str
    organization_id: uuid.UUID
    status: TeamStatus
    tags: list[str]
    score: int
    is_survey_completed: bool
    is_admin_team: bool
    member_count: int
    created_at: UtcDateTime


class TeamDetail(Team):
    members: list[Member]
