"""Request and response bodies of the dashboard's sign-in (``/auth/session``)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from questline.web.example_ids import LATER, ORG, TEAM
from questline.web.schemas import InputModel, OutputModel, UtcDateTime, examples

Secret = Annotated[str, StringConstraints(min_length=1, max_length=8192, pattern=r"^[!-~]+$")]
"""A code or token: visible ASCII, no spaces (what the service issues, and JWTs, are)."""


def _exactly_one_of_code_or_id_token(schema: dict[str, Any]) -> None:
    """The document states the rule the validator checks: one of the two, as a string."""
    properties = schema["properties"]
    for name in ("Code", "IdToken"):
        prop = properties[name]
        text = next(option for option in prop.pop("anyOf") if option.get("type") == "string")
        prop.update(text)
        prop.pop("default", None)
    schema["oneOf"] = [{"required": ["Code"]}, {"required": ["IdToken"]}]


class SessionCreate(InputModel):
    """Exactly one of `Code` (a sign-in code) or `IdToken` (a token the service accepts)."""

    model_config = ConfigDict(json_schema_extra=_exactly_one_of_code_or_id_token)

    code: Secret | None = Field(
        default=None,
        alias="Code",
        description="The one-time code of a sign-in link (`/ui/#code=<Code>`).",
    )
    id_token: Secret | None = Field(
        default=None,
        alias="IdToken",
        description="An identity provider's ID token, or any token the API accepts as a "
        "bearer (verified once; the session then lives on its own).",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> SessionCreate:
        given = self.model_fields_set & {"code", "id_token"}
        if len(given) != 1 or (self.code is None) == (self.id_token is None):
            raise ValueError("Send exactly one of Code or IdToken, as a string.")
        return self


class SessionInfo(OutputModel):
    """The signed-in dashboard session."""

    model_config = examples(
        {
            "Subject": "ada",
            "Role": "admin",
            "OrganizationId": ORG,
            "Email": "ada@example.org",
            "TeamIds": [
                TEAM,
            ],
            "ExpiresAt": LATER,
            "CsrfToken": "Zp0cN4xQ1vR7sT2uW9yB3dF6gH8jK5mL0nP2qS4tV6w",
        }
    )

    subject: str = Field(description="Who signed in (the `sub` of the link or token).")
    role: str = Field(description="`member` (read-only dashboard) or `admin`.")
    organization_id: uuid.UUID
    email: str | None = Field(
        description="The e-mail the link was made for, when known: teams with a member "
        "of this e-mail are the caller's teams."
    )
    team_ids: list[uuid.UUID] = Field(description="The caller's teams (see `Email`).")
    expires_at: UtcDateTime
    csrf_token: str = Field(
        alias="CsrfToken",
        description="Send as `X-CSRF-Token` on every change made with the session cookie.",
    )
