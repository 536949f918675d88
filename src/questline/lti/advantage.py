"""Calls to a platform's services (LTI Advantage): the access token (client
credentials with a JWT bearer client assertion signed with Questline's key, LTI
Security Framework §4.1), then the roster (NRPS) and grades (AGS) with it.

Every call goes to a URL checked against SSRF and pinned to the address checked,
without redirects, bounded in time (``QUESTLINE_LTI_HTTP_TIMEOUT_SECONDS``) and in the
size of what is read. No database transaction is open during a call: the signing key
is read before (``keys.signing_key``).
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from joserfc import jwt

from questline.config import Settings
from questline.lti.keys import ALGORITHM, SigningKey
from questline.outbound import addresses, calls

MAX_ANSWER_BYTES = 4 * 1024 * 1024
CONNECTIONS = 8
"""Connections to one platform at most (the grades' requests run a few at a time)."""
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
AGS_LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
AGS_SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"


class ServiceFailed(Exception):
    """The platform's service could not be used; the message says why (no secret in it)."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


@dataclass(frozen=True, slots=True)
class Answer:
    status_code: int
    links: list[str]
    """The ``Link`` headers (RFC 8288), for paging."""
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise ServiceFailed("The platform's answer is not JSON.") from exc


def client(settings: Settings) -> calls.Caller:
    return calls.client(timeout=settings.lti_http_timeout_seconds, max_connections=CONNECTIONS)


async def call(
    http: calls.Caller,
    method: str,
    url: str,
    *,
    settings: Settings,
    headers: dict[str, str],
    content: bytes | None = None,
) -> Answer:
    try:
        answer = await calls.send(
            http,
            method,
            url,
            headers=headers,
            allow_private=settings.lti_allow_private_urls,
            content=content,
            read_at_most=MAX_ANSWER_BYTES,
        )
    except addresses.UnsafeUrl as exc:
        raise ServiceFailed(str(exc)) from exc
    except TimeoutError as exc:
        raise ServiceFailed(f"{url} failed (it did not answer in time).") from exc
    except calls.CallFailed as exc:
        raise ServiceFailed(f"{url} failed ({exc.kind}).") from exc
    if answer.cut:
        raise ServiceFailed(f"The answer of {url} is too large.")
    return Answer(answer.status_code, answer.header_values("link"), answer.body)


def client_assertion(*, key: SigningKey, client_id: str, token_url: str) -> str:
    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": token_url,
        "iat": now,
        "exp": now + 300,
        "jti": secrets.token_urlsafe(16),
    }
    return jwt.encode({"alg": ALGORITHM, "kid": key.kid, "typ": "JWT"}, claims, key.key)


async def access_token(
    http: calls.Caller,
    *,
    settings: Settings,
    key: SigningKey,
    client_id: str,
    token_url: str,
    scopes: list[str],
) -> str:
    """An access token for ``scopes`` from the platform's token endpoint."""
    form = {
        "grant_type": "client_credentials",
        "client_assertion_type": CLIENT_ASSERTION_TYPE,
        "client_assertion": client_assertion(key=key, client_id=client_id, token_url=token_url),
        "scope": " ".join(scopes),
    }
    answer = await call(
        http,
        "POST",
        token_url,
        settings=settings,
        headers={
            "content-type": "application/x-www-form-urlencoded",
            "accept": "application/json",
        },
        content=urlencode(form).encode(),
    )
    if answer.status_code != 200:
        raise ServiceFailed(
            f"The platform's token endpoint answered {answer.status_code}.",
            status_code=answer.status_code,
        )
    token = answer.json().get("access_token") if isinstance(answer.json(), dict) else None
    if not isinstance(token, str) or not token:
        raise ServiceFailed("The platform's token endpoint gave no access token.")
    return token
