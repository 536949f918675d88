"""The sign-in flow against a real OpenID provider: success, roles, members, and every
refusal ending on the dashboard's sign-in page with a reason and no session."""

from __future__ import annotations

import base64
import time
import uuid
from dataclasses import replace
from urllib.parse import parse_qs

import httpx
import pytest
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from fastapi import FastAPI
from sqlalchemy import func, select, update

from questline.app import create_app
from questline.auth import sessions
from questline.auth.models import DashboardSession
from questline.config import Settings
from questline.members.models import Member
from questline.sso import sealing as sso_sealing
from questline.sso.models import OidcLoginState, SsoConfiguration
from questline.sso.provider import providers_of
from questline.storage import tenancy
from questline.web.identity import Role
from tests.factories import World
from tests.scim.conftest import directory_for
from tests.scim.support import PATCH_OP
from tests.sso.provider import QUIET, Provider, running_provider
from tests.sso.support import (
    CLIENT_SECRET,
    come_back,
    configure,
    configured,
    query_of,
    refusal,
    sign_in,
    start_login,
)
from tests.support.harness import AppHarness

pytestmark = [pytest.mark.anyio, QUIET]

ADA = {"email": "ada@example.org", "email_verified": True, "given_name": "Ada"}


async def _session_rows(app_state: AppHarness) -> int:
    with tenancy.for_every_organization():
        async with app_state.db.session(write=False) as session:
            return int(
                await session.scalar(select(func.count()).select_from(DashboardSession)) or 0
            )


async def _members(app_state: AppHarness, org_id: uuid.UUID) -> list[Member]:
    with tenancy.acting_for(org_id):
        async with app_state.db.session(write=False) as session:
            rows = await session.scalars(select(Member).where(Member.organization_id == org_id))
            return list(rows)


async def test_the_authorization_request_has_pkce_state_nonce_and_scope(
    client: httpx.AsyncClient, world: World, provider: Provider
) -> None:
    org = world.org()
    config = await configured(org, provider)
    url = await start_login(client, org.id, "/ui/#/teams")
    assert url.startswith(f"{provider.issuer}/oauth2/authorize?")
    query = query_of(url)
    assert query["response_type"] == "code"
    assert query["client_id"] == "questline"
    assert query["redirect_uri"] == config["RedirectUri"]
    assert query["scope"] == "openid email profile"
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43
    assert len(query["state"]) >= 32
    assert len(query["nonce"]) >= 32
    assert query["state"] != query["nonce"]
    cookie = next(c for c in client.cookies.jar if c.name.startswith("questline_oidc_"))
    assert cookie.path == "/auth/oidc/callback"


