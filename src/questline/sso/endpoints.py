"""Single sign-on routes.

* ``/organization/sso``: an admin configures the organization's OpenID provider.
* ``/auth/oidc/…``: the browser's way through the provider. These answer a browser, so
  a refusal is never a JSON error: it is a ``303`` to the dashboard's sign-in page with a
  reason code (``#/signin?sso-error=<code>``) that the page turns into a message. Not a
  ``TransactionalRoute``: nobody is signed in yet, and no transaction stays open while
  the provider is called. They accept query parameters they do not name (providers add
  their own, e.g. Keycloak's ``session_state``).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from authlib.common.urls import add_params_to_uri
from fastapi import APIRouter, Query, Request, Response, status
from fastapi.responses import RedirectResponse

from questline.auth import sessions
from questline.sso import claims, flow, schemas, service
from questline.sso.provider import Provider, ProviderUnusable, providers_of
from questline.sso.refusals import LoginRefused, printable
from questline.storage import tenancy
from questline.web.access import AdminOf
from questline.web.errors import PublicUrlRequired, not_found
from questline.web.openapi import problem_responses
from questline.web.routing import SessionDep, TransactionalRoute, url_of
from questline.web.state import app_state

logger = logging.getLogger("questline.sso")

router = APIRouter(
    prefix="/organization/sso", tags=["single sign-on"], route_class=TransactionalRoute
)
browser_router = APIRouter(prefix="/auth/oidc", tags=["single sign-on"])

DASHBOARD = "/ui/"
MAX_NEXT_LENGTH = 2048


def _urls(request: Request, org_id: uuid.UUID) -> tuple[str, str]:
    """The login URL of the organization and the redirect URI of every organization."""
    _require_public_url(request)
    return url_of(request, "oidc_login", organization_id=str(org_id)), _callback(request)


def _callback(request: Request) -> str:
    """The redirect URI: absolute, on ``QUESTLINE_PUBLIC_URL``."""
    _require_public_url(request)
    return url_of(request, "oidc_callback")


def _require_public_url(request: Request) -> None:
    """The provider sends the browser back to an absolute redirect URI registered with
    it: one on ``QUESTLINE_PUBLIC_URL``, never one guessed from a request's ``Host``."""
    if app_state(request).settings.public_url is None:
        raise PublicUrlRequired(
            "Single sign-on gives the provider this service's callback address: "
            "set QUESTLINE_PUBLIC_URL."
        )


async def _cached_or_fetched(request: Request, issuer: str) -> Provider | None:
    try:
        return await providers_of(request.app.state).provider(issuer)
    except ProviderUnusable:
        return None


# --- the organization's configuration (admins) ---------------------------------------


@router.get(
    "",
    response_model=schemas.SsoConfiguration,
    summary="The organization's single sign-on",
    responses=problem_responses(401, 403, 404),
)
async def get_sso(
    request: Request, tenant: AdminOf, session: SessionDep
) -> schemas.SsoConfiguration:
    """The configuration without its client secret (`ClientSecretSet` says one is
    stored), with the `RedirectUri` to register at the provider and the `LoginUrl`."""
    row = await service.require_configuration(session, org_id=tenant.org_id)
    login, callback = _urls(request, tenant.org_id)
    provider = await _cached_or_fetched(request, row.issuer)
    return service.to_schema(row, provider=provider, login_url=login, redirect_uri=callback)


