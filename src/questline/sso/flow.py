"""The sign-in flow: authorization code with PKCE (S256), ``state`` and ``nonce``.

1. ``start_login``: a login row (state, nonce, PKCE verifier, where to land) in the
   database, a short-lived cookie that ties it to this browser, and the provider's
   authorization URL.
2. ``spend_login``: the callback's ``state`` spends that row, once (deleted in the
   statement that reads it, in a transaction of its own that commits whatever happens
   next: a replayed callback finds nothing).
3. ``exchange_and_verify``: the code is exchanged at the token endpoint (authlib's
   client, with the client secret and the PKCE verifier), and the ID token verified with
   the provider's keys (joserfc) and claims rules (authlib's ``CodeIDToken``: ``iss``,
   ``aud``, ``exp``, ``iat``, ``nonce``, ``azp``, ``at_hash``). No database transaction
   is open while the provider is called.
4. ``sign_in``: the e-mail must be verified (or of an allowed domain); the member is
   found or created; the role follows the groups; the dashboard session starts exactly
   as a sign-in link's does (``auth.sessions``).

Every refusal is a ``LoginRefused`` with a reason code: the endpoint sends the browser
to the sign-in page with it (docs/identity.md lists the codes and their messages).
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import unicodedata
import uuid
import warnings
from dataclasses import dataclass
from typing import Any

import httpx
from authlib.deprecate import AuthlibDeprecationWarning
from authlib.integrations.base_client import OAuthError
from authlib.oauth2.client import OAuth2Client
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
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from questline.auth import sessions
from questline.config import Settings
from questline.members.service import find_or_create
from questline.readmodel.versions import bump
from questline.sso import sealing
from questline.sso.models import OidcLoginState, SsoConfiguration, SsoSession
from questline.sso.provider import Provider, ProviderDirectory, ProviderUnusable, tls_context
from questline.sso.service import get_configuration
from questline.storage.db import utcnow
from questline.web.identity import Caller, Role

with warnings.catch_warnings():
    # authlib now prefers httpx's fork "httpx2" and says so on import; the service's
    # HTTP client is httpx, which authlib still supports.
    warnings.simplefilter("ignore", AuthlibDeprecationWarning)
    from authlib.integrations.httpx_client import AsyncOAuth2Client

logger = logging.getLogger("questline.sso")

SCOPE = "openid email profile"
LOGIN_COOKIE_PREFIX = "questline_oidc_"
LEEWAY_SECONDS = 60
"""Clock skew allowed between the provider and this service (``exp``, ``iat``)."""


class LoginRefused(Exception):
    """A login that ends on the sign-in page, with a reason code (``REASONS``)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        assert reason in REASONS, reason
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


REASONS: dict[str, str] = {
    "not-configured": "the organization has no (enabled) single sign-on",
    "provider-unreachable": "the provider's discovery document, keys or token endpoint "
    "could not be reached",
    "state": "the login is unknown, used already or expired (a replayed callback)",
    "browser": "the callback came to another browser than the one that started the login",
    "provider-error": "the provider answered with an error (the person cancelled, or the "
    "provider refused)",
    "token": "the provider refused to exchange the code, or sent no ID token",
    "signature": "the ID token's signature does not verify with the provider's keys",
    "issuer": "the ID token names another issuer",
    "audience": "the ID token is for another client (aud/azp)",
    "expired": "the ID token has expired (or is not valid yet)",
    "nonce": "the ID token's nonce is not this login's",
    "invalid-token": "the ID token is malformed or misses a required claim",
    "email-unverified": "the e-mail address is not verified and not of an allowed domain",
    "email-missing": "the ID token carries no usable e-mail address",
    "misconfigured": "the stored client secret cannot be read (the signing secret changed)",
}


def login_cookie_name(state_hash: str) -> str:
    """One cookie per login under way, so that two tabs signing in do not collide."""
    return LOGIN_COOKIE_PREFIX + state_hash[:16]


@dataclass(frozen=True, slots=True)
class LoginStart:
    authorization_url: str
    cookie_name: str
    cookie_value: str
    max_age: int


@dataclass(frozen=True, slots=True)
class SpentLogin:
    organization_id: uuid.UUID
    nonce: str
    code_verifier: str
    next_path: str
    issuer: str
    client_id: str
    client_secret_sealed: str
    groups_claim: str
    admin_groups: list[str]
    allowed_email_domains: list[str]