async def test_a_verified_person_signs_in_and_becomes_a_member(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    org = world.org()
    await configured(org, provider)
    response = await sign_in(client, provider, org.id, "ada", next_path="/ui/#/teams", **ADA)
    assert response.status_code == 303
    assert response.headers["location"] == "/ui/#/teams"
    set_cookie = response.headers.get_list("set-cookie")
    session_cookie = next(c for c in set_cookie if c.startswith(f"{sessions.SESSION_COOKIE}="))
    assert "HttpOnly" in session_cookie
    assert "SameSite=strict" in session_cookie
    # The login cookie is spent with the login.
    assert any(c.startswith("questline_oidc_") and "Max-Age=0" in c for c in set_cookie)

    info = await client.get("/auth/session")
    assert info.status_code == 200, info.text
    body = info.json()
    assert body["Role"] == "member"
    assert body["OrganizationId"] == str(org.id)
    assert body["Email"] == "ada@example.org"
    assert body["CsrfToken"]
    # The session reads the organization's data like a sign-in link's does ...
    assert (await client.get("/team")).status_code == 200
    # ... and a member's session cannot write.
    csrf = {"X-CSRF-Token": body["CsrfToken"]}
    assert (await client.post("/team", json={"name": "T"}, headers=csrf)).status_code == 403

    members = await _members(app_state, org.id)
    assert [(m.email, m.given_name) for m in members] == [("ada@example.org", "Ada")]
    # The provider made the member: the audit log says so.
    log = await org.client.get("/audit", params={"action": "member.created"}, headers=org.admin)
    [entry] = log.json()
    assert (entry["Actor"], entry["ActorRole"], entry["ActorVia"]) == (
        "ada@example.org",
        "member",
        "provider",
    )
    assert entry["TargetId"] == str(members[0].id)


async def test_an_admin_group_makes_an_admin_and_an_existing_member_is_found(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    org = world.org()
    existing = await org.create_member("Grace@Example.org")
    await configured(org, provider, AdminGroups=["questline-admins"])
    claims = {
        "email": "grace@example.org",
        "email_verified": True,
        "name": "Grace Hopper",
        "groups": ["/staff", "/questline-admins"],  # Keycloak's full group paths
    }
    response = await sign_in(client, provider, org.id, "grace", **claims)
    assert refusal(response) is None
    info = (await client.get("/auth/session")).json()
    assert info["Role"] == "admin"
    assert info["TeamIds"] == existing["TeamIds"]
    members = await _members(app_state, org.id)
    assert [str(m.id) for m in members] == [existing["Id"]]  # found, not duplicated
    csrf = {"X-CSRF-Token": info["CsrfToken"]}
    created = await client.post("/team", json={"name": "By SSO"}, headers=csrf)
    assert created.status_code == 201, created.text


async def test_a_custom_groups_claim_as_one_string(
    client: httpx.AsyncClient, world: World, provider: Provider
) -> None:
    org = world.org()
    await configured(org, provider, GroupsClaim="roles", AdminGroups=["Trainers"])
    response = await sign_in(client, provider, org.id, "lin", **ADA, roles="trainers")
    assert refusal(response) is None
    assert (await client.get("/auth/session")).json()["Role"] == "admin"


@pytest.mark.parametrize("domains", [[], ["example.org"]], ids=["no-domains", "its-domain"])
async def test_an_unverified_email_is_refused(
    client: httpx.AsyncClient,
    world: World,
    provider: Provider,
    app_state: AppHarness,
    domains: list[str],
) -> None:
    """Whatever the allowed domains: an address the provider does not vouch for finds no
    member and makes none."""
    org = world.org()
    await configured(org, provider, AllowedEmailDomains=domains)
    for verified in (False, "false", None):
        unverified = {"email": "bob@example.org", "email_verified": verified}
        response = await sign_in(client, provider, org.id, "bob", **unverified)
        assert refusal(response) == "email-unverified"
        assert response.headers["location"] == (
            f"/ui/#/signin?sso-error=email-unverified&org={org.id}"
        )
    assert sessions.SESSION_COOKIE not in client.cookies
    assert await _session_rows(app_state) == 0
    assert await _members(app_state, org.id) == []


@pytest.mark.parametrize("domains", [[], ["example.org"]], ids=["no-domains", "its-domain"])
async def test_an_unverified_email_never_takes_over_an_existing_member(
    client: httpx.AsyncClient,
    world: World,
    provider: Provider,
    app_state: AppHarness,
    domains: list[str],
) -> None:
    """A provider that lets people type any address: another subject claiming Alice's
    address, unverified, does not sign in as Alice."""
    org = world.org()
    alice = await org.create_member("alice@example.org")
    await configured(org, provider, AdminGroups=["staff"], AllowedEmailDomains=domains)
    claims = {"email": "alice@example.org", "email_verified": False, "groups": ["staff"]}
    response = await sign_in(client, provider, org.id, "mallory", **claims)
    assert refusal(response) == "email-unverified"
    assert sessions.SESSION_COOKIE not in client.cookies
    assert (await client.get("/auth/session")).status_code == 401
    assert await _session_rows(app_state) == 0
    assert [str(m.id) for m in await _members(app_state, org.id)] == [alice["Id"]]


async def test_allowed_domains_restrict_who_signs_in(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    """A non-empty AllowedEmailDomains admits verified addresses of those domains only:
    an existing member of another domain is refused as well as a newcomer."""
    org = world.org()
    outsider = await org.create_member("eve@elsewhere.example")
    await configured(org, provider, AllowedEmailDomains=["example.org"])
    existing = {"email": "eve@elsewhere.example", "email_verified": True}
    refused = await sign_in(client, provider, org.id, "eve", **existing)
    assert refusal(refused) == "email-domain"
    assert refused.headers["location"] == f"/ui/#/signin?sso-error=email-domain&org={org.id}"
    newcomer = {"email": "zed@elsewhere.example", "email_verified": True}
    assert refusal(await sign_in(client, provider, org.id, "zed", **newcomer)) == "email-domain"
    # A subdomain is another domain.
    sub = {"email": "sub@mail.example.org", "email_verified": True}
    assert refusal(await sign_in(client, provider, org.id, "sub", **sub)) == "email-domain"
    assert sessions.SESSION_COOKIE not in client.cookies
    assert await _session_rows(app_state) == 0
    assert [str(m.id) for m in await _members(app_state, org.id)] == [outsider["Id"]]

    # The organization's own domain (any case) signs in.
    own = {"email": "Ada@EXAMPLE.org", "email_verified": True}
    assert refusal(await sign_in(client, provider, org.id, "ada", **own)) is None
    assert (await client.get("/auth/session")).json()["Email"] == "Ada@example.org"
    # An empty list admits every verified address.
    client.cookies.clear()
    await configured(org, provider, AllowedEmailDomains=[])
    assert refusal(await sign_in(client, provider, org.id, "eve", **existing)) is None
    assert (await client.get("/auth/session")).json()["Email"] == "eve@elsewhere.example"


async def test_no_usable_email_is_refused(
    client: httpx.AsyncClient, world: World, provider: Provider
) -> None:
    org = world.org()
    await configured(org, provider)
    for claims in ({"email_verified": True}, {"email": "not-an-address", "email_verified": True}):
        response = await sign_in(client, provider, org.id, "nobody", **claims)
        assert refusal(response) == "email-missing"


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"aud": "another-client"}, "audience"),
        ({"aud": ["questline", "another"], "azp": "another"}, "audience"),
        ({"exp": 1_000_000_000, "iat": 999_990_000}, "expired"),
        ({"nonce": "not-this-logins-nonce"}, "nonce"),
        ({"iss": "https://impostor.example.org"}, "issuer"),
    ],
)
async def test_an_id_token_that_does_not_verify_is_refused(
    client: httpx.AsyncClient,
    world: World,
    provider: Provider,
    app_state: AppHarness,
    claims: dict[str, object],
    reason: str,
) -> None:
    """The real provider signs these (claims set on the user override its own)."""
    org = world.org()
    await configured(org, provider)
    response = await sign_in(client, provider, org.id, f"tampered-{reason}", **ADA, **claims)
    assert refusal(response) == reason
    assert sessions.SESSION_COOKIE not in client.cookies
    assert await _session_rows(app_state) == 0


