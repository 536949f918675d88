"""Single sign-on across organizations: two organizations register the SAME issuer and
client id (in both orders), and the same e-mail is a member of both. A login started
for one organization signs in to that one only, whatever state, code or cookie of the
other's login it is mixed with; neither configuration touches the other.

Runs against the real OpenID provider of ``tests/sso/provider.py``; the fixtures that
configure the service for it are this module's own (``sso_``-prefixed where they could
clash with another area's)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from questline.auth import sessions
from questline.auth.models import DashboardSession
from questline.members.models import Member
from questline.sso.models import SsoConfiguration
from questline.storage import tenancy
from tests.factories import Org, World
from tests.sso.conftest import settings
from tests.sso.provider import QUIET, Provider, running_provider
from tests.sso.support import come_back, configured, query_of, refusal, sign_in, start_login
from tests.support.harness import AppHarness

pytestmark = [pytest.mark.anyio, QUIET]

__all__ = ["settings"]  # the single sign-on tests' own fixture: the provider on loopback

ALICE = {"email": "alice@example.org", "email_verified": True, "given_name": "Alice"}
SECRETS = {"A": "secret-of-a-5e1c", "B": "secret-of-b-8f2d"}


@pytest.fixture(scope="module")
def sso_provider() -> Iterator[Provider]:
    with running_provider() as running:
        yield running


@pytest.fixture
async def sso_browsers(app: FastAPI) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    """Two browsers (cookie jars) on the same service."""
    transport = httpx.ASGITransport(app=app)
    async with (
        httpx.AsyncClient(transport=transport, base_url="http://questline.test") as one,
        httpx.AsyncClient(transport=transport, base_url="http://questline.test") as two,
    ):
        yield one, two


async def _twins(world: World, provider: Provider, first: str) -> tuple[Org, Org, dict[str, str]]:
    """Organizations A and B, each with a member alice@example.org in a team of its own,
    both configured with the same issuer and client id (``first`` configures first).
    A makes its staff admins and admits only example.org; B neither."""
    a, b = world.org(), world.org()
    teams = {"A": await a.create_team("A's team"), "B": await b.create_team("B's team")}
    for org, name in ((a, "A"), (b, "B")):
        added = await org.add_member(teams[name]["Id"], email="alice@example.org")
        assert added.status_code == 201, added.text
    settings = {
        "A": {"AdminGroups": ["staff"], "AllowedEmailDomains": ["example.org"]},
        "B": {"AdminGroups": []},
    }
    for name in (first, "B" if first == "A" else "A"):
        org = a if name == "A" else b
        await configured(org, provider, ClientSecret=SECRETS[name], **settings[name])
    return a, b, {"A": teams["A"]["Id"], "B": teams["B"]["Id"]}


async def _sessions_of(app_state: AppHarness, org_id: uuid.UUID) -> int:
    with tenancy.acting_for(org_id):
        async with app_state.db.session(write=False) as session:
            query = select(func.count()).select_from(DashboardSession)
            query = query.where(DashboardSession.organization_id == org_id)
            return int(await session.scalar(query) or 0)


async def _members_of(app_state: AppHarness, org_id: uuid.UUID) -> list[str]:
    with tenancy.acting_for(org_id):
        async with app_state.db.session(write=False) as session:
            rows = await session.scalars(
                select(Member.email).where(Member.organization_id == org_id)
            )
            return sorted(rows)


ORDERS = pytest.mark.parametrize("first", ["A", "B"], ids=["A-first", "B-first"])


@ORDERS
async def test_a_login_started_for_one_organization_signs_in_to_that_one_only(
    world: World,
    sso_provider: Provider,
    sso_browsers: tuple[httpx.AsyncClient, httpx.AsyncClient],
    app_state: AppHarness,
    first: str,
) -> None:
    a, b, teams = await _twins(world, sso_provider, first)
    one, two = sso_browsers
    claims = {**ALICE, "groups": ["staff"]}

    assert refusal(await sign_in(one, sso_provider, a.id, "alice", **claims)) is None
    info = (await one.get("/auth/session")).json()
    assert (info["OrganizationId"], info["Role"]) == (str(a.id), "admin")  # A's rules
    assert info["TeamIds"] == [teams["A"]]
    # A's client secret went to the token endpoint for A's login, not B's.
    assert sso_provider.token_requests[-1].client_secret == SECRETS["A"]
    assert (await one.get(f"/team/{teams['A']}")).status_code == 200
    assert (await one.get(f"/team/{teams['B']}")).status_code == 404
    assert await _sessions_of(app_state, b.id) == 0

    assert refusal(await sign_in(two, sso_provider, b.id, "alice", **claims)) is None
    info = (await two.get("/auth/session")).json()
    assert (info["OrganizationId"], info["Role"]) == (str(b.id), "member")  # B's rules
    assert info["TeamIds"] == [teams["B"]]
    assert sso_provider.token_requests[-1].client_secret == SECRETS["B"]
    assert (await two.get(f"/team/{teams['A']}")).status_code == 404
    # Each organization still has its one Alice: nobody was made in the other.
    assert await _members_of(app_state, a.id) == ["alice@example.org"]
    assert await _members_of(app_state, b.id) == ["alice@example.org"]
    assert await _sessions_of(app_state, a.id) == 1
    assert await _sessions_of(app_state, b.id) == 1


@ORDERS
@pytest.mark.parametrize("code_of", ["A", "B"])
async def test_a_code_of_one_organizations_login_never_completes_the_others(
    world: World,
    sso_provider: Provider,
    sso_browsers: tuple[httpx.AsyncClient, httpx.AsyncClient],
    app_state: AppHarness,
    first: str,
    code_of: str,
) -> None:
    """One browser starts a login for each organization; the provider's code for one
    login comes back with the other login's state (the issuer and client id are the
    same, so the code is one the token endpoint knows): PKCE and the nonce bind the
    code to its own login, and no session starts anywhere."""
    a, b, _ = await _twins(world, sso_provider, first)
    browser, _ = sso_browsers
    sso_provider.set_user("alice", **ALICE)
    urls = {"A": await start_login(browser, a.id), "B": await start_login(browser, b.id)}
    redirect = await sso_provider.authorize(urls[code_of], "alice")
    other = "B" if code_of == "A" else "A"
    code = query_of(redirect)["code"]
    state = query_of(urls[other])["state"]
    crossed = await browser.get("/auth/oidc/callback", params={"code": code, "state": state})
    assert refusal(crossed) in ("token", "nonce")
    assert sessions.SESSION_COOKIE not in browser.cookies
    assert await _sessions_of(app_state, a.id) == 0
    assert await _sessions_of(app_state, b.id) == 0
    # The other login was spent by the attempt: its state does not work again.
    replay = await browser.get("/auth/oidc/callback", params={"code": code, "state": state})
    assert refusal(replay) == "state"


@ORDERS
async def test_a_state_of_one_organization_carried_to_another_browser_is_refused(
    world: World,
    sso_provider: Provider,
    sso_browsers: tuple[httpx.AsyncClient, httpx.AsyncClient],
    app_state: AppHarness,
    first: str,
) -> None:
    """An attacker's finished authorization for A, opened by a browser that has a login
    of its own under way for B: the callback belongs to A's login and its cookie, which
    that browser does not hold."""
    a, b, _ = await _twins(world, sso_provider, first)
    attacker, victim = sso_browsers
    sso_provider.set_user("alice", **ALICE)
    await start_login(victim, b.id)  # the victim's own login cookie, for B
    redirect = await sso_provider.authorize(await start_login(attacker, a.id), "alice")
    assert refusal(await come_back(victim, redirect)) == "browser"
    assert sessions.SESSION_COOKIE not in victim.cookies
    assert await _sessions_of(app_state, a.id) == 0
    assert await _sessions_of(app_state, b.id) == 0


@ORDERS
async def test_each_organizations_rules_apply_to_its_own_logins(
    world: World,
    sso_provider: Provider,
    sso_browsers: tuple[httpx.AsyncClient, httpx.AsyncClient],
    app_state: AppHarness,
    first: str,
) -> None:
    """A admits example.org only; B admits any verified address. The same outsider is
    refused by A and admitted by B; disabling or removing B leaves A's logins alone."""
    a, b, _ = await _twins(world, sso_provider, first)
    one, two = sso_browsers
    outsider = {"email": "eve@elsewhere.example", "email_verified": True}
    assert refusal(await sign_in(one, sso_provider, a.id, "eve", **outsider)) == "email-domain"
    assert refusal(await sign_in(two, sso_provider, b.id, "eve", **outsider)) is None
    assert "eve@elsewhere.example" not in await _members_of(app_state, a.id)
    assert "eve@elsewhere.example" in await _members_of(app_state, b.id)

    await configured(b, sso_provider, ClientSecret=None, Enabled=False)
    one.cookies.clear()
    assert refusal(await sign_in(one, sso_provider, a.id, "alice", **ALICE)) is None
    assert (await b.client.delete("/organization/sso", headers=b.admin)).status_code == 204
    one.cookies.clear()
    assert refusal(await sign_in(one, sso_provider, a.id, "alice", **ALICE)) is None
    assert (await one.get("/auth/session")).json()["OrganizationId"] == str(a.id)


