"""The sign-in flow: authorization code with PKCE (S256), ``state`` and ``nonce``.

1. ``start_login``: a login row (state, nonce, PKCE verifier, where to land) in the
   database, a short-lived cookie that ties it to this browser, and the provider's
   authorization URL.
2. ``spend_login``: the callback's ``state`` spends that row, once (deleted in the
   statement that reads it, in a transaction of its own that commits whatever happens
   next: a replayed callback finds nothing).
3. ``exchange_and_verify``: the code is exchanged at the token endpoint (authlib's
   client, with the client secret and the PKCE verifier), and the ID token verified
   (``claims.verify_id_token``). No database transaction is open while the provider is
   called.
4. ``sign_in``: the e-mail must be verified (and of an allowed domain when the
   organization lists any); the member is found or created, and refused when the
   directory deactivated it; the role follows the groups; the dashboard session starts
   exactly as a sign-in link's does (``auth.sessions``).

Every refusal is a ``LoginRefused`` (``refusals``) with a reason code: the endpoint
sends the browser to the sign-in page with it. The ID token's checks and the rules for
who signs in as what are in ``claims``.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import secrets
import uuid
import warnings
from dataclasses import dataclass
from typing import Any

from authlib.deprecate import AuthlibDeprecationWarning
from authlib.integrations.base_client import OAuthError
from authlib.oauth2.client import OAuth2Client
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from questline.auth import login_states, scim_tokens, sessions
from questline.config import Settings
from questline.members.service import FoundMember, audit_created, find_by_email, find_or_create
from questline.outbound.calls import tls_context
from questline.readmodel.versions import bump
from questline.sso import sealing
from questline.sso.claims import Person, SignInRules, verify_id_token
from questline.sso.models import OidcLoginState, SsoConfiguration, SsoSession
from questline.sso.provider import Provider, ProviderDirectory, ProviderUnusable
from questline.sso.refusals import LoginRefused
from questline.sso.service import get_configuration
from questline.storage.db import utcnow
from questline.storage.purging import delete_expired
from questline.storage.tenancy import finds_the_organization, sweeps_every_organization
from questline.web.errors import Unauthorized
from questline.web.identity import ACTING_CALLER, Caller, Via


@functools.cache
def _token_client() -> tuple[type[Any], type[Exception]]:
    """authlib's httpx client and httpx's error base, imported at the first code
    exchange: httpx brings its command line's rich and pygments, which would cost every
    process's start (a server, each CLI command) about half a second."""
    with warnings.catch_warnings():
        # authlib now prefers httpx's fork "httpx2" and says so on import; the service's
        # HTTP client is httpx, which authlib still supports.
        warnings.simplefilter("ignore", AuthlibDeprecationWarning)
        from authlib.integrations.httpx_client import AsyncOAuth2Client
    import httpx

    return AsyncOAuth2Client, httpx.HTTPError


logger = logging.getLogger("questline.sso")

SCOPE = "openid email profile"
LOGIN_COOKIE_PREFIX = "questline_oidc_"


def login_cookie_name(state_hash: str) -> str:
    """The cookie of one login under way (``auth.login_states``)."""
    return login_states.cookie_name(LOGIN_COOKIE_PREFIX, state_hash)


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
    rules: SignInRules


