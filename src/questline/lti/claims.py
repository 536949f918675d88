"""The LTI 1.3 claims Questline reads, and the checks of a launch's ID token.

The signature is checked by ``joserfc`` with the platform's keys (fetched again once
for a key id the cached set lacks), then ``iss``, ``aud``, ``exp``/``iat``/``nbf`` and
``nonce`` by joserfc's claims registry, then every audience must be ours (1EdTech
Security Framework §5.1.3: a token also meant for an audience the tool does not trust
is refused) and ``azp``, when present, ours too; then what LTI Core 1.3 §5.1 adds: the
LTI version, the message type, the deployment, the roles and the claims that type
needs. The checks follow pylti1p3's ``MessageLaunch.validate`` (a tool-side
library for Django and Flask, synchronous, so not used here).
"""

from __future__ import annotations

import json
from typing import Any

from joserfc import jwt
from joserfc.errors import (
    BadSignatureError,
    ClaimError,
    ExpiredTokenError,
    InvalidKeyIdError,
    JoseError,
    UnsupportedAlgorithmError,
)
from joserfc.jws import extract_compact

from questline.lti.refusals import LaunchRefused
from questline.outbound.fetching import FetchFailed
from questline.outbound.key_sets import KeySets

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
VERSION = LTI + "version"
MESSAGE_TYPE = LTI + "message_type"
DEPLOYMENT_ID = LTI + "deployment_id"
ROLES = LTI + "roles"
CONTEXT = LTI + "context"
TARGET_LINK_URI = LTI + "target_link_uri"
RESOURCE_LINK = LTI + "resource_link"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
DEEP_LINKING = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"

RESOURCE_LINK_REQUEST = "LtiResourceLinkRequest"
DEEP_LINKING_REQUEST = "LtiDeepLinkingRequest"
MESSAGE_TYPES = frozenset({RESOURCE_LINK_REQUEST, DEEP_LINKING_REQUEST})
ALGORITHMS = ["RS256", "RS384", "RS512"]
"""LTI Security Framework §5.1.2: platforms sign with RSA (RS256 at least)."""
LEEWAY_SECONDS = 60

ADMIN_ROLES = frozenset(
    {
        "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
        "http://purl.imsglobal.org/vocab/lis/v2/membership#Administrator",
        "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",
        "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor",
        "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator",
        "http://purl.imsglobal.org/vocab/lis/v2/system/person#SysAdmin",
    }
)
"""Who becomes an admin of the organization; every other role (Learner…) a member.
Short forms (``Instructor``) count too: LTI 1.3 deprecates them, some platforms send them."""
ADMIN_SHORT_ROLES = frozenset({"Instructor", "Administrator"})


MAX_ID_TOKEN = 64 * 1024


def _deployment_id(claims: dict[str, Any]) -> str:
    deployment = claims.get(DEPLOYMENT_ID)
    if not isinstance(deployment, str) or not deployment or len(deployment) > 255:
        raise LaunchRefused("invalid-token", "deployment id")
    return deployment


def unverified_deployment(id_token: str) -> str:
    """The deployment id a launch claims, read before its signature is checked: only to
    choose which registration's key set then checks it (``flow.launch_registration``),
    never to decide anything else."""
    if not id_token or len(id_token) > MAX_ID_TOKEN:
        raise LaunchRefused("invalid-token", "no or oversized id_token")
    try:
        payload = json.loads(extract_compact(id_token.encode("ascii")).payload)
    except (JoseError, ValueError, TypeError, UnicodeError) as exc:
        raise LaunchRefused("invalid-token", type(exc).__name__) from exc
    if not isinstance(payload, dict):
        raise LaunchRefused("invalid-token", "payload")
    return _deployment_id(payload)