async def _purge_expired(session: AsyncSession) -> None:
    now = utcnow()
    await session.execute(delete(OidcLoginState).where(OidcLoginState.expires_at <= now))
    await session.execute(delete(SsoSession).where(SsoSession.expires_at <= now))


async def provider_for(providers: ProviderDirectory, issuer: str) -> Provider:
    try:
        return await providers.provider(issuer)
    except ProviderUnusable as exc:
        logger.warning("single sign-on provider %s unusable: %s", issuer, exc)
        raise LoginRefused("provider-unreachable", str(exc)) from exc


def usable(configuration: SsoConfiguration | None) -> SsoConfiguration:
    if configuration is None or not configuration.enabled:
        raise LoginRefused("not-configured")
    return configuration


async def start_login(
    session: AsyncSession,
    *,
    configuration: SsoConfiguration,
    provider: Provider,
    next_path: str,
    redirect_uri: str,
    settings: Settings,
) -> LoginStart:
    """Record a login and build the provider's authorization URL."""
    await _purge_expired(session)
    state = secrets.token_urlsafe(32)
    nonce = secrets.token_urlsafe(32)
    verifier = secrets.token_urlsafe(64)  # 86 characters: RFC 7636 allows 43 to 128
    browser = secrets.token_urlsafe(32)
    now = utcnow()
    lifetime = dt.timedelta(minutes=settings.oidc_login_minutes)
    state_hash = sessions.digest(state)
    session.add(
        OidcLoginState(
            state_hash=state_hash,
            organization_id=configuration.organization_id,
            browser_hash=sessions.digest(browser),
            nonce=nonce,
            code_verifier=verifier,
            next_path=next_path,
            created_at=now,
            expires_at=now + lifetime,
        )
    )
    await session.flush()
    # authlib's protocol client without a session: building the URL does no I/O.
    client = OAuth2Client(
        None,
        client_id=configuration.client_id,
        scope=SCOPE,
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
    )
    url, _ = client.create_authorization_url(
        provider.authorization_endpoint, state=state, code_verifier=verifier, nonce=nonce
    )
    return LoginStart(
        authorization_url=url,
        cookie_name=login_cookie_name(state_hash),
        cookie_value=browser,
        max_age=int(lifetime.total_seconds()),
    )


async def spend_login(
    session: AsyncSession,
    *,
    state: str,
    cookies: dict[str, str],
) -> SpentLogin:
    """Spend the login of ``state`` (once), checked against the browser's cookie."""
    if not state or len(state) > 200:
        raise LoginRefused("state")
    state_hash = sessions.digest(state)
    spent = (
        await session.execute(
            delete(OidcLoginState)
            .where(OidcLoginState.state_hash == state_hash)
            .returning(
                OidcLoginState.organization_id,
                OidcLoginState.browser_hash,
                OidcLoginState.nonce,
                OidcLoginState.code_verifier,
                OidcLoginState.next_path,
                OidcLoginState.expires_at,
            )
        )
    ).one_or_none()
    if spent is None or spent.expires_at <= utcnow():
        raise LoginRefused("state")
    browser = cookies.get(login_cookie_name(state_hash), "")
    if not secrets.compare_digest(sessions.digest(browser), spent.browser_hash):
        raise LoginRefused("browser")
    configuration = usable(await get_configuration(session, org_id=spent.organization_id))
    return SpentLogin(
        organization_id=spent.organization_id,
        nonce=spent.nonce,
        code_verifier=spent.code_verifier,
        next_path=spent.next_path,
        issuer=configuration.issuer,
        client_id=configuration.client_id,
        client_secret_sealed=configuration.client_secret_sealed,
        groups_claim=configuration.groups_claim,
        admin_groups=list(configuration.admin_groups),
        allowed_email_domains=list(configuration.allowed_email_domains),
    )


