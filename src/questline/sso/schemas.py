"""Bodies of single sign-on: the organization's configuration and the sign-in page's look-up."""

from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import AfterValidator, Field

from questline.web.example_ids import AT, LATER, ORG
from questline.web.schemas import InputModel, OutputModel, UtcDateTime, examples, text

_ISSUER = "https://sso.example.org/realms/acme"
_LOGIN = f"https://questline.example.org/auth/oidc/{ORG}/login"
_CALLBACK = "https://questline.example.org/auth/oidc/callback"


def _dedupe(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _domains(values: list[str]) -> list[str]:
    cleaned = []
    for value in values:
        domain = value.strip().lstrip("@").lower()
        if "." not in domain or "@" in domain or " " in domain:
            raise ValueError(f"{value!r} is not an e-mail domain (like example.org).")
        cleaned.append(domain)
    return _dedupe(cleaned)


Groups = Annotated[list[Annotated[str, text(200)]], Field(max_length=100), AfterValidator(_dedupe)]
Domains = Annotated[
    list[Annotated[str, text(253)]], Field(max_length=100), AfterValidator(_domains)
]


class SsoConfigurationPut(InputModel):
    """``PUT /organization/sso``: the whole configuration."""

    model_config = examples(
        {
            "Issuer": _ISSUER,
            "ClientId": "questline",
            "ClientSecret": "kc-2a9f1e0c7d4b",
            "AdminGroups": ["questline-admins"],
            "GroupsClaim": "groups",
            "AllowedEmailDomains": ["example.org"],
            "Enabled": True,
        }
    )

    issuer: Annotated[str, text(2048)] = Field(
        alias="Issuer",
        description="The provider's issuer URL, exactly as its discovery document "
        "(`<Issuer>/.well-known/openid-configuration`) names it; https.",
    )
    client_id: Annotated[str, text(255)] = Field(
        alias="ClientId", description="The client registered at the provider for Questline."
    )
    client_secret: Annotated[str, text(1024)] | None = Field(
        default=None,
        alias="ClientSecret",
        description="The client's secret: stored encrypted, never returned. Required the "
        "first time and whenever `Issuer` or `ClientId` change (422 naming `ClientSecret` "
        "otherwise: a secret is never sent to another provider or client); left out "
        "otherwise, the stored one is kept.",
    )
    admin_groups: Groups = Field(
        default_factory=list,
        alias="AdminGroups",
        description="A person whose `GroupsClaim` holds one of these signs in as `admin`; "
        "everyone else as `member`.",
    )
    groups_claim: Annotated[str, text(100)] = Field(
        default="groups",
        alias="GroupsClaim",
        description="The ID token claim that lists the person's groups (a list of strings "
        "or one string).",
    )
    allowed_email_domains: Domains = Field(
        default_factory=list,
        alias="AllowedEmailDomains",
        description="When not empty, only addresses of these domains (exactly: a "
        "subdomain is another domain) sign in, existing members included; empty: any "
        "domain. Either way the provider must say `email_verified: true`.",
    )
    enabled: bool = Field(
        default=True, alias="Enabled", description="`false` keeps it but refuses logins."
    )


class SsoConfiguration(OutputModel):
    """The organization's single sign-on (the client secret is never shown)."""

    model_config = examples(
        {
            "OrganizationId": ORG,
            "Issuer": _ISSUER,
            "ClientId": "questline",
            "ClientSecretSet": True,
            "AdminGroups": ["questline-admins"],
            "GroupsClaim": "groups",
            "AllowedEmailDomains": ["example.org"],
            "Enabled": True,
            "RedirectUri": _CALLBACK,
            "LoginUrl": _LOGIN,
            "EndSessionEndpoint": f"{_ISSUER}/protocol/openid-connect/logout",
            "CreatedAt": AT,
            "UpdatedAt": LATER,
        }
    )

    organization_id: uuid.UUID
    issuer: str
    client_id: str
    client_secret_set: bool = Field(description="A client secret is stored (never shown).")
    admin_groups: list[str]
    groups_claim: str
    allowed_email_domains: list[str]
    enabled: bool
    redirect_uri: str = Field(
        description="Register this as the client's redirect URI at the provider."
    )
    login_url: str = Field(description="Where a person starts signing in (`?next=/ui/…`).")
    end_session_endpoint: str | None = Field(
        description="The provider's logout endpoint, when it publishes one: the dashboard "
        "offers it after sign-out (register `<public URL>/ui/` as a post-logout redirect)."
    )
    created_at: UtcDateTime
    updated_at: UtcDateTime


class SsoAvailability(OutputModel):
    """What the sign-in page needs to offer "Sign in with your organization"."""

    model_config = examples({"OrganizationId": ORG, "LoginUrl": _LOGIN})

    organization_id: uuid.UUID
    login_url: str = Field(description="Start here; add `?next=/ui/…` to land on a page.")


class ProviderLogout(OutputModel):
    """Where to end the session at the provider too (RP-initiated logout)."""

    model_config = examples(
        {
            "EndSessionUrl": f"{_ISSUER}/protocol/openid-connect/logout"
            "?client_id=questline&post_logout_redirect_uri=https%3A%2F%2Fquestline.example.org%2Fui%2F"
        }
    )

    end_session_url: str | None = Field(
        description="Null when the session was not started by single sign-on or the "
        "provider publishes no `end_session_endpoint`."
    )
