"""The admin's side of SCIM: minting the organization's directory token."""

from __future__ import annotations

from pydantic import Field

from questline.web.example_ids import AT
from questline.web.schemas import InputModel, OutputModel, UtcDateTime, examples

DEFAULT_DAYS = 365


class ScimTokenCreate(InputModel):
    model_config = examples({"Days": 365})

    days: int = Field(
        default=DEFAULT_DAYS,
        ge=1,
        le=3650,
        alias="Days",
        description="How long the token is valid (a directory keeps it until rotated).",
    )


class ScimToken(OutputModel):
    model_config = examples(
        {
            "Token": "eyJhbGciOiJIUzI1NiJ9.eyJyb2xlIjoic2NpbSJ9.c2lnbmF0dXJl",
            "BaseUrl": "https://questline.example.org/scim/v2",
            "ExpiresAt": AT,
        }
    )

    token: str = Field(description="The bearer token (shown once; not stored).")
    base_url: str = Field(description="The SCIM base URL to give the directory.")
    expires_at: UtcDateTime