@ORDERS
async def test_one_organizations_configuration_never_changes_the_others(
    world: World, sso_provider: Provider, app_state: AppHarness, first: str
) -> None:
    a, b, _ = await _twins(world, sso_provider, first)

    async def stored() -> dict[uuid.UUID, tuple[str, str, str, list[str]]]:
        with tenancy.for_every_organization():
            async with app_state.db.session(write=False) as session:
                rows = await session.scalars(select(SsoConfiguration))
                return {
                    r.organization_id: (
                        r.issuer,
                        r.client_id,
                        r.client_secret_sealed,
                        r.admin_groups,
                    )
                    for r in rows
                    if r.organization_id in (a.id, b.id)
                }

    before = await stored()
    assert before[a.id][2] != before[b.id][2]  # each organization's own sealed secret
    changed = await configured(b, sso_provider, ClientSecret="b-rotated-1a9e", AdminGroups=["x"])
    assert changed["AdminGroups"] == ["x"]
    after = await stored()
    assert after[a.id] == before[a.id]
    shown = (await a.client.get("/organization/sso", headers=a.admin)).json()
    assert shown["AdminGroups"] == ["staff"]
    # B's audit log has B's change; A's has none of it.
    for org, count in ((a, 0), (b, 1)):
        log = await org.client.get("/audit", params={"action": "sso.changed"}, headers=org.admin)
        assert len(log.json()) == count
