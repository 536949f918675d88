"""Examples of every request and response body in the API document.

Keyed by the model (its name is the OpenAPI component's). Each example is valid for its
model: tests/web/test_openapi_document.py validates every one of them. Input examples
use the documented casing of each field (docs/api.md): the seed's own names exactly
(`name`, `members`, `tags`, `email`, `givenName`), PascalCase for the rest.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from questline.auth.schemas import SessionCreate, SessionInfo
from questline.disciplines.examples import FULL_DOCUMENT
from questline.disciplines.schemas import (
    Discipline,
    DisciplineCreate,
    DisciplineReplace,
    DisciplineSummary,
)
from questline.leaderboard.schemas import LeaderboardEntry, Series
from questline.members.schemas import Member
from questline.progress.schemas import Completion, Overview, ProgressCreate
from questline.teams.schemas import (
    AdminFlag,
    MemberAdd,
    SurveyFlag,
    Team,
    TeamCreate,
    TeamDetail,
    TeamUpdate,
)
from questline.webhooks.schemas import (
    Delivery,
    SecretRotated,
    Webhook,
    WebhookCreate,
    WebhookUpdate,
    WebhookWithSecret,
)

ORG = "0193a6f2-7c1e-7a52-9d3b-5e2f1a7c4b10"
TEAM = "0193a6f3-1a2b-7c3d-8e4f-5a6b7c8d9e01"
TEAM_2 = "0193a6f3-1a2b-7c3d-8e4f-5a6b7c8d9e02"
MEMBER = "0193a6f4-2b3c-7d4e-9f5a-6b7c8d9e0f11"
DISCIPLINE = "0193a6f5-3c4d-7e5f-8a6b-7c8d9e0f1a21"
LEVEL = "0193a6f5-3c4d-7e5f-8a6b-7c8d9e0f1a22"
QUEST = "0193a6f5-3c4d-7e5f-8a6b-7c8d9e0f1a23"
TASK = "0193a6f5-3c4d-7e5f-8a6b-7c8d9e0f1a24"
RESOURCE = "0193a6f5-3c4d-7e5f-8a6b-7c8d9e0f1a25"
AT = "2026-11-20T09:30:00Z"
LATER = "2026-11-21T14:05:00Z"

_TEAM: dict[str, Any] = {
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
_MEMBER: dict[str, Any] = {
    "Id": MEMBER,
    "OrganizationId": ORG,
    "Email": "ada@example.org",
    "GivenName": "Ada",
    "TeamIds": [TEAM],
    "CreatedAt": AT,
}
_RESOURCE: dict[str, Any] = {
    "Id": RESOURCE,
    "Order": 0,
    "Title": "OWASP Top 10",
    "Description": "",
    "Url": "https://owasp.org/www-project-top-ten/",
    "Kind": "Link",
}
_DISCIPLINE_BASE: dict[str, Any] = {
    "Id": DISCIPLINE,
    "Title": "Web security",
    "Description": "From headers to a content security policy.",
    "OrganizationId": ORG,
    "Color": "Purple",
    "CreatedAt": AT,
    "UpdatedAt": LATER,
}
_DISCIPLINE: dict[str, Any] = {
    **_DISCIPLINE_BASE,
    "Resources": [_RESOURCE],
    "Levels": [
        {
            "Id": LEVEL,
            "Order": 0,
            "Title": "Basics",
            "Description": "What every page needs.",
            "Resources": [],
            "Quests": [
                {
                    "Id": QUEST,
                    "Order": 0,
                    "Title": "Headers",
                    "Description": "",
                    "Resources": [],
                    "Tasks": [
                        {
                            "Id": TASK,
                            "Order": 0,
                            "Title": "Send HSTS",
                            "Description": "Strict-Transport-Security on every response.",
                            "Points": 10,
                            "Resources": [],
                        }
                    ],
                }
            ],
        }
    ],
}
WEBHOOK = "0193a6f6-4d5e-7f60-9a7b-8c9d0e1f2a31"
EVENT = "0193a6f7-5e6f-7a71-8b8c-9d0e1f2a3b41"
_WEBHOOK = {
    "Id": WEBHOOK,
    "OrganizationId": ORG,
    "Url": "https://hooks.example.org/questline",
    "Events": ["progress.completed", "team.created"],
    "Description": "Progress into the learning channel",
    "Enabled": True,
    "DisabledReason": None,
    "FailingSince": None,
    "PreviousSecretExpiresAt": None,
    "CreatedAt": AT,
    "UpdatedAt": AT,
}
_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
_COUNTS = {"TasksCompleted": 1, "TasksTotal": 1, "PointsEarned": 10, "PointsTotal": 10}

REQUESTS: dict[type[BaseModel], Any] = {
    TeamCreate: {"name": "Rockets", "tags": ["onboarding", "2026"], "members": [MEMBER]},
    TeamUpdate: {"Name": "Rockets", "Tags": ["onboarding"], "Status": "Archived"},
    MemberAdd: {"email": "ada@example.org", "givenName": "Ada"},
    AdminFlag: {"IsAdminTeam": True},
    SurveyFlag: {"IsSurveyCompleted": True},
    ProgressCreate: {"TaskId": TASK, "CompletedAt": AT},
    SessionCreate: {"Code": "k3Jv9qX2mB7tY4wZ8rN1pL6sD0fH5gA2cE9uI3oQ7vM"},
    DisciplineCreate: FULL_DOCUMENT,
    DisciplineReplace: FULL_DOCUMENT,
    WebhookCreate: {
        "url": "https://hooks.example.org/questline",
        "events": ["progress.completed", "team.created"],
        "description": "Progress into the learning channel",
    },
    WebhookUpdate: {"Enabled": False},
}
"""Request bodies, by model."""

RESPONSES: dict[type[BaseModel], dict[str, Any]] = {
    Webhook: _WEBHOOK,
    WebhookWithSecret: {**_WEBHOOK, "Secret": _SECRET},
    SecretRotated: {"Secret": _SECRET, "PreviousSecretExpiresAt": LATER},
    Delivery: {
        "Id": "0193a6f8-6f70-7b82-9c9d-0e1f2a3b4c51",
        "WebhookId": WEBHOOK,
        "EventId": EVENT,
        "Event": "progress.completed",
        "Status": "Succeeded",
        "Attempts": 1,
        "LastStatusCode": 204,
        "LastAttemptAt": AT,
        "LastError": None,
        "NextAttemptAt": None,
        "CreatedAt": AT,
    },
    Team: _TEAM,
    TeamDetail: {**_TEAM, "Members": [_MEMBER]},
    Member: _MEMBER,
    Completion: {
        "TeamId": TEAM,
        "TaskId": TASK,
        "DisciplineId": DISCIPLINE,
        "Points": 10,
        "CompletedAt": AT,
        "Score": 60,
    },
    Overview: {
        "TeamId": TEAM,
        "Name": "Rockets",
        "Status": "Active",
        "IsAdminTeam": False,
        "IsSurveyCompleted": False,
        "Score": 10,
        "Rank": 3,
        "MemberCount": 1,
        "TasksCompleted": 1,
        "LastActivityAt": AT,
        "Disciplines": [
            {
                "DisciplineId": DISCIPLINE,
                "Title": "Web security",
                "Color": "Purple",
                "CurrentLevelId": None,
                **_COUNTS,
                "Percent": 100,
                "Levels": [
                    {
                        "LevelId": LEVEL,
                        "Title": "Basics",
                        "Order": 0,
                        **_COUNTS,
                        "Percent": 100,
                        "Quests": [
                            {
                                "QuestId": QUEST,
                                "Title": "Headers",
                                "Order": 0,
                                **_COUNTS,
                                "Percent": 100,
                            }
                        ],
                    }
                ],
            }
        ],
    },
    LeaderboardEntry: {
        "Rank": 1,
        "TeamId": TEAM,
        "Name": "Rockets",
        "Score": 60,
        "TasksCompleted": 3,
        "ReachedAt": LATER,
    },
    Series: {
        "TeamId": TEAM,
        "Name": "Rockets",
        "Points": [
            {"At": AT, "Score": 0},
            {"At": AT, "Score": 10},
            {"At": LATER, "Score": 60},
        ],
    },
    Discipline: _DISCIPLINE,
    DisciplineSummary: {
        **_DISCIPLINE_BASE,
        "LevelCount": 1,
        "QuestCount": 1,
        "TaskCount": 1,
        "PointsTotal": 10,
    },
    SessionInfo: {
        "Subject": "ada",
        "Role": "admin",
        "OrganizationId": ORG,
        "Email": "ada@example.org",
        "TeamIds": [TEAM],
        "ExpiresAt": LATER,
        "CsrfToken": "Zp0cN4xQ1vR7sT2uW9yB3dF6gH8jK5mL0nP2qS4tV6w",
    },
}
"""Response bodies, by model (as the service writes them: PascalCase)."""

BULK_JSON: list[dict[str, Any]] = [
    {"name": "Rockets", "tags": ["onboarding"], "members": [MEMBER]},
    {"name": "Comets, Inc.", "tags": []},
]
"""`POST /team/bulk` as JSON."""

OTHER_RESPONSES: dict[str, Any] = {"Health": {"status": "ok"}}
"""Response bodies of models kept outside the domains' schemas, by component name."""
