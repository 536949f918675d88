"""Bodies of the e-mail routes: asking for a sign-in link, and an invitation sent."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import EmailStr, Field

from questline.web.example_ids import AT, MEMBER, ORG
from questline.web.schemas import InputModel, OutputModel, UtcDateTime, examples

SIGNIN_LINK_ACCEPTED = (
    "If this address belongs to a member of the organization, a sign-in link is on its "
    "way to it. The link works once, for a short while; ask again if it does not arrive."
)


class SigninLinkRequest(InputModel):
    model_config = examples({"OrganizationId": ORG, "Email": "ada@example.org"})

    organization_id: uuid.UUID = Field(
        alias="OrganizationId", description="The organization to sign in to."
    )
    email: Annotated[EmailStr, Field(max_length=320)] = Field(
        alias="Email", description="The member's e-mail address (any case)."
    )


class SigninLinkAccepted(OutputModel):
    """The same answer whoever asks: it never tells whether the address is a member's."""

    model_config = examples({"Status": "Accepted", "Detail": SIGNIN_LINK_ACCEPTED})

    status: Literal["Accepted"] = "Accepted"
    detail: str = SIGNIN_LINK_ACCEPTED


class Invitation(OutputModel):
    """An invitation queued for sending (it goes out within seconds, retried if needed)."""

    model_config = examples(
        {
            "Id": "0193e5a0-5b7c-7d11-9c3e-1f2a3b4c5d6e",
            "MemberId": MEMBER,
            "Email": "ada@example.org",
            "Status": "Queued",
            "QueuedAt": AT,
        }
    )

    id: uuid.UUID = Field(description="The queued e-mail.")
    member_id: uuid.UUID
    email: str = Field(description="Where the invitation goes: the member's address.")
    status: Literal["Queued"] = "Queued"
    queued_at: UtcDateTime
