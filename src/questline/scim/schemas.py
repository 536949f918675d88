"""The admin's side of SCIM: the organization's directory tokens (created, listed,
revoked)."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import Field

from questline.web.example_ids import AT, LATER
from questline.web.schemas import InputModel, OutputModel, UtcDateTime, examples

TOKEN_ID = "0193a6fa-8b92-7da4-9ebf-2a3b4c5d6e71"
TOKEN_EXAMPLE = "qlscim_9Xq2vT4mB7nR1sL8kJ3hF6dG0aZ5cW2yE4uI7oP1xQ"


class ScimTokenCreate(InputModel):
    model_config = examples({"Label": "Okta", "Days": 365})

    label: str = Field(
        default="SCIM directory",
        min_length=1,
        max_length=100,
        alias="Label",
        description="What the token is for (which directory), shown in the list.",
    )
    days: int | None = Field(
        default=None,
        ge=1,
        le=365,
        alias="Days",
        description="How long the token is valid: a year at most, and at most "
        "QUESTLINE_SCIM_TOKEN_MAX_DAYS where an operator set it shorter (then a longer "
        "one is 422), which is also the default.",
    )


class ScimTokenInfo(OutputModel):
    """A SCIM token as listed: never its secret."""

    model_config = examples(
        {
            "Id": TOKEN_ID,
            "Label": "Okta",
            "Status": "active",
            "CreatedAt": AT,
            "ExpiresAt": "2027-11-20T09:30:00Z",
            "RevokedAt": None,
            "LastUsedAt": LATER,
        }
    )

    id: uuid.UUID
    label: str
    status: Literal["active", "revoked", "expired"]
    created_at: UtcDateTime
    expires_at: UtcDateTime
    revoked_at: UtcDateTime | None
    last_used_at: UtcDateTime | None = Field(
        description="When the directory last used it (to the minute)."
    )


class ScimToken(OutputModel):
    """A token just created: the only answer that holds its secret."""

    model_config = examples(
        {
            "Id": TOKEN_ID,
            "Label": "Okta",
            "Token": TOKEN_EXAMPLE,
            "BaseUrl": "https://questline.example.org/scim/v2",
            "CreatedAt": AT,
            "ExpiresAt": "2027-11-20T09:30:00Z",
        }
    )

    id: uuid.UUID
    label: str
    token: str = Field(description="The bearer token (shown once; only its digest is kept).")
    base_url: str = Field(description="The SCIM base URL to give the directory.")
    created_at: UtcDateTime
    expires_at: UtcDateTime