async def test_a_code_from_another_provider_is_refused(
    client: httpx.AsyncClient, world: World, provider: Provider, other_provider: Provider
) -> None:
    """A person sent to another provider's page: its code is not one the configured
    provider issued, so the token endpoint refuses it."""
    org = world.org()
    await configured(org, provider)
    url = await start_login(client, org.id)
    elsewhere = url.replace(provider.issuer, other_provider.issuer)
    other_provider.set_user("mallory", **ADA)
    response = await come_back(client, await other_provider.authorize(elsewhere, "mallory"))
    assert refusal(response) == "token"


async def test_a_replayed_callback_is_refused(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    org = world.org()
    await configured(org, provider)
    provider.set_user("ada", **ADA)
    redirect = await provider.authorize(await start_login(client, org.id), "ada")
    first = await come_back(client, redirect)
    assert refusal(first) is None
    client.cookies.clear()
    replay = await come_back(client, redirect)
    assert refusal(replay) == "state"
    assert sessions.SESSION_COOKIE not in client.cookies
    assert await _session_rows(app_state) == 1


async def test_a_wrong_or_missing_state_is_refused(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    org = world.org()
    await configured(org, provider)
    provider.set_user("ada", **ADA)
    redirect = await provider.authorize(await start_login(client, org.id), "ada")
    code = query_of(redirect)["code"]
    for query in (f"code={code}&state=forged", f"code={code}", "", "state=" + "x" * 1000):
        response = await client.get(f"/auth/oidc/callback?{query}")
        assert refusal(response) == "state", query
    assert await _session_rows(app_state) == 0


async def test_an_expired_state_is_refused(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    org = world.org()
    await configured(org, provider)
    provider.set_user("ada", **ADA)
    redirect = await provider.authorize(await start_login(client, org.id), "ada")
    with tenancy.for_every_organization():
        async with app_state.db.session(write=True) as session:
            await session.execute(
                update(OidcLoginState).values(expires_at=OidcLoginState.created_at)
            )
    assert refusal(await come_back(client, redirect)) == "state"


async def test_a_callback_carried_to_another_browser_is_refused(
    app: FastAPI, world: World, provider: Provider, app_state: AppHarness
) -> None:
    """Login CSRF: an attacker's own callback URL, opened by a victim's browser."""
    org = world.org()
    await configured(org, provider)
    transport = httpx.ASGITransport(app=app)
    async with (
        httpx.AsyncClient(transport=transport, base_url="http://questline.test") as attacker,
        httpx.AsyncClient(transport=transport, base_url="http://questline.test") as victim,
    ):
        provider.set_user("attacker", **ADA)
        redirect = await provider.authorize(await start_login(attacker, org.id), "attacker")
        response = await come_back(victim, redirect)
        assert refusal(response) == "browser"
        assert sessions.SESSION_COOKIE not in victim.cookies
        # The login was spent: the attacker cannot use it either now.
        assert refusal(await come_back(attacker, redirect)) == "state"
    assert await _session_rows(app_state) == 0


async def test_a_provider_error_is_refused(
    client: httpx.AsyncClient, world: World, provider: Provider
) -> None:
    org = world.org()
    await configured(org, provider)
    redirect = await provider.deny(await start_login(client, org.id))
    assert query_of(redirect)["error"] == "access_denied"
    response = await come_back(client, redirect)
    assert refusal(response) == "provider-error"
    # With this login's state, the page also learns the organization (to offer it again).
    url = await start_login(client, org.id)
    with_state = await client.get(
        "/auth/oidc/callback", params={"error": "access_denied", "state": query_of(url)["state"]}
    )
    assert refusal(with_state) == "provider-error"
    assert with_state.headers["location"].endswith(f"&org={org.id}")
    # Even a provider's error without a state ends on the sign-in page.
    bare = await client.get("/auth/oidc/callback?error=server_error")
    assert refusal(bare) == "provider-error"


async def test_a_mismatched_iss_parameter_is_refused(
    client: httpx.AsyncClient, world: World, provider: Provider
) -> None:
    org = world.org()
    await configured(org, provider)
    provider.set_user("ada", **ADA)
    redirect = await provider.authorize(await start_login(client, org.id), "ada")
    response = await come_back(client, redirect + "&iss=https%3A%2F%2Fimpostor.example")
    assert refusal(response) == "issuer"


@pytest.mark.parametrize(
    ("next_path", "landing"),
    [
        ("/ui/#/leaderboard", "/ui/#/leaderboard"),
        ("http://127.0.0.1:8000/ui/#/teams", "/ui/#/teams"),  # the public URL's origin
        ("https://evil.example/ui/", "/ui/"),
        ("//evil.example/ui/", "/ui/"),
        ("/\\evil.example", "/ui/"),
        ("javascript:alert(1)", "/ui/"),
        ("ui/relative", "/ui/"),
        ("/ui/\r\nSet-Cookie: x=1", "/ui/"),
        ("/" + "a" * 3000, "/ui/"),
        (None, "/ui/"),
    ],
)
async def test_next_is_same_origin_only(
    client: httpx.AsyncClient,
    world: World,
    provider: Provider,
    next_path: str | None,
    landing: str,
) -> None:
    org = world.org()
    await configured(org, provider)
    response = await sign_in(client, provider, org.id, "ada", next_path=next_path, **ADA)
    assert response.headers["location"] == landing


async def test_login_for_an_organization_without_sso_goes_to_the_sign_in_page(
    client: httpx.AsyncClient, world: World, provider: Provider
) -> None:
    org = world.org()
    for org_id in (str(org.id), "not-a-uuid", str(uuid.uuid4())):
        response = await client.get(f"/auth/oidc/{org_id}/login")
        assert refusal(response) == "not-configured", org_id
        assert "json" not in response.headers.get("content-type", "")
    assert (await client.get(f"/auth/oidc/{org.id}")).status_code == 404

    await configured(org, provider, Enabled=False)
    assert refusal(await client.get(f"/auth/oidc/{org.id}/login")) == "not-configured"
    assert (await client.get(f"/auth/oidc/{org.id}")).status_code == 404
    await configured(org, provider)
    available = await client.get(f"/auth/oidc/{org.id}")
    assert available.status_code == 200
    assert available.json()["LoginUrl"].endswith(f"/auth/oidc/{org.id}/login")


async def test_disabling_between_login_and_callback_refuses(
    client: httpx.AsyncClient, world: World, provider: Provider
) -> None:
    org = world.org()
    await configured(org, provider)
    provider.set_user("ada", **ADA)
    redirect = await provider.authorize(await start_login(client, org.id), "ada")
    await configured(org, provider, Enabled=False)
    assert refusal(await come_back(client, redirect)) == "not-configured"


async def test_an_unreachable_provider_goes_to_the_sign_in_page(
    client: httpx.AsyncClient, world: World, app: FastAPI
) -> None:
    org = world.org()
    with running_provider() as short_lived:
        await configured(org, short_lived)
    providers_of(app.state).forget(short_lived.issuer)
    response = await client.get(f"/auth/oidc/{org.id}/login")
    assert refusal(response) == "provider-unreachable"


async def test_the_provider_is_fetched_when_saved_and_cached_for_logins(
    client: httpx.AsyncClient, world: World, provider: Provider, app: FastAPI
) -> None:
    org = world.org()
    await configured(org, provider)
    directory = providers_of(app.state)
    fetched = directory.fetches
    for _ in range(3):
        await start_login(client, org.id)
    assert directory.fetches == fetched
    # Past its lifetime the provider is fetched again, once.
    cached = directory.cached(provider.issuer)
    assert cached is not None
    directory.remember(provider.issuer, replace(cached, fetched_at=time.monotonic() - 10**6))
    await start_login(client, org.id)
    await start_login(client, org.id)
    assert directory.fetches == fetched + 1


async def test_a_secret_sealed_under_another_signing_secret_is_refused(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    org = world.org()
    await configured(org, provider)
    app_state.state.signing_secret = lambda: "another-signing-secret-of-48-bytes-000000000000"
    response = await sign_in(client, provider, org.id, "ada", **ADA)
    assert refusal(response) == "misconfigured"


async def _store_sealed(app_state: AppHarness, org_id: uuid.UUID, value: str) -> None:
    with tenancy.acting_for(org_id):
        async with app_state.db.session(write=True) as session:
            await session.execute(
                update(SsoConfiguration)
                .where(SsoConfiguration.organization_id == org_id)
                .values(client_secret_sealed=value)
            )


async def test_a_secret_sealed_the_old_way_still_signs_in(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    """A configuration saved before ``storage.sealing`` holds a Fernet token under a key
    derived from the signing secret alone: it still opens."""
    org = world.org()
    await configured(org, provider)
    key = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"questline sso client secret v1"
    ).derive(app_state.state.signing_secret().encode())
    old = Fernet(base64.urlsafe_b64encode(key)).encrypt(CLIENT_SECRET.encode()).decode()
    assert (
        sso_sealing.unseal(
            old, signing_secret=app_state.state.signing_secret(), organization=org.id
        )
        == CLIENT_SECRET
    )
    await _store_sealed(app_state, org.id, old)
    response = await sign_in(client, provider, org.id, "ada", **ADA)
    assert refusal(response) is None


async def test_a_secret_sealed_under_the_previous_signing_secret_signs_in_while_configured(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    org, other = world.org(), world.org()
    await configured(org, provider)
    await configured(other, provider)
    old = app_state.state.signing_secret()
    app_state.state.signing_secret = lambda: "the-next-signing-secret-of-48-bytes-0000000000000"
    app_state.configure(jwt_previous_secret=old)
    assert refusal(await sign_in(client, provider, org.id, "ada", **ADA)) is None
    # Bound to its organization: another organization's sealed secret does not open here.
    with tenancy.acting_for(other.id):
        async with app_state.db.session(write=False) as session:
            theirs = await session.scalar(
                select(SsoConfiguration.client_secret_sealed).where(
                    SsoConfiguration.organization_id == other.id
                )
            )
    assert theirs is not None
    await _store_sealed(app_state, org.id, theirs)
    response = await sign_in(client, provider, org.id, "grace", **{**ADA, "email": "g@example.org"})
    assert refusal(response) == "misconfigured"


async def test_organizations_are_isolated(
    app: FastAPI, world: World, provider: Provider, app_state: AppHarness
) -> None:
    """The same person at the same provider signs in to each organization through that
    organization's login, as a member of that organization only."""
    first, second = world.org(), world.org()
    await configured(first, provider)
    await configured(second, provider, AdminGroups=["staff"])
    transport = httpx.ASGITransport(app=app)
    claims = {**ADA, "groups": ["staff"]}
    async with httpx.AsyncClient(transport=transport, base_url="http://questline.test") as one:
        assert refusal(await sign_in(one, provider, first.id, "ada", **claims)) is None
        info = (await one.get("/auth/session")).json()
        assert (info["OrganizationId"], info["Role"]) == (str(first.id), "member")
        # The first organization's session reads the first organization only.
        theirs = await second.create_team("Second's team")
        assert (await one.get(f"/team/{theirs['Id']}")).status_code == 404
        assert (await one.get("/organization/sso")).status_code == 403
    async with httpx.AsyncClient(transport=transport, base_url="http://questline.test") as two:
        assert refusal(await sign_in(two, provider, second.id, "ada", **claims)) is None
        info = (await two.get("/auth/session")).json()
        assert (info["OrganizationId"], info["Role"]) == (str(second.id), "admin")
    assert len(await _members(app_state, first.id)) == 1
    assert len(await _members(app_state, second.id)) == 1


async def test_rp_initiated_logout_is_offered_for_sso_sessions_only(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    org = world.org()
    await configured(org, provider)
    assert (await client.get("/auth/oidc/session")).json() == {"EndSessionUrl": None}
    await sign_in(client, provider, org.id, "ada", **ADA)
    offer = (await client.get("/auth/oidc/session")).json()["EndSessionUrl"]
    assert offer.startswith(f"{provider.issuer}/oauth2/end_session?")
    assert query_of(offer) == {
        "client_id": "questline",
        "post_logout_redirect_uri": "http://127.0.0.1:8000/ui/",
    }
    # A sign-in link's session has none.
    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=True) as session:
            code = await sessions.mint_signin_code(
                session, settings=app_state.settings, org_id=org.id, role=Role.ADMIN, subject="cli"
            )
    client.cookies.clear()
    assert (await client.post("/auth/session", json={"Code": code})).status_code == 201
    assert (await client.get("/auth/oidc/session")).json() == {"EndSessionUrl": None}


@pytest.mark.slow
async def test_an_office_behind_one_address_signs_in_60_times_a_minute(
    settings: Settings, world: World, provider: Provider
) -> None:
    """With the rate limits on, one client address starts 70 logins and completes 61."""
    limited = create_app(settings.model_copy(update={"rate_limit_enabled": True}))
    try:
        transport = httpx.ASGITransport(app=limited)
        async with httpx.AsyncClient(transport=transport, base_url="http://questline.test") as c:
            org = world.org()
            body = {"Issuer": provider.issuer, "ClientId": "q", "ClientSecret": "s"}
            put = await c.put("/organization/sso", json=body, headers=org.admin)
            assert put.status_code == 201, put.text
            for _ in range(70):
                await start_login(c, org.id)
            provider.set_user("ada", **ADA)
            for _ in range(61):
                redirect = await provider.authorize(await start_login(c, org.id), "ada")
                assert refusal(await come_back(c, redirect)) is None
    finally:
        await limited.state.questline.db.dispose()


async def test_signing_in_again_ends_the_browsers_previous_session(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    org = world.org()
    await configured(org, provider)
    assert refusal(await sign_in(client, provider, org.id, "ada", **ADA)) is None
    first = client.cookies[sessions.SESSION_COOKIE]
    assert refusal(await sign_in(client, provider, org.id, "ada", **ADA)) is None
    assert client.cookies[sessions.SESSION_COOKIE] != first
    assert await _session_rows(app_state) == 1


async def test_a_member_the_directory_deactivated_is_refused_and_restored_on_reactivation(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    org = world.org()
    await configured(org, provider)
    assert refusal(await sign_in(client, provider, org.id, "ada", **ADA)) is None
    client.cookies.clear()
    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=True) as session:
            await session.execute(
                update(Member).where(Member.organization_id == org.id).values(active=False)
            )
    refused = await sign_in(client, provider, org.id, "ada", **ADA)
    assert refusal(refused) == "deactivated"
    assert sessions.SESSION_COOKIE not in client.cookies
    assert len(await _members(app_state, org.id)) == 1  # no second member made

    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=True) as session:
            await session.execute(
                update(Member).where(Member.organization_id == org.id).values(active=True)
            )
    assert refusal(await sign_in(client, provider, org.id, "ada", **ADA)) is None
    assert (await client.get("/auth/session")).status_code == 200


async def test_a_rate_limited_login_or_callback_goes_to_the_sign_in_page_not_json(
    settings: Settings,
) -> None:
    """The rate limiter's refusal of the browser's routes is a 303 to the sign-in page
    with the reason and when to retry; other routes keep their 429 problem document."""
    tight = {"rate_limit_enabled": True, "rate_limit_reads": "3/hour"}
    limited = create_app(settings.model_copy(update=tight))
    org_id = uuid.uuid4()
    login = f"/auth/oidc/{org_id}/login"
    try:
        transport = httpx.ASGITransport(app=limited)
        async with httpx.AsyncClient(transport=transport, base_url="http://questline.test") as c:
            for _ in range(3):  # allowed (refused for their own reason: no SSO here)
                assert refusal(await c.get(login)) == "not-configured"
            for path, org in ((login, org_id), ("/auth/oidc/callback?code=c&state=s", None)):
                response = await c.get(path)
                assert response.status_code == 303, response.text
                assert refusal(response) == "rate-limited"
                params = parse_qs(response.headers["location"].split("?", 1)[1])
                assert params.get("org") == ([str(org)] if org else None)
                assert response.headers["location"].startswith("/ui/#/signin?")
                assert int(response.headers["Retry-After"]) > 0
                assert response.headers["RateLimit-Remaining"] == "0"
                assert not response.headers.get("content-type", "").startswith(
                    "application/problem+json"
                )
            # An API route (JSON for a script, not a page for a browser) keeps its 429.
            api = await c.get(f"/auth/oidc/{org_id}")
            assert api.status_code == 429
            assert api.headers["content-type"].startswith("application/problem+json")
    finally:
        await limited.state.questline.db.dispose()


async def test_the_stored_secret_never_reaches_another_issuer(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    """End to end: the provider's token endpoint records the client secret it is sent.
    Moving to a second provider without a new secret is refused; with one, the second
    provider is sent that one and never the first's."""
    org = world.org()
    await configured(org, provider)
    assert refusal(await sign_in(client, provider, org.id, "ada", **ADA)) is None
    assert CLIENT_SECRET in provider.secrets_received()
    with running_provider() as second:
        moved = await configure(org, second, ClientSecret=None)
        assert moved.status_code == 422, moved.text
        # Still the first provider: a sign-in goes there, and nothing to the second.
        client.cookies.clear()
        assert refusal(await sign_in(client, provider, org.id, "ada", **ADA)) is None
        second.set_user("ada", **ADA)
        url = await start_login(client, org.id)
        assert url.startswith(f"{provider.issuer}/")
        assert second.token_requests == []

        await configured(org, second, ClientSecret="second-secret-7d2e")
        client.cookies.clear()
        assert refusal(await sign_in(client, second, org.id, "ada", **ADA)) is None
        assert second.secrets_received() == {"second-secret-7d2e"}
        assert CLIENT_SECRET not in second.secrets_received()


async def test_the_directorys_deactivation_refuses_single_sign_on_even_mid_login(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    """The directory (SCIM, through its own API) deactivates a member: a sign-in through
    the provider is refused, also one whose login started before the deactivation, and
    no second member is made; activated again, the member signs in."""
    org = world.org()
    directory = await directory_for(org, world)
    user = await directory.create_user("Ada@Example.org")
    await configured(org, provider)
    provider.set_user("ada", **ADA)
    in_flight = await provider.authorize(await start_login(client, org.id), "ada")

    patch = {
        "schemas": [PATCH_OP],
        "Operations": [{"op": "replace", "path": "active", "value": False}],
    }
    deactivated = await directory.request("PATCH", f"/Users/{user['id']}", patch)
    assert deactivated.status_code == 200, deactivated.text
    assert refusal(await come_back(client, in_flight)) == "deactivated"
    assert refusal(await sign_in(client, provider, org.id, "ada", **ADA)) == "deactivated"
    assert sessions.SESSION_COOKIE not in client.cookies
    assert await _session_rows(app_state) == 0
    assert [str(m.id) for m in await _members(app_state, org.id)] == [user["id"]]

    patch["Operations"][0]["value"] = True
    assert (await directory.request("PATCH", f"/Users/{user['id']}", patch)).status_code == 200
    assert refusal(await sign_in(client, provider, org.id, "ada", **ADA)) is None
    info = (await client.get("/auth/session")).json()
    [member] = await _members(app_state, org.id)
    assert (str(member.id), info["Email"]) == (user["id"], member.email)


async def test_a_login_in_flight_when_the_provider_changes_never_reaches_the_new_one(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    """A login is bound to the configuration it started under: its code (and PKCE
    verifier) come from the first provider and are never sent to the second one the
    organization moved to meanwhile."""
    org = world.org()
    await configured(org, provider)
    provider.set_user("ada", **ADA)
    in_flight = await provider.authorize(await start_login(client, org.id), "ada")
    with running_provider() as second:
        await configured(org, second, ClientSecret="second-secret-7d2e")
        assert refusal(await come_back(client, in_flight)) == "state"
        assert second.token_requests == []
        assert await _session_rows(app_state) == 0
        # A login started now goes to the second provider and signs in there.
        assert refusal(await sign_in(client, second, org.id, "ada", **ADA)) is None
        assert second.secrets_received() == {"second-secret-7d2e"}


async def test_a_directory_managed_organization_signs_in_only_members_its_directory_made(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    """With a live SCIM token the directory decides who is a member: the provider signs
    in the member it provisioned, refuses a person it did not (or deleted), and makes no
    member for them; once the directory's tokens are revoked, the provider makes members
    on first sign-in again."""
    org = world.org()
    directory = await directory_for(org, world)
    await configured(org, provider)
    refused = await sign_in(client, provider, org.id, "ada", **ADA)
    assert refusal(refused) == "not-provisioned"
    assert sessions.SESSION_COOKIE not in client.cookies
    assert await _members(app_state, org.id) == []

    user = await directory.create_user("Ada@Example.org")
    assert refusal(await sign_in(client, provider, org.id, "ada", **ADA)) is None
    assert [str(m.id) for m in await _members(app_state, org.id)] == [user["id"]]

    deleted = await directory.request("DELETE", f"/Users/{user['id']}")
    assert deleted.status_code == 204, deleted.text
    client.cookies.clear()
    assert refusal(await sign_in(client, provider, org.id, "ada", **ADA)) == "not-provisioned"
    assert await _members(app_state, org.id) == []
    assert await _session_rows(app_state) == 0

    listed = await org.client.get("/organization/scim-tokens", headers=org.admin)
    for token in listed.json():
        revoked = await org.client.delete(
            f"/organization/scim-tokens/{token['Id']}", headers=org.admin
        )
        assert revoked.status_code == 204, revoked.text
    assert refusal(await sign_in(client, provider, org.id, "ada", **ADA)) is None
    assert len(await _members(app_state, org.id)) == 1
