"""LTI across organizations: two organizations register the same issuer and client id
(one Canvas developer key shared by every school is the normal case), in both orders
and by a PATCH; an admin of one, holding keys the other never registered, cannot launch
into the other, and each organization's own launches still land in it.

Organization A (the attacker) registers the shared issuer and client id with a key set
of its own (``lti_attacker_keys``' keys); B registers them with the platform's real key
set and its deployment ``42:victim``. A's forged launch names B's deployment."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from questline.auth.models import DashboardSession
from questline.storage import tenancy
from tests.factories import Org, World
from tests.lti.conftest import settings
from tests.lti.support import (
    launch,
    launch_fields,
    post_launch,
    refusal,
    register,
    set_cookies,
    start_login,
    with_cookies,
)
from tests.support.harness import AppHarness
from tests.support.lti_platform import INSTRUCTOR, LTI, LtiPlatform, running_platform

pytestmark = pytest.mark.anyio

__all__ = ["settings"]  # the LTI tests' own fixture: the platforms on loopback

PUBLIC_URL = "http://questline.test"
VICTIM_DEPLOYMENT = "42:victim"
ATTACKER_DEPLOYMENT = "7:attacker"


@pytest.fixture(scope="module")
def lti_shared_platform() -> Iterator[LtiPlatform]:
    """The platform both organizations use (B registers its real key set)."""
    with running_platform() as running:
        running.state.redirect_uri = f"{PUBLIC_URL}/lti/launch"
        yield running


@pytest.fixture(scope="module")
def lti_attacker_keys() -> Iterator[LtiPlatform]:
    """A platform whose key set A registers as its own (and whose issuer A's first
    registration names, before its PATCH onto the shared one)."""
    with running_platform() as running:
        running.state.redirect_uri = f"{PUBLIC_URL}/lti/launch"
        yield running


async def _register_victim(org: Org, shared: LtiPlatform) -> None:
    await register(org, shared, DeploymentIds=[VICTIM_DEPLOYMENT])


async def _register_attacker(org: Org, shared: LtiPlatform, keys: LtiPlatform) -> None:
    await register(org, shared, DeploymentIds=[ATTACKER_DEPLOYMENT], KeySetUrl=f"{keys.base}/jwks")


async def _organizations(
    world: World, shared: LtiPlatform, keys: LtiPlatform, order: str
) -> tuple[Org, Org]:
    attacker, victim = world.org(), world.org()
    if order == "attacker-first":
        await _register_attacker(attacker, shared, keys)
        await _register_victim(victim, shared)
    elif order == "victim-first":
        await _register_victim(victim, shared)
        await _register_attacker(attacker, shared, keys)
    else:  # A's older registration of another platform, PATCHed onto B's issuer
        created = await register(attacker, keys, DeploymentIds=[ATTACKER_DEPLOYMENT])
        await _register_victim(victim, shared)
        patched = await attacker.client.patch(
            f"/lti/platform/{created['Id']}",
            json={
                "Issuer": shared.issuer,
                "ClientId": shared.client_id,
                "AuthLoginUrl": f"{shared.base}/auth",
            },
            headers=attacker.admin,
        )
        assert patched.status_code == 200, patched.text
        assert patched.json()["KeySetUrl"] == f"{keys.base}/jwks"
    return attacker, victim


def _claims(shared: LtiPlatform, deployment: str, email: str) -> dict[str, Any]:
    claims = shared.claims_for(f"sub-{email}", email=email, roles=[INSTRUCTOR])
    claims[LTI + "deployment_id"] = deployment
    return claims


async def _sessions(app_state: AppHarness) -> int:
    with tenancy.for_every_organization():
        async with app_state.db.session(write=False) as session:
            return int(
                await session.scalar(select(func.count()).select_from(DashboardSession)) or 0
            )


async def _signed_into(client: httpx.AsyncClient, answer: httpx.Response) -> str | None:
    me = await client.get("/auth/session", headers=with_cookies(answer))
    return str(me.json()["OrganizationId"]) if me.status_code == 200 else None


ORDERS = ["attacker-first", "victim-first", "patch"]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize(
    "login_names",
    [VICTIM_DEPLOYMENT, None, ATTACKER_DEPLOYMENT],
    ids=["login-names-victim", "login-names-none", "login-names-attacker"],
)
async def test_a_forged_launch_naming_anothers_deployment_is_refused(
    world: World,
    client: httpx.AsyncClient,
    app_state: AppHarness,
    lti_shared_platform: LtiPlatform,
    lti_attacker_keys: LtiPlatform,
    order: str,
    login_names: str | None,
) -> None:
    shared = lti_shared_platform
    attacker, victim = await _organizations(world, shared, lti_attacker_keys, order)
    forged = _claims(shared, VICTIM_DEPLOYMENT, "mallory@attacker.example")
    hint = f"forged-{order}-{login_names}"
    answer = await launch(
        client,
        shared,
        hint,
        forged,
        key=lti_attacker_keys.state.key,  # A's key: the key set A registered verifies it
        deployment_hint=login_names,
    )
    assert answer.status_code in (400, 401, 403), answer.text
    assert refusal(answer) in ("signature", "deployment"), answer.text
    assert "questline_session" not in set_cookies(answer)
    assert await _signed_into(client, answer) is None
    assert await _sessions(app_state) == 0
    for org in (victim, attacker):
        assert (await client.get("/member", headers=org.admin)).json() == []


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("with_hint", [True, False], ids=["deployment-hint", "no-hint"])
async def test_each_organizations_own_launch_lands_in_it(
    world: World,
    client: httpx.AsyncClient,
    lti_shared_platform: LtiPlatform,
    lti_attacker_keys: LtiPlatform,
    order: str,
    with_hint: bool,
) -> None:
    shared = lti_shared_platform
    attacker, victim = await _organizations(world, shared, lti_attacker_keys, order)
    genuine = await launch(
        client,
        shared,
        f"victim-{order}-{with_hint}",
        _claims(shared, VICTIM_DEPLOYMENT, "teacher@victim.example"),
        deployment_hint=VICTIM_DEPLOYMENT if with_hint else None,
    )
    assert genuine.status_code == 303, genuine.text
    assert await _signed_into(client, genuine) == str(victim.id)
    own = await launch(
        client,
        shared,
        f"attacker-{order}-{with_hint}",
        _claims(shared, ATTACKER_DEPLOYMENT, "teacher@attacker.example"),
        key=lti_attacker_keys.state.key,
        deployment_hint=ATTACKER_DEPLOYMENT if with_hint else None,
    )
    assert own.status_code == 303, own.text
    assert await _signed_into(client, own) == str(attacker.id)
    victims = [m["Email"] for m in (await client.get("/member", headers=victim.admin)).json()]
    assert victims == ["teacher@victim.example"]
    attackers = [m["Email"] for m in (await client.get("/member", headers=attacker.admin)).json()]
    assert attackers == ["teacher@attacker.example"]


async def test_a_taken_deployment_cannot_be_registered_by_another_organization(
    world: World, lti_shared_platform: LtiPlatform, lti_attacker_keys: LtiPlatform
) -> None:
    victim, attacker = world.org(), world.org()
    await _register_victim(victim, lti_shared_platform)
    taken = await attacker.client.post(
        "/lti/platform",
        json=lti_shared_platform.registration(
            DeploymentIds=[VICTIM_DEPLOYMENT], KeySetUrl=f"{lti_attacker_keys.base}/jwks"
        ),
        headers=attacker.admin,
    )
    assert taken.status_code == 409, taken.text
    assert str(victim.id) not in taken.text


async def test_a_login_bound_to_one_registration_refuses_anothers_token(
    world: World,
    client: httpx.AsyncClient,
    app_state: AppHarness,
    lti_shared_platform: LtiPlatform,
    lti_attacker_keys: LtiPlatform,
) -> None:
    """B's genuine token (B's deployment, B's keys) posted with a state whose login
    named A's deployment: the login's registration is A's, the token is not A's."""
    shared = lti_shared_platform
    await _organizations(world, shared, lti_attacker_keys, "attacker-first")
    shared.launch_as("bound-victim", _claims(shared, VICTIM_DEPLOYMENT, "t@victim.example"))
    theirs = await launch_fields(client, shared, "bound-victim")
    shared.launch_as(
        "bound-attacker",
        _claims(shared, ATTACKER_DEPLOYMENT, "t@attacker.example"),
        key=lti_attacker_keys.state.key,
    )
    ours = await launch_fields(client, shared, "bound-attacker", deployment_id=ATTACKER_DEPLOYMENT)
    mixed = {"id_token": theirs["id_token"], "state": ours["state"]}
    answer = await post_launch(client, mixed, origin=shared.origin)
    assert refusal(answer) in ("signature", "nonce", "deployment"), answer.text
    assert await _signed_into(client, answer) is None
    assert await _sessions(app_state) == 0


async def test_registrations_that_disagree_on_the_login_url_need_the_deployment_named(
    world: World,
    client: httpx.AsyncClient,
    lti_shared_platform: LtiPlatform,
    lti_attacker_keys: LtiPlatform,
) -> None:
    """A sends its own AuthLoginUrl for the shared issuer and client id: a login that
    names no deployment is refused (it could not say where to authenticate without
    sending B's people to A's page); B's logins that name B's deployment still work."""
    shared = lti_shared_platform
    attacker, victim = world.org(), world.org()
    await _register_victim(victim, shared)
    await register(
        attacker,
        shared,
        DeploymentIds=[ATTACKER_DEPLOYMENT],
        KeySetUrl=f"{lti_attacker_keys.base}/jwks",
        AuthLoginUrl=f"{lti_attacker_keys.base}/auth",
    )
    unnamed = await start_login(client, shared, "disagree-1")
    assert refusal(unnamed) == "unknown-platform", unnamed.text
    named = await start_login(client, shared, "disagree-2", deployment_id=VICTIM_DEPLOYMENT)
    assert named.status_code == 302, named.text
    assert named.headers["location"].startswith(f"{shared.base}/auth?")
    answer = await launch(
        client,
        shared,
        "disagree-3",
        _claims(shared, VICTIM_DEPLOYMENT, "teacher@victim.example"),
        deployment_hint=VICTIM_DEPLOYMENT,
    )
    assert answer.status_code == 303, answer.text
    assert await _signed_into(client, answer) == str(victim.id)
