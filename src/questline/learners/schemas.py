"""Bodies of the learners' endpoints: attempts and hints."""

from __future__ import annotations

import uuid

from pydantic import Field

from questline.disciplines.schemas import ANSWER_MAX, MAX_HINTS
from questline.progress.schemas import Completion
from questline.web.example_ids import AT, MEMBER, TASK
from questline.web.schemas import PRINTABLE, InputModel, OutputModel, UtcDateTime, examples


class AttemptCreate(InputModel):
    """`POST /team/{id}/attempts`."""

    model_config = examples({"TaskId": TASK, "Answer": "eu-west-1"})

    task_id: uuid.UUID = Field(alias="TaskId")
    answer: str = Field(
        alias="Answer",
        min_length=1,
        max_length=ANSWER_MAX,
        pattern=PRINTABLE,
        description="1 to 1,000 characters, compared as written (`IgnoreCase` answers "
        "ignore case and surrounding spaces).",
    )


class AttemptResult(OutputModel):
    """What an attempt did: 201 with the completion when right, 200 when wrong."""

    model_config = examples({"Correct": False, "AttemptsLeft": 2})

    correct: bool
    attempts_left: int | None = Field(description="null: unlimited.")
    completion: Completion | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="When right: the completion, with the caller's member as `MemberId`.",
    )


class Attempt(OutputModel):
    """A counted attempt. `Answer` is shown to admins only."""

    model_config = examples(
        {"TaskId": TASK, "MemberId": MEMBER, "At": AT, "Correct": False, "Answer": "eu-west-2"}
    )

    task_id: uuid.UUID
    member_id: uuid.UUID | None
    at: UtcDateTime
    correct: bool
    answer: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Admins only: what was submitted.",
    )


class HintUnlockCreate(InputModel):
    """`POST /team/{id}/hints`."""

    model_config = examples({"TaskId": TASK, "Index": 0})

    task_id: uuid.UUID = Field(alias="TaskId")
    index: int = Field(
        alias="Index",
        ge=0,
        lt=MAX_HINTS,
        strict=True,
        description="The hint's place in the task's `Hints` (0-based).",
    )


class UnlockedHint(OutputModel):
    """A hint the team unlocked, with its text."""

    model_config = examples(
        {
            "TaskId": TASK,
            "Index": 0,
            "Text": "Look at the deploy pipeline.",
            "Cost": 5,
            "UnlockedAt": AT,
            "UnlockedBy": "ada@example.org",
            "MemberId": MEMBER,
            "Score": 55,
        }
    )

    task_id: uuid.UUID
    index: int
    text: str
    cost: int
    unlocked_at: UtcDateTime
    unlocked_by: str = Field(description="The caller's subject (token `sub` or session).")
    member_id: uuid.UUID | None = Field(description="The team's member who unlocked it.")
    score: int | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="On `POST`: the team's score after it.",
    )
