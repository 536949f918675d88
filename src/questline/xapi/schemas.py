from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from questline.web.example_ids import AT, EVENT, LATER
from questline.web.schemas import InputModel, OutputModel, UtcDateTime, examples, text
from questline.xapi.models import StatementKind

Endpoint = Annotated[str, text(2048)]
Password = Annotated[str, StringConstraints(min_length=1, max_length=1000)]
Token = Annotated[
    str, StringConstraints(min_length=1, max_length=4000, pattern=r"^[A-Za-z0-9\-._~+/]+=*$")
]
"""RFC 6750's ``b64token``: it goes into the ``Authorization: Bearer`` header as is."""


class LrsSettings(InputModel):
    """``PUT /organization/xapi``: the LRS's xAPI endpoint and its credentials, Basic
    (`Username`, `Password`) or a bearer `Token`."""

    model_config = examples(
        {
            "Endpoint": "https://lrs.example.org/xAPI/",
            "Username": "questline",
            "Password": "a-long-random-secret",
        },
        {"Endpoint": "https://lrs.example.org/xAPI/", "Token": "eyJhbGciOiJIUzI1NiJ9.e30.ZRrH"},
    )

    endpoint: Endpoint = Field(
        alias="Endpoint",
        description="The LRS's xAPI base URL (statements go to `<Endpoint>/statements`): "
        "http(s), public addresses only.",
    )
    username: Annotated[str, text(255)] | None = Field(default=None, alias="Username")
    password: Password | None = Field(
        default=None, alias="Password", description="Never returned, logged or exported."
    )
    token: Token | None = Field(
        default=None,
        alias="Token",
        description="Sent as `Authorization: Bearer <Token>`. Never returned.",
    )

    @model_validator(mode="after")
    def _one_way_to_sign_in(self) -> LrsSettings:
        basic = self.username is not None or self.password is not None
        if self.token is not None and basic:
            raise ValueError("Give either Username and Password, or Token, not both.")
        if self.token is None and (self.username is None or self.password is None):
            raise ValueError("Give Username and Password, or Token.")
        return self


class Lrs(OutputModel):
    model_config = examples(
        {
            "Endpoint": "https://lrs.example.org/xAPI/",
            "Auth": "Basic",
            "Username": "questline",
            "ActivityBaseIri": "https://questline.example.org/xapi/activities",
            "Pending": 0,
            "Failed": 1,
            "FailingSince": None,
            "LastError": None,
            "CreatedAt": AT,
            "UpdatedAt": LATER,
        }
    )

    endpoint: str
    auth: Literal["Basic", "Bearer"] = Field(description="How Questline signs in (no secret).")
    username: str | None
    activity_base_iri: str = Field(
        description="Activity ids start with this: `<it>/task/<TaskId>`, `…/quest/…`, "
        "`…/level/…`, `…/discipline/…` (from QUESTLINE_PUBLIC_URL)."
    )
    pending: int = Field(description="Statements waiting to be sent.")
    failed: int = Field(description="Statements refused or failed: `GET …/failures`.")
    failing_since: UtcDateTime | None = Field(
        description="The first failed attempt since the last success."
    )
    last_error: str | None = Field(description="Why the last attempt failed, if it did.")
    created_at: UtcDateTime
    updated_at: UtcDateTime


class LrsTest(OutputModel):
    model_config = examples(
        {
            "Ok": True,
            "StatusCode": 200,
            "Answer": '["0b9a1c02-6a4f-5c9b-8f3e-2d6c0a1b7e55"]',
            "Error": None,
            "StatementId": "0b9a1c02-6a4f-5c9b-8f3e-2d6c0a1b7e55",
        }
    )

    ok: bool = Field(description="The LRS answered 2xx.")
    status_code: int | None = Field(description="The LRS's status code (null: no answer).")
    answer: str | None = Field(description="The start of the LRS's answer (2 KB at most).")
    error: str | None = Field(description="Why there was no answer (address, connection).")
    statement_id: uuid.UUID


class Failure(OutputModel):
    model_config = examples(
        {
            "StatementId": "0b9a1c02-6a4f-5c9b-8f3e-2d6c0a1b7e55",
            "EventId": EVENT,
            "Kind": "task",
            "Attempts": 2,
            "LastStatusCode": 400,
            "LastError": '{"detail":"Invalid statement"}',
            "LastAttemptAt": LATER,
            "CreatedAt": AT,
            "Statement": {"id": "0b9a1c02-6a4f-5c9b-8f3e-2d6c0a1b7e55"},
        }
    )

    statement_id: uuid.UUID
    event_id: uuid.UUID
    kind: StatementKind
    attempts: int
    last_status_code: int | None = Field(description="The LRS's answer (a 4xx: refused).")
    last_error: str | None = Field(description="The start of the LRS's answer, or the error.")
    last_attempt_at: UtcDateTime | None
    created_at: UtcDateTime
    statement: Any = Field(description="The statement as sent.")
