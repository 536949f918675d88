from __future__ import annotations

import uuid
from typing import Annotated, Any

from pydantic import AfterValidator, EmailStr, Field

from questline.members import schemas as members
from questline.members.schemas import Member
from questline.teams.models import TeamStatus
from questline.web.example_ids import AT, MEMBER, ORG, TEAM
from questline.web.schemas import (
    InputModel,
    Name,
    OutputModel,
    StrictBoolean,
    UtcDateTime,
    examples,
    fits_when_case_folded,
    normalized_name,
    text,
)

MAX_TAGS = 20
NAME_KEY_LENGTH = 300
MAX_MEMBERS_ON_CREATE = 1000

TeamName = Annotated[Name, fits_when_case_folded(NAME_KEY_LENGTH)]
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
    model_config = examples(
        {"name": "Rockets", "tags": ["onboarding", "2026"], "members": [MEMBER]}
    )

    name: TeamName
    members: Annotated[list[uuid.UUID], Field(max_length=MAX_MEMBERS_ON_CREATE)] = Field(
        default_factory=list, description="Ids of members of the organization to put in the team."
    )
    tags: Tags = Field(default_factory=list)
    invite: StrictBoolean = Field(
        default=False,
        alias="Invite",
        description="E-mail each member of the new team an invitation with a one-time "
        "sign-in link (503 when this service sends no e-mail).",
    )


class TeamUpdate(InputModel):
    """``PATCH /team/{id}``: only the fields given change."""

    model_config = examples({"Name": "Rockets", "Tags": ["onboarding"], "Status": "Archived"})

    name: TeamName | None = Field(default=None, alias="Name")
    tags: Tags | None = Field(default=None, alias="Tags")
    status: TeamStatus | None = Field(default=None, alias="Status")


class AdminFlag(InputModel):
    model_config = examples({"IsAdminTeam": True})

    is_admin_team: StrictBoolean = Field(alias="IsAdminTeam")


class SurveyFlag(InputModel):
    model_config = examples({"IsSurveyCompleted": True})

    is_survey_completed: StrictBoolean = Field(default=True, alias="IsSurveyCompleted")


class MemberAdd(InputModel):
    model_config = examples({"email": "ada@example.org", "givenName": "Ada"})

    email: Annotated[EmailStr, Field(max_length=320)]
    given_name: Name = Field(alias="givenName")
    invite: StrictBoolean = Field(
        default=False,
        alias="Invite",
        description="E-mail the member an invitation with a one-time sign-in link when "
        "this request adds it to the team (201; 503 when this service sends no e-mail).",
    )


EXAMPLE: dict[str, Any] = {
    "Id": TEAM,
    "Name": "Rockets",
    "OrganizationId": ORG,
    "Status": "Active",
    "Tags": ["onboarding", "2026"],
    "Score": 60,
    "IsSurveyCompleted": False,
    "IsAdminTeam": False,
    "MemberCount": 1,
    "CreatedAt": AT,
}


class Team(OutputModel):
    """A team as listed: the seed's seven fields first, then additive ones."""

    model_config = examples(EXAMPLE)

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
    model_config = examples({**EXAMPLE, "Members": [members.EXAMPLE]})

    members: list[Member]