async def verify_launch(
    id_token: str,
    *,
    key_set_url: str,
    key_sets: KeySets,
    issuer: str,
    client_id: str,
    nonce: str,
) -> dict[str, Any]:
    """The verified claims of a launch, or ``LaunchRefused`` saying which check failed."""
    if not id_token or len(id_token) > MAX_ID_TOKEN:
        raise LaunchRefused("invalid-token", "no or oversized id_token")
    try:
        cached = await key_sets.keys(key_set_url)
        try:
            decoded = jwt.decode(id_token, cached.key_set, algorithms=ALGORITHMS)
        except InvalidKeyIdError:
            refreshed = await key_sets.refreshed(key_set_url, cached)
            if refreshed is None:
                raise
            decoded = jwt.decode(id_token, refreshed.key_set, algorithms=ALGORITHMS)
        claims = dict(decoded.claims)
        jwt.JWTClaimsRegistry(
            leeway=LEEWAY_SECONDS,
            iss={"essential": True, "value": issuer},
            aud={"essential": True, "value": client_id},
            exp={"essential": True},
            iat={"essential": True},
            nonce={"essential": True, "value": nonce},
            sub={"essential": False},
        ).validate(claims)
    except FetchFailed as exc:
        raise LaunchRefused("keys-unreachable", str(exc)) from exc
    except ExpiredTokenError as exc:
        raise LaunchRefused("expired") from exc
    except ClaimError as exc:
        # A token issued in the future (``iat``, beyond the leeway) is outside its
        # validity window as one not valid yet (``nbf``) is.
        reasons = {
            "iss": "issuer",
            "aud": "audience",
            "nonce": "nonce",
            "nbf": "expired",
            "iat": "expired",
        }
        raise LaunchRefused(reasons.get(exc.claim, "invalid-token"), exc.claim) from exc
    except (BadSignatureError, InvalidKeyIdError, UnsupportedAlgorithmError) as exc:
        # ``alg: none``, or HS256 keyed with the platform's public key: not signed by
        # the platform's keys, whatever it claims.
        raise LaunchRefused("signature") from exc
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise LaunchRefused("invalid-token", type(exc).__name__) from exc
    _check_audience(claims, client_id)
    _check_lti(claims)
    return claims


def _check_audience(claims: dict[str, Any], client_id: str) -> None:
    """The only audience trusted is the registration's client id: a token that lists
    any other is refused (1EdTech Security Framework §5.1.3, item 3), whatever its
    ``azp``; ``azp``, when present, must be the client id too (OpenID Connect Core
    §3.1.3.7)."""
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if any(value != client_id for value in audiences):
        raise LaunchRefused("audience", "untrusted audience")
    azp = claims.get("azp")
    if azp is not None and azp != client_id:
        raise LaunchRefused("audience", "azp")


def _check_lti(claims: dict[str, Any]) -> None:
    if claims.get(VERSION) != "1.3.0":
        raise LaunchRefused("invalid-token", "LTI version")
    message_type = claims.get(MESSAGE_TYPE)
    if message_type not in MESSAGE_TYPES:
        raise LaunchRefused("invalid-token", "message type")
    _deployment_id(claims)
    # Required by LTI Core 1.3 §5.3.7 (an empty list is allowed): a launch without it
    # says nothing of who may do what, so it is not read as a learner's.
    roles = claims.get(ROLES)
    if not isinstance(roles, list) or not all(isinstance(role, str) for role in roles):
        raise LaunchRefused("invalid-token", "roles")
    sub = claims.get("sub")
    if sub is not None and (not isinstance(sub, str) or len(sub) > 255):
        raise LaunchRefused("invalid-token", "sub")
    if message_type == RESOURCE_LINK_REQUEST:
        link = claims.get(RESOURCE_LINK)
        if not isinstance(link, dict) or not isinstance(link.get("id"), str):
            raise LaunchRefused("invalid-token", "resource_link")
    else:
        settings = claims.get(DEEP_LINKING)
        if not isinstance(settings, dict) or not isinstance(
            settings.get("deep_link_return_url"), str
        ):
            raise LaunchRefused("invalid-token", "deep_linking_settings")


def is_admin(claims: dict[str, Any]) -> bool:
    roles = claims.get(ROLES)
    if not isinstance(roles, list):
        return False
    return any(
        isinstance(role, str) and (role in ADMIN_ROLES or role in ADMIN_SHORT_ROLES)
        for role in roles
    )


def text_of(value: Any, limit: int) -> str | None:
    return value[:limit] if isinstance(value, str) and value.strip() else None


def object_of(claims: dict[str, Any], name: str) -> dict[str, Any]:
    value = claims.get(name)
    return value if isinstance(value, dict) else {}