@sweeps_every_organization
async def _purge_expired(session: AsyncSession) -> None:
    await delete_expired(session, OidcLoginState.expires_at, SsoSession.expires_at)


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
    login = login_states.new_login()
    verifier = secrets.token_urlsafe(64)  # 86 characters: RFC 7636 allows 43 to 128
    now = utcnow()
    lifetime = dt.timedelta(minutes=settings.oidc_login_minutes)
    session.add(
        OidcLoginState(
            state_hash=login.state_hash,
            organization_id=configuration.organization_id,
            browser_hash=login.browser_hash,
            nonce=login.nonce,
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
        provider.authorization_endpoint,
        state=login.state,
        code_verifier=verifier,
        nonce=login.nonce,
    )
    return LoginStart(
        authorization_url=url,
        cookie_name=login_cookie_name(login.state_hash),
        cookie_value=login.browser,
        max_age=int(lifetime.total_seconds()),
    )


@finds_the_organization
async def spend_login(
    session: AsyncSession,
    *,
    state: str,
    cookies: dict[str, str],
) -> SpentLogin:
    """Spend the login of ``state`` (once), checked against the browser's cookie."""
    state_hash = login_states.state_hash_of(state)
    if state_hash is None:
        raise LoginRefused("state")
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
                OidcLoginState.created_at,
                OidcLoginState.expires_at,
            )
        )
    ).one_or_none()
    if spent is None or spent.expires_at <= utcnow():
        raise LoginRefused("state")
    if not login_states.same_browser(
        cookies, prefix=LOGIN_COOKIE_PREFIX, state_hash=state_hash, browser_hash=spent.browser_hash
    ):
        raise LoginRefused("browser")
    configuration = usable(await get_configuration(session, org_id=spent.organization_id))
    if configuration.updated_at > spent.created_at:
        # The login went to the provider and client of the configuration it started
        # under; saved since, the configuration may name another provider, which must
        # not be sent this login's code and PKCE verifier. The person starts again.
        raise LoginRefused("state", "the configuration changed since the login started")
    return SpentLogin(
        organization_id=spent.organization_id,
        nonce=spent.nonce,
        code_verifier=spent.code_verifier,
        next_path=spent.next_path,
        issuer=configuration.issuer,
        client_id=configuration.client_id,
        client_secret_sealed=configuration.client_secret_sealed,
        rules=SignInRules(
            groups_claim=configuration.groups_claim,
            admin_groups=list(configuration.admin_groups),
            allowed_email_domains=list(configuration.allowed_email_domains),
        ),
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
        client_secret = sealing.unseal(
            login.client_secret_sealed,
            signing_secret=signing_secret,
            organization=login.organization_id,
            previous_signing_secret=settings.jwt_previous_secret,
        )
    except sealing.UnreadableSecret as exc:
        logger.error("single sign-on of %s: %s", login.organization_id, exc)
        raise LoginRefused("misconfigured") from exc
    oauth_client, http_error = _token_client()
    try:
        async with oauth_client(
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
    except (http_error, ValueError) as exc:
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


async def sign_in(
    session: AsyncSession,
    *,
    login: SpentLogin,
    person: Person,
    settings: Settings,
    previous_cookie: str | None,
) -> sessions.Grant:
    """Find or create the member, then start the dashboard session as a sign-in link
    does (and remember that single sign-on started it, for the provider's logout)."""
    try:  # the directory's word wins over the provider's: no session, and no new member
        await sessions.refuse_deactivated(session, org_id=login.organization_id, email=person.email)
    except Unauthorized as exc:
        raise LoginRefused("deactivated") from exc
    found = await _member_for(session, org_id=login.organization_id, person=person)
    subject = found.member.email if len(found.member.email) <= 200 else str(found.member.id)
    if found.created:
        # The provider made this member: the audit log names the person, via the provider.
        session.info[ACTING_CALLER] = Caller(
            subject=subject, role=person.role, org_id=login.organization_id, via=Via.PROVIDER
        )
        await audit_created(session, found.member)
        await bump(session, login.organization_id)
    if previous_cookie:  # this browser's earlier session (maybe of another organization)
        await sessions.end_session(session, previous_cookie)
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


async def _member_for(session: AsyncSession, *, org_id: uuid.UUID, person: Person) -> FoundMember:
    """The member the provider vouches for, made on first sign-in unless a directory
    provisions the organization's members (then only the directory makes them)."""
    if not await scim_tokens.directory_manages(session, org_id=org_id):
        return await find_or_create(
            session, org_id=org_id, email=person.email, given_name=person.given_name
        )
    member = await find_by_email(session, org_id=org_id, email=person.email)
    if member is None:
        raise LoginRefused("not-provisioned")
    return FoundMember(member=member, created=False)


@finds_the_organization
async def is_sso_session(session: AsyncSession, *, cookie: str) -> uuid.UUID | None:
    """The organization of the SSO session of ``cookie``, or None."""
    row = await session.get(SsoSession, sessions.digest(cookie))
    if row is None or row.expires_at <= utcnow():
        return None
    return row.organization_id