@router.put(
    "",
    response_model=schemas.SsoConfiguration,
    summary="Configure single sign-on",
    responses={
        201: {"description": "Configured for the first time.", "model": schemas.SsoConfiguration},
        **problem_responses(400, 401, 403, 413, 415, 422),
    },
)
async def put_sso(
    request: Request,
    response: Response,
    tenant: AdminOf,
    session: SessionDep,
    data: schemas.SsoConfigurationPut,
) -> schemas.SsoConfiguration:
    """Create or replace the organization's OpenID Connect provider. The issuer's
    discovery document (`<Issuer>/.well-known/openid-configuration`) and keys are
    fetched now: 422 says why when they cannot be. The issuer must be https (unless the
    server sets `QUESTLINE_OIDC_ALLOW_HTTP=true`). `ClientSecret` is stored encrypted and
    never returned; leave it out to keep the stored one, except when `Issuer` or
    `ClientId` change: the stored secret is never sent to another provider or client,
    so such a change without a new `ClientSecret` is 422 naming `ClientSecret`."""
    _require_public_url(request)  # before the provider is fetched or anything is saved
    state = app_state(request)
    saved = await service.save_configuration(
        session,
        org_id=tenant.org_id,
        data=data,
        providers=providers_of(request.app.state),
        signing_secret=state.signing_secret(),
    )
    login, callback = _urls(request, tenant.org_id)
    if saved.created:
        response.status_code = status.HTTP_201_CREATED
        response.headers["Location"] = url_of(request, "get_sso")
    return service.to_schema(
        saved.configuration, provider=saved.provider, login_url=login, redirect_uri=callback
    )


