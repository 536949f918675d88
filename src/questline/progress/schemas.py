from __future__ import annotations

import uuid

from pydantic import Field

from questline.disciplines.models import CheckKind
from questline.teams.models import TeamStatus
from questline.web.example_ids import AT, DISCIPLINE, LEVEL, MEMBER, QUEST, TASK, TEAM
from questline.web.schemas import InputDateTime, InputModel, OutputModel, UtcDateTime, examples


class ProgressCreate(InputModel):
    """``POST /team/{id}/progress``."""

    model_config = examples(
        {
            "TaskId": TASK,
            "CompletedAt": AT,
        }
    )

    task_id: uuid.UUID = Field(alias="TaskId")
    completed_at: InputDateTime | None = Field(
        default=None,
        alias="CompletedAt",
        description="When the team completed the task (RFC 3339); default now; not future.",
    )
    member_id: uuid.UUID | None = Field(
        default=None,
        alias="MemberId",
        description="Who completed it: a member of the team (else 422).",
    )


class Completion(OutputModel):
    """A task a team completed."""

    model_config = examples(
        {
            "TeamId": TEAM,
            "TaskId": TASK,
            "DisciplineId": DISCIPLINE,
            "Points": 10,
            "CompletedAt": AT,
            "MemberId": MEMBER,
            "RecordedBy": "admin@example.org",
            "Score": 60,
        }
    )

    team_id: uuid.UUID
    task_id: uuid.UUID
    discipline_id: uuid.UUID
    points: int = Field(description="Points awarded (the task's points at completion).")
    completed_at: UtcDateTime
    member_id: uuid.UUID | None = Field(
        default=None, description="The member of the team who completed it (null: not said)."
    )
    recorded_by: str | None = Field(
        default=None,
        description="Who recorded it: the token's subject or the dashboard session's "
        "(null: recorded before this was kept).",
    )
    score: int | None = Field(
        default=None, description="The team's score after this request (on writes)."
    )


COMPLETION_JSON = Completion.__pydantic_serializer__
"""A completion's JSON as the API writes it (``to_json(c, by_alias=True)``), without
validating it again: the early answer's response and the outbox event's payload."""


class Counts(OutputModel):
    tasks_completed: int
    tasks_total: int
    points_earned: int
    points_total: int
    percent: int = Field(description="Tasks completed out of tasks total, 0 to 100, rounded down.")


class TaskState(OutputModel):
    """The team's state of one task: what a learner may do with it now."""

    task_id: uuid.UUID
    title: str
    order: int
    points: int
    check: CheckKind = Field(description="How the task is completed (its `Check.Kind`).")
    completed: bool
    locked: bool = Field(
        description="A sequential discipline's level the team has not opened yet (every "
        "task of the previous level completes it)."
    )
    attempts_left: int | None = Field(
        description="Answer tasks with `MaxAttempts`: what the team has left; else null."
    )
    pending_submission: uuid.UUID | None = Field(
        description="Review tasks: the team's submission waiting for review, else null."
    )
    unlocked_hints: list[int] = Field(description="The indexes of the hints the team unlocked.")


class QuestProgress(Counts):
    quest_id: uuid.UUID
    title: str
    order: int
    tasks: list[TaskState]


class LevelProgress(Counts):
    level_id: uuid.UUID
    title: str
    order: int
    quests: list[QuestProgress]


class DisciplineProgress(Counts):
    discipline_id: uuid.UUID
    title: str
    color: str | None
    current_level_id: uuid.UUID | None = Field(
        description="The first level not complete; null when every level is."
    )
    levels: list[LevelProgress]


class Contribution(OutputModel):
    model_config = examples(
        {"MemberId": MEMBER, "GivenName": "Ada", "Email": "ada@example.org", "Points": 30,
         "TasksCompleted": 2}
    )  # fmt: skip

    member_id: uuid.UUID | None = Field(description="null: completions no member was named for.")
    given_name: str | None
    email: str | None
    points: int
    tasks_completed: int


class Overview(OutputModel):
    model_config = examples(
        {
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
                    "TasksCompleted": 1,
                    "TasksTotal": 1,
                    "PointsEarned": 10,
                    "PointsTotal": 10,
                    "Percent": 100,
                    "Levels": [
                        {
                            "LevelId": LEVEL,
                            "Title": "Basics",
                            "Order": 0,
                            "TasksCompleted": 1,
                            "TasksTotal": 1,
                            "PointsEarned": 10,
                            "PointsTotal": 10,
                            "Percent": 100,
                            "Quests": [
                                {
                                    "QuestId": QUEST,
                                    "Title": "Headers",
                                    "Order": 0,
                                    "TasksCompleted": 1,
                                    "TasksTotal": 1,
                                    "PointsEarned": 10,
                                    "PointsTotal": 10,
                                    "Percent": 100,
                                    "Tasks": [
                                        {
                                            "TaskId": TASK,
                                            "Title": "Send HSTS",
                                            "Order": 0,
                                            "Points": 10,
                                            "Check": "Answer",
                                            "Completed": True,
                                            "Locked": False,
                                            "AttemptsLeft": 2,
                                            "PendingSubmission": None,
                                            "UnlockedHints": [0],
                                        }
                                    ],
                                },
                            ],
                        },
                    ],
                },
            ],
        }
    )
    team_id: uuid.UUID
    name: str
    status: TeamStatus
    is_admin_team: bool
    is_survey_completed: bool
    score: int
    rank: int | None = Field(description="Leaderboard position; null for admin or archived teams.")
    member_count: int
    tasks_completed: int
    last_activity_at: UtcDateTime | None = Field(
        description="Time of the team's latest score change (completion or withdrawal)."
    )
    disciplines: list[DisciplineProgress]
    contributions: list[Contribution] | None = Field(
        default=None,
        description="Each member's points and tasks completed in the team, then the "
        "completions of no named member (`MemberId` null). Only for admins and the team's "
        "own members: null for other members.",
    )
