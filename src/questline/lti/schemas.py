"""Bodies of the LTI routes: a platform's registration and the tool's own URLs."""

from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import AfterValidator, Field

from questline.web.example_ids import AT, LATER, ORG
from questline.web.schemas import InputModel, OutputModel, UtcDateTime, examples, text

PLATFORM = "0193a6fa-8b92-7da4-9ebf-2a3b4c5d6e71"
_ISSUER = "https://moodle.example.org"
_TOOL = "https://questline.example.org"


def _dedupe(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


Url = Annotated[str, text(2048)]
FrameOrigins = Annotated[list[Annotated[str, text(300)]], Field(max_length=20)]
FRAME_ORIGINS = (
    "Origins (`https://host[:port]`) whose pages may frame Questline after a launch, "
    "besides the `Issuer`'s and the `AuthLoginUrl`'s (Canvas posts launches from the "
    "school's own domain). A launch's `Origin` header is used only when it is one of these."
)
DeploymentIds = Annotated[
    list[Annotated[str, text(255)]],
    Field(min_length=1, max_length=100),
    AfterValidator(_dedupe),
]

_CREATE_EXAMPLE = {
    "Issuer": _ISSUER,
    "ClientId": "Qx7Tf0kz9mLr2Vb",
    "DeploymentIds": ["3"],
    "AuthLoginUrl": f"{_ISSUER}/mod/lti/auth.php",
    "AuthTokenUrl": f"{_ISSUER}/mod/lti/token.php",
    "KeySetUrl": f"{_ISSUER}/mod/lti/certs.php",
}


class PlatformCreate(InputModel):
    """``POST /lti/platform``: what the platform shows once the tool is registered in it
    (docs/platforms.md gives where Moodle and Canvas show each)."""

    model_config = examples(_CREATE_EXAMPLE)

    issuer: Url = Field(
        alias="Issuer", description="The platform's issuer (`iss` of its ID tokens)."
    )
    client_id: Annotated[str, text(255)] = Field(
        alias="ClientId", description="The client id the platform gave Questline (`aud`)."
    )
    deployment_ids: DeploymentIds = Field(
        alias="DeploymentIds",
        description="The deployment ids launches may carry; any other is refused. Unique "
        "across the service with the issuer and client id (409 when taken).",
    )
    auth_login_url: Url = Field(
        alias="AuthLoginUrl", description="The platform's OIDC authorization endpoint."
    )
    auth_token_url: Url = Field(
        alias="AuthTokenUrl",
        description="The platform's OAuth 2 token endpoint (roster and grade services).",
    )
    key_set_url: Url = Field(
        alias="KeySetUrl", description="The platform's public keys (JWKS) that sign launches."
    )
    frame_origins: FrameOrigins | None = Field(
        default=None,
        alias="FrameOrigins",
        description=FRAME_ORIGINS,
    )


class PlatformUpdate(InputModel):
    """``PATCH /lti/platform/{id}``: only the fields given change."""

    model_config = examples({"DeploymentIds": ["3", "7"]})

    issuer: Url | None = Field(default=None, alias="Issuer")
    client_id: Annotated[str, text(255)] | None = Field(default=None, alias="ClientId")
    deployment_ids: DeploymentIds | None = Field(default=None, alias="DeploymentIds")
    auth_login_url: Url | None = Field(default=None, alias="AuthLoginUrl")
    auth_token_url: Url | None = Field(default=None, alias="AuthTokenUrl")
    key_set_url: Url | None = Field(default=None, alias="KeySetUrl")
    frame_origins: FrameOrigins | None = Field(default=None, alias="FrameOrigins")


_TOOL_EXAMPLE = {
    "LoginUrl": f"{_TOOL}/lti/login",
    "RedirectUrl": f"{_TOOL}/lti/launch",
    "KeySetUrl": f"{_TOOL}/.well-known/jwks.json",
    "DeepLinkingUrl": f"{_TOOL}/lti/launch",
    "TargetLinkUri": f"{_TOOL}/lti/view/leaderboard",
}


class ToolUrls(OutputModel):
    """What to paste into the platform when registering Questline as a tool."""

    model_config = examples(_TOOL_EXAMPLE)

    login_url: str = Field(description="Initiate login URL (third-party initiated login).")
    redirect_url: str = Field(description="Redirection URI, where the platform posts launches.")
    key_set_url: str = Field(description="Questline's public keys (JWKS).")
    deep_linking_url: str = Field(description="Where deep-linking requests are launched.")
    target_link_uri: str = Field(description="The default target (the leaderboard).")


class Platform(OutputModel):
    model_config = examples(
        {
            "Id": PLATFORM,
            "OrganizationId": ORG,
            **_CREATE_EXAMPLE,
            "FrameOrigins": [],
            "ContextTitle": "Security awareness 2026",
            "LastSyncAt": None,
            "Tool": _TOOL_EXAMPLE,
            "CreatedAt": AT,
            "UpdatedAt": LATER,
        }
    )

    id: uuid.UUID
    organization_id: uuid.UUID
    issuer: str
    client_id: str
    deployment_ids: list[str]
    auth_login_url: str
    auth_token_url: str
    key_set_url: str
    frame_origins: list[str] = Field(description=FRAME_ORIGINS)
    context_title: str | None = Field(
        description="The title of the course of the latest launch (null before the first)."
    )
    last_sync_at: UtcDateTime | None = Field(description="The latest roster sync (NRPS).")
    tool: ToolUrls | None = Field(
        description="Questline's URLs to paste into the platform; null on a read while "
        "the service's public address (`QUESTLINE_PUBLIC_URL`) is not set."
    )
    created_at: UtcDateTime
    updated_at: UtcDateTime


class RosterSync(OutputModel):
    """``POST /lti/platform/{id}/sync``: what the roster changed."""

    model_config = examples({"Read": 42, "Added": 3, "Reactivated": 0, "Deactivated": 1})

    read: int = Field(description="Members read from the platform's roster.")
    added: int = Field(description="New members of the organization.")
    reactivated: int = Field(description="Members the roster lists as active again.")
    deactivated: int = Field(description="Members gone from the roster (or inactive there).")