async def exchange_and_verify(
    login: SpentLogin,
    *,
    code: str,
    providers: ProviderDirectory,
    redirect_uri: str,
    settings: Settings,
    signing_secret: str,
) -> dict[str, Any]:
    """The verified claims of the ID token the provider gives for ``code``."""
    provider = await provider_for(providers, login.issuer)
    try:
        client_secret = sealing.unseal(login.client_secret_sealed, signing_secret=signing_secret)
    except sealing.UnreadableSecret as exc:
        logger.error("single sign-on of %s: %s", login.organization_id, exc)
        raise LoginRefused("misconfigured") from exc
    try:
        async with AsyncOAuth2Client(
            client_id=login.client_id,
            client_secret=client_secret,
            token_endpoint_auth_method=provider.token_auth_method,
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            timeout=settings.oidc_http_timeout_seconds,
            follow_redirects=False,
            verify=tls_context(),
        ) as client:
            token = await client.fetch_token(
                provider.token_endpoint, code=code, code_verifier=login.code_verifier
            )
    except OAuthError as exc:
        logger.warning("token endpoint of %s refused the code: %s", login.issuer, exc.error)
        raise LoginRefused("token", str(exc.error)) from exc
    except (httpx.HTTPError, ValueError) as exc:
        logger.warning("token endpoint of %s failed: %s", login.issuer, type(exc).__name__)
        raise LoginRefused("provider-unreachable", type(exc).__name__) from exc
    id_token = token.get("id_token")
    if not isinstance(id_token, str) or not id_token:
        raise LoginRefused("token", "no id_token")
    access_token = token.get("access_token")
    return await verify_id_token(
        id_token,
        provider=provider,
        providers=providers,
        client_id=login.client_id,
        nonce=login.nonce,
        access_token=access_token if isinstance(access_token, str) else None,
    )


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


def person_of(claims: dict[str, Any], login: SpentLogin) -> Person:
    """Who signs in, from verified claims: e-mail (verified or of an allowed domain),
    given name, and role (``admin`` when a group is one of the admin groups)."""
    raw = claims.get("email")
    if not isinstance(raw, str) or len(raw) > 320:
        raise LoginRefused("email-missing")
    try:
        email = validate_email(raw, check_deliverability=False).normalized
    except EmailNotValidError as exc:
        raise LoginRefused("email-missing") from exc
    verified = claims.get("email_verified") in (True, "true")
    domain = email.rsplit("@", 1)[1].lower()
    if not verified and domain not in login.allowed_email_domains:
        raise LoginRefused("email-unverified")
    return Person(email=email, given_name=_given_name(claims, email), role=_role(claims, login))


def _group_key(group: str) -> str:
    """Keycloak's group mapper writes full paths (``/questline-admins``) by default."""
    return group.strip().lstrip("/").casefold()


def _role(claims: dict[str, Any], login: SpentLogin) -> Role:
    value = claims.get(login.groups_claim)
    groups = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    mine = {_group_key(g) for g in groups if isinstance(g, str)}
    admin = {_group_key(g) for g in login.admin_groups}
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


async def sign_in(
    session: AsyncSession,
    *,
    login: SpentLogin,
    person: Person,
    settings: Settings,
) -> sessions.Grant:
    """Find or create the member, then start the dashboard session as a sign-in link
    does (and remember that single sign-on started it, for the provider's logout)."""
    found = await find_or_create(
        session, org_id=login.organization_id, email=person.email, given_name=person.given_name
    )
    if found.created:
        await bump(session, login.organization_id)
    subject = found.member.email if len(found.member.email) <= 200 else str(found.member.id)
    grant = await sessions.session_for_caller(
        session,
        settings=settings,
        caller=Caller(subject=subject, role=person.role, org_id=login.organization_id),
        email=found.member.email,
    )
    await _purge_expired(session)
    session.add(
        SsoSession(
            session_hash=grant.row.id_hash,
            organization_id=login.organization_id,
            created_at=grant.row.created_at,
            expires_at=grant.row.expires_at,
        )
    )
    await session.flush()
    logger.info(
        "single sign-on: %s signed in to %s as %s%s",
        found.member.id,
        login.organization_id,
        person.role.value,
        " (new member)" if found.created else "",
    )
    return grant


async def is_sso_session(session: AsyncSession, *, cookie: str) -> uuid.UUID | None:
    """The organization of the SSO session of ``cookie``, or None."""
    row = await session.get(SsoSession, sessions.digest(cookie))
    if row is None or row.expires_at <= utcnow():
        return None
    return row.organization_id