@router.delete(
    "",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Remove single sign-on",
    responses=problem_responses(401, 403, 404),
)
async def delete_sso(tenant: AdminOf, session: SessionDep) -> Response:
    """Remove the configuration: logins through the provider stop at once (sessions
    already started run until they expire or their people sign out)."""
    await service.delete_configuration(session, org_id=tenant.org_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


# --- the browser's way through the provider ------------------------------------------

_REDIRECT = {"description": "To the dashboard's sign-in page with `sso-error=<code>`."}


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def safe_next(value: str | None, *, public_url: str | None) -> str:
    """Where to land after signing in: a path of this service, else the dashboard. An
    absolute URL counts only on the service's own origin (no open redirect)."""
    if not value or len(value) > MAX_NEXT_LENGTH:
        return DASHBOARD
    if any(ord(c) < 0x20 or ord(c) == 0x7F or c == "\\" for c in value):
        return DASHBOARD
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        if public_url is None or _origin(value) != _origin(public_url):
            return DASHBOARD
        value = urlunsplit(("", "", parts.path or "/", parts.query, parts.fragment))
    if not value.startswith("/") or value.startswith("//"):
        return DASHBOARD
    return value


def signin_page(reason: str, org_id: uuid.UUID | None = None) -> str:
    query = {"sso-error": reason} | ({"org": str(org_id)} if org_id else {})
    return f"{DASHBOARD}#/signin?{urlencode(query)}"


def _see_other(location: str) -> RedirectResponse:
    return RedirectResponse(
        location,
        status_code=status.HTTP_303_SEE_OTHER,
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )


def _refused(refusal: LoginRefused, org_id: uuid.UUID | None, request: Request) -> RedirectResponse:
    logger.info("single sign-on refused (%s): %s", refusal.reason, refusal)
    response = _see_other(signin_page(refusal.reason, org_id))
    _clear_login_cookies(response, request)
    return response


def _clear_login_cookies(response: Response, request: Request) -> None:
    for name in request.cookies:
        if name.startswith(flow.LOGIN_COOKIE_PREFIX):
            response.delete_cookie(name, path=CALLBACK_PATH, httponly=True, samesite="lax")


CALLBACK_PATH = "/auth/oidc/callback"
LOGIN_PATH = re.compile(r"/auth/oidc/(?P<organization>[^/]+)/login")


def rate_limited(request: Request, headers: Mapping[str, str]) -> Response | None:
    """The rate limiter's refusal of the login or the callback (``web.ratelimit``'s
    ``BrowserRefusal``): a browser is there, so a ``303`` to the sign-in page with
    ``sso-error=rate-limited`` and the ``Retry-After`` the page's message is about, not a
    JSON 429. Other routes: ``None`` (the usual problem document)."""
    if request.method not in ("GET", "HEAD"):
        return None
    path = request.scope["path"]
    org_id: uuid.UUID | None = None
    if (login := LOGIN_PATH.fullmatch(path)) is not None:
        try:
            org_id = uuid.UUID(login["organization"])
        except ValueError:
            org_id = None
    elif path != CALLBACK_PATH:
        return None
    response = _refused(LoginRefused("rate-limited", path), org_id, request)
    response.headers.update(headers)
    return response


@browser_router.get(
    "/callback",
    name="oidc_callback",
    status_code=status.HTTP_303_SEE_OTHER,
    summary="Where the provider sends the browser back",
    response_class=RedirectResponse,
    responses={303: {"description": "Signed in: to `next`; refused: to the sign-in page."}},
)
async def oidc_callback(
    request: Request,
    code: Annotated[str | None, Query(description="The authorization code.")] = None,
    state: Annotated[str | None, Query(description="The login's `state`.")] = None,
    error: Annotated[str | None, Query(description="The provider's error, if any.")] = None,
    iss: Annotated[
        str | None,
        Query(description="The issuer (RFC 9207), checked when sent."),
    ] = None,
) -> Response:
    """Spend the login's `state` (once), exchange the code, verify the ID token, find or
    create the member by e-mail, start the dashboard session (the same cookie as a
    sign-in link) and `303` to `next`. Every failure is a `303` to the dashboard's
    sign-in page with `sso-error=<code>` (docs/identity.md lists them), with no session."""
    app = app_state(request)
    org_id: uuid.UUID | None = None
    try:
        refusal: LoginRefused | None = None
        async with app.db.session(write=True) as session:
            try:
                login = await flow.spend_login(
                    session, state=state or "", cookies=dict(request.cookies)
                )
            except LoginRefused as exc:
                refusal = exc  # raised after the commit: a spent state stays spent
        if refusal is None:
            org_id = login.organization_id
        if error is not None:
            raise LoginRefused("provider-error", printable(error))
        if refusal is not None:
            raise refusal
        if iss is not None and iss.rstrip("/") != login.issuer.rstrip("/"):
            raise LoginRefused("issuer", "the callback's iss parameter")
        if not code:
            raise LoginRefused("provider-error", "no code")
        verified = await flow.exchange_and_verify(
            login,
            code=code,
            providers=providers_of(request.app.state),
            redirect_uri=_callback(request),
            settings=app.settings,
            signing_secret=app.signing_secret(),
        )
        person = claims.person_of(verified, login.rules)
        # The provider the login's organization configured verified the person: act
        # for that organization (row-level security).
        with tenancy.acting_for(login.organization_id):
            async with app.db.session(write=True) as session:
                grant = await flow.sign_in(
                    session,
                    login=login,
                    person=person,
                    settings=app.settings,
                    previous_cookie=request.cookies.get(sessions.SESSION_COOKIE),
                )
    except LoginRefused as refusal_:
        return _refused(refusal_, org_id, request)
    response = _see_other(safe_next(login.next_path, public_url=app.settings.public_url))
    _clear_login_cookies(response, request)
    sessions.set_cookie(response, request, app.settings, grant)
    return response


@browser_router.get(
    "/session",
    response_model=schemas.ProviderLogout,
    summary="The provider's logout for this session",
    responses=problem_responses(),
)
async def oidc_session(request: Request) -> schemas.ProviderLogout:
    """For the dashboard's sign-out: where to end the session at the provider too
    (RP-initiated logout), when single sign-on started this session and the provider
    publishes `end_session_endpoint`; else `EndSessionUrl: null`."""
    app = app_state(request)
    cookie = request.cookies.get(sessions.SESSION_COOKIE)
    if not cookie:
        return schemas.ProviderLogout(end_session_url=None)
    async with app.db.session(write=False) as session:
        org_id = await flow.is_sso_session(session, cookie=cookie)
        if org_id is not None:
            await tenancy.act_for(session, org_id)  # the session cookie's organization
        row = None if org_id is None else await service.get_configuration(session, org_id=org_id)
    if row is None:
        return schemas.ProviderLogout(end_session_url=None)
    provider = await _cached_or_fetched(request, row.issuer)
    if provider is None or provider.end_session_endpoint is None:
        return schemas.ProviderLogout(end_session_url=None)
    params = [("client_id", row.client_id)]
    if app.settings.public_url is not None:  # the provider needs an absolute address
        params.append(("post_logout_redirect_uri", app.settings.public_url + DASHBOARD))
    url = add_params_to_uri(provider.end_session_endpoint, params)
    return schemas.ProviderLogout(end_session_url=url)


@browser_router.get(
    "/{organization_id}",
    response_model=schemas.SsoAvailability,
    summary="Whether an organization signs in through its provider",
    responses=problem_responses(404),
)
async def oidc_availability(request: Request, organization_id: str) -> Any:
    """For the sign-in page: the organization's `LoginUrl` when it has single sign-on
    enabled; 404 otherwise (also for an organization that does not exist)."""
    try:
        org_id = uuid.UUID(organization_id)
    except ValueError:
        raise not_found("single sign-on for this organization") from None
    app = app_state(request)
    # The address names the organization; what it answers is public (row-level security).
    with tenancy.acting_for(org_id):
        async with app.db.session(write=False) as session:
            row = await service.get_configuration(session, org_id=org_id)
    if row is None or not row.enabled:
        raise not_found("single sign-on for this organization")
    login, _ = _urls(request, org_id)
    return schemas.SsoAvailability(organization_id=org_id, login_url=login)


@browser_router.get(
    "/{organization_id}/login",
    name="oidc_login",
    status_code=status.HTTP_302_FOUND,
    summary="Sign in with the organization's provider",
    response_class=RedirectResponse,
    responses={
        302: {"description": "To the provider's authorization endpoint."},
        303: _REDIRECT,
    },
)
async def oidc_login(
    request: Request,
    organization_id: str,
    next: Annotated[
        str | None,
        Query(description="Where to land once signed in: a path of this service (`/ui/…`)."),
    ] = None,
) -> Response:
    """`302` to the provider's authorization endpoint: authorization code with PKCE
    (S256), `state`, `nonce`, `scope=openid email profile`. A short-lived cookie ties
    the login to this browser. An organization without single sign-on, or a provider
    that cannot be reached, is a `303` to the sign-in page with the reason."""
    app = app_state(request)
    try:
        org_id = uuid.UUID(organization_id)
    except ValueError:
        return _refused(LoginRefused("not-configured", "not an organization id"), None, request)
    if app.settings.public_url is None:
        return _refused(LoginRefused("not-configured", "QUESTLINE_PUBLIC_URL"), None, request)
    target = safe_next(next, public_url=app.settings.public_url)
    try:
        # The address names the organization whose provider the login starts at: its
        # configuration is read and its login state written for it (row-level security).
        with tenancy.acting_for(org_id):
            async with app.db.session(write=False) as session:
                configuration = flow.usable(await service.get_configuration(session, org_id=org_id))
            provider = await flow.provider_for(
                providers_of(request.app.state), configuration.issuer
            )
            async with app.db.session(write=True) as session:
                start = await flow.start_login(
                    session,
                    configuration=configuration,
                    provider=provider,
                    next_path=target,
                    redirect_uri=_callback(request),
                    settings=app.settings,
                )
    except LoginRefused as refusal:
        return _refused(refusal, org_id, request)
    response = RedirectResponse(
        start.authorization_url,
        status_code=status.HTTP_302_FOUND,
        headers={"Cache-Control": "no-store"},
    )
    response.set_cookie(
        start.cookie_name,
        start.cookie_value,
        max_age=start.max_age,
        path=CALLBACK_PATH,
        secure=sessions.is_https(request, app.settings),
        httponly=True,
        # Lax, not Strict: the provider's redirect back is a cross-site navigation.
        samesite="lax",
    )
    return response
