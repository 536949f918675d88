"""What a verified ID token says: its checks, and who signs in (e-mail, name, role).

The signature is checked by ``joserfc`` with the provider's keys (fetched again once
for a key id the cached set lacks: the provider rotated its keys), the claims by
authlib's ``CodeIDToken`` (``iss``, ``aud``, ``exp``/``iat``, ``nonce``, ``azp``,
``at_hash``).
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

from authlib.oidc.core import CodeIDToken
from email_validator import EmailNotValidError, validate_email
from joserfc import jwt as jose_jwt
from joserfc.errors import (
    BadSignatureError,
    ClaimError,
    ExpiredTokenError,
    InvalidKeyIdError,
    JoseError,
)

from questline.sso.provider import Provider, ProviderDirectory, ProviderUnusable
from questline.sso.refusals import LoginRefused
from questline.web.identity import Role

LEEWAY_SECONDS = 60
"""Clock skew allowed between the provider and this service (``exp``, ``iat``)."""


@dataclass(frozen=True, slots=True)
class SignInRules:
    """The organization's rules for who signs in, and as what."""

    groups_claim: str
    admin_groups: list[str]
    allowed_email_domains: list[str]


async def verify_id_token(
    id_token: str,
    *,
    provider: Provider,
    providers: ProviderDirectory,
    client_id: str,
    nonce: str,
    access_token: str | None,
) -> dict[str, Any]:
    """Signature by the provider's keys (fetched again once for an unknown key id),
    then the claims: ``iss``, ``aud``, ``exp``/``iat``, ``nonce``, ``azp``, ``at_hash``."""
    try:
        try:
            decoded = jose_jwt.decode(
                id_token, provider.key_set(), algorithms=list(provider.signing_algorithms)
            )
        except InvalidKeyIdError:
            refreshed = await providers.with_fresh_keys(provider.issuer, provider)
            if refreshed is None:
                raise
            decoded = jose_jwt.decode(
                id_token, refreshed.key_set(), algorithms=list(refreshed.signing_algorithms)
            )
        params: dict[str, Any] = {"nonce": nonce, "client_id": client_id}
        if access_token:
            params["access_token"] = access_token
        claims = CodeIDToken(
            decoded.claims,
            decoded.header,
            {
                "iss": {"essential": True, "value": provider.issuer},
                "aud": {"essential": True, "value": client_id},
                "nonce": {"essential": True, "value": nonce},
            },
            params,
        )
        claims.validate(leeway=LEEWAY_SECONDS)
    except ProviderUnusable as exc:
        raise LoginRefused("provider-unreachable", str(exc)) from exc
    except ExpiredTokenError as exc:
        raise LoginRefused("expired") from exc
    except ClaimError as exc:
        reason = {"iss": "issuer", "aud": "audience", "azp": "audience", "nonce": "nonce"}
        raise LoginRefused(reason.get(exc.claim, "invalid-token"), exc.claim) from exc
    except (BadSignatureError, InvalidKeyIdError) as exc:
        raise LoginRefused("signature") from exc
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise LoginRefused("invalid-token", type(exc).__name__) from exc
    return dict(claims)


@dataclass(frozen=True, slots=True)
class Person:
    email: str
    given_name: str
    role: Role


def person_of(claims: dict[str, Any], rules: SignInRules) -> Person:
    """Who signs in, from verified claims: e-mail (verified, and of an allowed domain
    when the organization lists any), given name, and role (``admin`` when a group is
    one of the admin groups).

    Members are found by e-mail, so an address the provider does not say it verified is
    refused outright, whatever its domain: a provider that lets people type their own
    address would otherwise let anyone sign in as the member who owns it. The allowed
    domains only ever narrow who signs in; they never stand in for verification."""
    raw = claims.get("email")
    if not isinstance(raw, str) or len(raw) > 320:
        raise LoginRefused("email-missing")
    try:
        validated = validate_email(raw, check_deliverability=False)
    except EmailNotValidError as exc:
        raise LoginRefused("email-missing") from exc
    if claims.get("email_verified") not in (True, "true"):
        raise LoginRefused("email-unverified")
    if rules.allowed_email_domains:
        # Exact domains: a subdomain is another domain. Either spelling of an
        # internationalized domain matches.
        spellings = {validated.domain.lower(), (validated.ascii_domain or "").lower()}
        if spellings.isdisjoint(rules.allowed_email_domains):
            raise LoginRefused("email-domain", validated.domain)
    email = validated.normalized
    return Person(email=email, given_name=_given_name(claims, email), role=_role(claims, rules))


def _group_key(group: str) -> str:
    """Keycloak's group mapper writes full paths (``/questline-admins``) by default."""
    return group.strip().lstrip("/").casefold()


def _role(claims: dict[str, Any], rules: SignInRules) -> Role:
    value = claims.get(rules.groups_claim)
    groups = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    mine = {_group_key(g) for g in groups if isinstance(g, str)}
    admin = {_group_key(g) for g in rules.admin_groups}
    return Role.ADMIN if mine & admin else Role.MEMBER


_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _given_name(claims: dict[str, Any], email: str) -> str:
    for name in ("given_name", "name", "preferred_username"):
        value = claims.get(name)
        if isinstance(value, str):
            shown = unicodedata.normalize("NFKC", value)
            shown = "".join(c for c in shown if unicodedata.category(c) not in _HIDDEN).strip()
            if shown:
                return shown[:100]
    return email.split("@", 1)[0][:100]
