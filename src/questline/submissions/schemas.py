from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import Field, model_validator

from questline.disciplines.schemas import Url
from questline.submissions.models import MAX_COMMENT, MAX_TEXT, SubmissionState
from questline.web.example_ids import AT, LATER, MEMBER, TASK, TEAM
from questline.web.schemas import InputModel, OutputModel, UtcDateTime, examples, text

SUBMISSION = "0193a6fa-8b92-7da4-9ebf-2a3b4c5d6e71"
WORK_URL = "https://github.com/rockets/robot-arm/pull/12"

SubmittedText = Annotated[str, text(MAX_TEXT)]
Comment = Annotated[str, text(MAX_COMMENT)]


class SubmissionCreate(InputModel):
    """``POST /team/{id}/submissions``: the work, as text, a link, or both."""

    model_config = examples(
        {"TaskId": TASK, "Text": "The arm picks the cube up in 3 s.", "Url": WORK_URL}
    )

    task_id: uuid.UUID = Field(alias="TaskId", description="A task whose check is `Review`.")
    text: SubmittedText | None = Field(
        default=None,
        alias="Text",
        description=f"The work or a note on it (1 to {MAX_TEXT:,} characters, trimmed; "
        "line breaks kept).",
    )
    url: Url | None = Field(
        default=None, alias="Url", description="A link to the work (absolute http or https)."
    )

    @model_validator(mode="after")
    def _something(self) -> SubmissionCreate:
        if self.text is None and self.url is None:
            raise ValueError("Give the work: Text, Url or both.")
        return self


class Approval(InputModel):
    """``POST /submission/{id}/approve``."""

    model_config = examples({"Comment": "Neat wiring."})

    comment: Comment | None = Field(
        default=None,
        alias="Comment",
        description=f"A word for the team (1 to {MAX_COMMENT:,} characters, trimmed).",
    )


class Rejection(InputModel):
    """``POST /submission/{id}/reject``: the reason is required."""

    model_config = examples({"Comment": "The link is private: make it public and resubmit."})

    comment: Comment = Field(
        alias="Comment",
        description=f"Why, so the team can do better (1 to {MAX_COMMENT:,} characters, trimmed).",
    )


class Submission(OutputModel):
    """Work a member submitted for a `Review` task, and its review."""

    model_config = examples(
        {
            "Id": SUBMISSION,
            "TeamId": TEAM,
            "TaskId": TASK,
            "MemberId": MEMBER,
            "Text": "The arm picks the cube up in 3 s.",
            "Url": WORK_URL,
            "State": "Approved",
            "SubmittedAt": AT,
            "DecidedAt": LATER,
            "DecidedBy": "admin@example.org",
            "Comment": "Neat wiring.",
        }
    )

    id: uuid.UUID
    team_id: uuid.UUID
    task_id: uuid.UUID
    member_id: uuid.UUID = Field(description="The member who submitted it.")
    text: str | None
    url: str | None
    state: SubmissionState = Field(description="`Pending`, `Approved` or `Rejected`.")
    submitted_at: UtcDateTime
    decided_at: UtcDateTime | None = Field(description="When it was approved or rejected.")
    decided_by: str | None = Field(
        description="The subject of the admin who decided (admins' reads; null for members)."
    )
    comment: str | None = Field(description="The reviewer's comment.")
