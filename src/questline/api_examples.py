"""Examples of bodies whose models do not carry their own yet: the auth and progress
schemas are changed elsewhere (issue 25). The app hands these to ``install_openapi``;
each moves beside its model as ``model_config = examples(...)`` (``web.schemas``), and
this module goes when it is empty."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from questline.auth.schemas import SessionInfo
from questline.progress.schemas import Completion, Overview, ProgressCreate
from questline.web.example_ids import AT, DISCIPLINE, LATER, LEVEL, ORG, QUEST, TASK, TEAM

_COUNTS = {"TasksCompleted": 1, "TasksTotal": 1, "PointsEarned": 10, "PointsTotal": 10}

PENDING: dict[type[BaseModel], Any] = {
    ProgressCreate: {"TaskId": TASK, "CompletedAt": AT},
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
"""Request and response bodies, by model (responses as the service writes them)."""
