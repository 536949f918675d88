"""Launches from a real platform on loopback: a good one signs in inside the platform's
iframe; every forged, replayed or misdirected one is refused with a page and no session."""

from __future__ import annotations

import socket
import time
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select, update

from questline.auth.models import DashboardSession
from questline.members.models import Member
from questline.storage import tenancy
from tests.factories import Org, World
from tests.lti.support import (
    BROWSER,
    authenticate,
    launch,
    launch_fields,
    login_cookie,
    post_launch,
    refusal,
    register,
    set_cookies,
    start_login,
    state_of,
    with_cookies,
)
from tests.support.harness import AppHarness
from tests.support.lti_platform import INSTRUCTOR, LtiPlatform

pytestmark = pytest.mark.anyio


async def _sessions(app_state: AppHarness) -> int:
    with tenancy.for_every_organization():
        async with app_state.db.session(write=False) as session:
            return int(
                await session.scalar(select(func.count()).select_from(DashboardSession)) or 0
            )


async def _registered(world: World, platform: LtiPlatform) -> Org:
    org = world.org()
    await register(org, platform)
    return org


async def test_a_learner_launch_signs_in_inside_the_platforms_frame(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform, app_state: AppHarness
) -> None:
    org = await _registered(world, platform)
    claims = platform.claims_for("learner-1", email="Ada@Example.org")
    answer = await launch(client, platform, "hint-learner", claims)
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/ui/#/leaderboard"
    assert f"frame-ancestors {platform.origin}" in answer.headers["content-security-policy"]
    assert "x-frame-options" not in answer.headers
    cookies = set_cookies(answer)
    session_cookie = cookies["questline_session"]
    for attribute in ("HttpOnly", "Secure", "SameSite=none", "Partitioned", "Path=/"):
        assert attribute.lower() in session_cookie.lower(), session_cookie
    # The session is the dashboard's: a member of the organization, by its e-mail.
    me = await client.get("/auth/session", headers=with_cookies(answer))
    assert me.status_code == 200, me.text
    assert me.json()["Role"] == "member"
    assert me.json()["OrganizationId"] == str(org.id)
    assert me.json()["Email"].lower() == "ada@example.org"
    members = (await client.get("/member", headers=org.admin)).json()
    assert [m["Email"].lower() for m in members] == ["ada@example.org"]
    # The dashboard may be framed by that platform only, with this launch's cookies.
    page = await client.get("/ui/", headers=with_cookies(answer))
    policy = page.headers["content-security-policy"]
    assert f"frame-ancestors {platform.origin}" in policy, policy
    assert "x-frame-options" not in page.headers
    alone = await client.get("/ui/")
    assert "frame-ancestors 'none'" in alone.headers["content-security-policy"]
    assert alone.headers["x-frame-options"] == "DENY"
    forged = f"questline_lti_frame={platform.origin}|forged"
    framed = await client.get("/ui/", headers={"Cookie": forged})
    assert "frame-ancestors 'none'" in framed.headers["content-security-policy"]
    assert await _sessions(app_state) == 1
    listed = (await client.get("/lti/platform", headers=org.admin)).json()
    assert listed[0]["ContextTitle"] == "Security awareness 2026"


async def test_instructors_become_admins_and_land_on_the_named_page(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform
) -> None:
    org = await _registered(world, platform)
    team = await org.create_team("Rockets")
    added = await org.add_member(team["Id"], email="grace@example.org", given_name="Grace")
    assert added.status_code == 201
    discipline = "0193a6f5-3c4d-7e5f-8a6b-7c8d9e0f1a21"
    claims = platform.claims_for(
        "teacher-1",
        email="grace@example.org",
        roles=[INSTRUCTOR],
        target_link_uri=f"http://questline.test/lti/view/leaderboard?discipline={discipline}",
    )
    answer = await launch(client, platform, "hint-teacher", claims)
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == f"/ui/#/leaderboard?discipline={discipline}"
    me = (await client.get("/auth/session", headers=with_cookies(answer))).json()
    assert me["Role"] == "admin"
    assert me["TeamIds"] == [team["Id"]]
    mine = platform.claims_for(
        "teacher-1",
        email="grace@example.org",
        target_link_uri="http://questline.test/lti/view/team",
    )
    again = await launch(client, platform, "hint-teacher-2", mine)
    assert again.headers["location"] == f"/ui/#/team/{team['Id']}"


async def test_a_user_without_an_email_is_known_by_the_platforms_sub(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform
) -> None:
    org = await _registered(world, platform)
    claims = platform.claims_for("anonymous-42")
    first = await launch(client, platform, "hint-anon", claims)
    second = await launch(client, platform, "hint-anon-2", claims)
    assert first.status_code == second.status_code == 303
    members = (await client.get("/member", headers=org.admin)).json()
    assert len(members) == 1
    assert members[0]["Email"].endswith(".lti.invalid")


async def test_the_login_can_be_posted(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform
) -> None:
    await _registered(world, platform)
    started = await start_login(client, platform, "hint-post", method="POST")
    assert started.status_code == 302, started.text
    assert started.headers["location"].startswith(f"{platform.base}/auth?")


def _expect_refused(answer: httpx.Response, reason: str) -> None:
    assert answer.status_code in (400, 401, 403), answer.text
    assert refusal(answer) == reason, answer.text
    assert "questline_session" not in set_cookies(answer)


async def test_a_replayed_launch_is_refused(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform, app_state: AppHarness
) -> None:
    await _registered(world, platform)
    platform.launch_as("hint-replay", platform.claims_for("learner-2", email="bob@example.org"))
    fields = await launch_fields(client, platform, "hint-replay")
    assert (await post_launch(client, fields, origin=platform.origin)).status_code == 303
    # The same post again: its state is spent.
    _expect_refused(await post_launch(client, fields, origin=platform.origin), "state")
    # The old ID token with a fresh login's state: the nonce is not that login's.
    fresh = await launch_fields(client, platform, "hint-replay")
    replayed = {"id_token": fields["id_token"], "state": fresh["state"]}
    _expect_refused(await post_launch(client, replayed, origin=platform.origin), "nonce")
    assert await _sessions(app_state) == 1


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"https://purl.imsglobal.org/spec/lti/claim/deployment_id": "elsewhere"}, "deployment"),
        ({"exp": int(time.time()) - 3600, "iat": int(time.time()) - 4000}, "expired"),
        ({"iat": int(time.time()) + 86_400, "exp": int(time.time()) + 90_000}, "expired"),
        ({"drop": ("https://purl.imsglobal.org/spec/lti/claim/roles",)}, "invalid-token"),
        ({"aud": "another-tool"}, "audience"),
        ({"aud": ["questline-tool", "another-tool"]}, "audience"),
        ({"aud": ["questline-tool", "x"], "azp": "x"}, "audience"),
        ({"aud": ["questline-tool", "someone-else"], "azp": "questline-tool"}, "audience"),
        ({"iss": "https://another-platform.example"}, "issuer"),
        ({"https://purl.imsglobal.org/spec/lti/claim/version": "1.1"}, "invalid-token"),
        (
            {"https://purl.imsglobal.org/spec/lti/claim/message_type": "LtiSubmissionReview"},
            "invalid-token",
        ),
    ],
    ids=[
        "foreign-deployment",
        "expired",
        "issued-in-the-future",
        "no-roles",
        "wrong-audience",
        "several-audiences-no-azp",
        "azp-not-ours",
        "untrusted-audience-beside-ours",
        "another-issuer",
        "lti-version",
        "message-type",
    ],
)
async def test_misdirected_launches_are_refused(
    world: World,
    client: httpx.AsyncClient,
    platform: LtiPlatform,
    app_state: AppHarness,
    overrides: dict[str, Any],
    reason: str,
) -> None:
    await _registered(world, platform)
    claims = platform.claims_for("learner-3", email="eve@example.org")
    answer = await launch(client, platform, f"hint-{reason}", claims, **overrides)
    _expect_refused(answer, reason)
    assert await _sessions(app_state) == 0
    members = (await client.get("/member", headers=world.orgs[0].admin)).json()
    assert members == []


@pytest.mark.parametrize("same_kid", [True, False], ids=["same-kid", "unknown-kid"])
async def test_a_launch_signed_by_another_key_is_refused(
    world: World,
    client: httpx.AsyncClient,
    platform: LtiPlatform,
    app_state: AppHarness,
    same_kid: bool,
) -> None:
    await _registered(world, platform)
    claims = platform.claims_for("learner-4", email="mallory@example.org")
    forged = platform.other_key(same_kid=same_kid)
    answer = await launch(client, platform, f"hint-forged-{same_kid}", claims, key=forged)
    _expect_refused(answer, "signature")
    assert await _sessions(app_state) == 0


async def test_a_missing_or_forged_state_is_refused(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform, app_state: AppHarness
) -> None:
    await _registered(world, platform)
    platform.launch_as("hint-state", platform.claims_for("learner-5", email="sam@example.org"))
    fields = await launch_fields(client, platform, "hint-state")
    _expect_refused(
        await post_launch(client, {"id_token": fields["id_token"]}, origin=platform.origin),
        "state",
    )
    forged = {"id_token": fields["id_token"], "state": "forged-state"}
    _expect_refused(await post_launch(client, forged, origin=platform.origin), "state")
    _expect_refused(
        await client.post(
            "/lti/launch",
            content=b"\xff\xfe",
            headers={"content-type": "application/x-www-form-urlencoded"},
        ),
        "state",
    )
    _expect_refused(await client.post("/lti/launch", json={"state": "x"}), "state")
    assert await _sessions(app_state) == 0


async def test_a_login_from_an_unknown_platform_is_refused(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform
) -> None:
    answer = await start_login(client, platform, "hint-unknown")  # nobody registered it
    _expect_refused(answer, "unknown-platform")
    missing = await client.get("/lti/login", params={"iss": platform.issuer})
    _expect_refused(missing, "login-request")


async def test_a_launch_of_another_platform_with_this_ones_state_is_refused(
    world: World,
    client: httpx.AsyncClient,
    platform: LtiPlatform,
    other_platform: LtiPlatform,
) -> None:
    """A token of another (registered) platform posted with a state of this one: the
    key set of this login's platform does not verify it."""
    org = await _registered(world, platform)
    await register(org, other_platform, DeploymentIds=["other-deployment"])
    other_platform.launch_as("hint-x", other_platform.claims_for("x", email="x@example.org"))
    theirs = await launch_fields(client, other_platform, "hint-x")
    platform.launch_as("hint-y", platform.claims_for("y", email="y@example.org"))
    ours = await launch_fields(client, platform, "hint-y")
    mixed = {"id_token": theirs["id_token"], "state": ours["state"]}
    answer = await post_launch(client, mixed, origin=platform.origin)
    assert refusal(answer) in ("signature", "issuer"), answer.text


async def test_a_member_the_directory_deactivated_is_refused(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform, app_state: AppHarness
) -> None:
    org = await _registered(world, platform)
    await org.create_member("gone@example.org")
    with tenancy.acting_for(org.id):
        async with app_state.db.session() as session:
            await session.execute(
                update(Member)
                .where(Member.organization_id == org.id, Member.email_key == "gone@example.org")
                .values(active=False)
            )
    claims = platform.claims_for("gone-1", email="gone@example.org")
    _expect_refused(await launch(client, platform, "hint-gone", claims), "deactivated")
    assert await _sessions(app_state) == 0


@pytest.mark.parametrize(
    "id_token",
    ["", "not-a-jwt", "a.b.c", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "x" * 70_000],
    ids=["empty", "garbage", "three-parts", "alg-none", "oversized"],
)
async def test_malformed_id_tokens_are_refused_with_a_page(
    world: World,
    client: httpx.AsyncClient,
    platform: LtiPlatform,
    app_state: AppHarness,
    id_token: str,
) -> None:
    await _registered(world, platform)
    platform.launch_as("hint-bad", platform.claims_for("bad", email="bad@example.org"))
    fields = await launch_fields(client, platform, "hint-bad")
    answer = await post_launch(
        client, {"id_token": id_token, "state": fields["state"]}, origin=platform.origin
    )
    assert answer.status_code in (400, 401), answer.text
    assert refusal(answer) in ("invalid-token", "signature"), answer.text
    assert await _sessions(app_state) == 0


async def test_a_platform_whose_keys_cannot_be_fetched_is_refused_with_a_page(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform
) -> None:
    org = world.org()
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    await register(org, platform, KeySetUrl=f"http://127.0.0.1:{closed}/jwks")
    claims = platform.claims_for("learner-k", email="k@example.org")
    _expect_refused(await launch(client, platform, "hint-keys", claims), "keys-unreachable")


async def test_the_deployment_names_the_organization(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform
) -> None:
    """One platform and client id (a Canvas developer key) installed by two schools:
    each launch lands in the organization that registered its deployment."""
    first, second = await _registered(world, platform), world.org()
    await register(second, platform, DeploymentIds=["deployment-2"])
    claims = platform.claims_for("pupil", email="pupil@example.org")
    claims["https://purl.imsglobal.org/spec/lti/claim/deployment_id"] = "deployment-2"
    answer = await launch(client, platform, "hint-second", claims)
    assert answer.status_code == 303, answer.text
    me = (await client.get("/auth/session", headers=with_cookies(answer))).json()
    assert me["OrganizationId"] == str(second.id)
    assert (await client.get("/member", headers=first.admin)).json() == []


async def test_without_a_public_url_the_flow_says_so(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform, app_state: AppHarness
) -> None:
    app_state.configure(public_url=None)
    org = world.org()
    refused = await client.post("/lti/platform", json=platform.registration(), headers=org.admin)
    assert refused.status_code == 409, refused.text
    assert refused.json()["type"].endswith("/public-url-required")
    # A read does not need the address: the tool's URLs are null until it is set.
    listed = await client.get("/lti/platform", headers=org.admin)
    assert listed.status_code == 200, listed.text
    assert listed.json() == []
    _expect_refused(await start_login(client, platform, "hint-none"), "not-configured")


async def test_a_launch_is_bound_to_the_browser_that_started_its_login(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform, app_state: AppHarness
) -> None:
    """Login CSRF: an attacker's own launch posted into a victim's browser would sign
    the victim in as the attacker. The login's cookie must come back with the launch."""
    await _registered(world, platform)
    platform.launch_as("hint-bound", platform.claims_for("bound-1", email="kim@example.org"))
    started = await start_login(client, platform, "hint-bound")
    assert started.status_code == 302, started.text
    assert state_of(started.headers["location"]) in BROWSER
    cookie = [h for h in started.headers.get_list("set-cookie") if "questline_lti_login_" in h]
    assert len(cookie) == 1, started.headers
    for attribute in ("HttpOnly", "Secure", "SameSite=none", "Partitioned", "Path=/lti/"):
        assert attribute.lower() in cookie[0].lower(), cookie[0]
    assert "max-age=600" in cookie[0].lower(), cookie[0]
    # Without the login's cookie (another browser, or one that dropped it): refused.
    fields = await authenticate(started.headers["location"])
    alone = await post_launch(client, fields, origin=platform.origin, cookie=None)
    _expect_refused(alone, "state-browser")
    # The page shows in the platform's frame (it says to open a new window).
    assert f"frame-ancestors {platform.origin}" in alone.headers["content-security-policy"]
    assert "new window" in alone.text
    # With another browser's cookie: its own name, or this login's name and its value.
    mine = await launch_fields(client, platform, "hint-bound")
    theirs = login_cookie(await start_login(client, platform, "hint-bound"))
    assert theirs is not None
    their_value = theirs.split("=", 1)[1]
    for forged in ("theirs", "their-value"):
        fresh = await launch_fields(client, platform, "hint-bound")
        own_name = BROWSER[fresh["state"]].split("=", 1)[0]
        cookie = theirs if forged == "theirs" else f"{own_name}={their_value}"
        answer = await post_launch(client, fresh, origin=platform.origin, cookie=cookie)
        _expect_refused(answer, "state-browser")
    assert await _sessions(app_state) == 0
    # With its own cookie: signed in, and the login's cookie is cleared.
    answer = await post_launch(client, mine, origin=platform.origin)
    assert answer.status_code == 303, answer.text
    cleared = [h for h in answer.headers.get_list("set-cookie") if "questline_lti_login_" in h]
    assert len(cleared) == 1, cleared
    assert "max-age=0" in cleared[0].lower(), cleared
    assert await _sessions(app_state) == 1


async def test_the_frame_origin_comes_from_the_registration_only(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform
) -> None:
    """A launch posted from any page names that page in ``Origin``: only an origin the
    registration names may frame the session's pages."""
    org = await _registered(world, platform)
    claims = platform.claims_for("framed-1", email="fay@example.org")
    platform.launch_as("hint-evil", claims)
    fields = await launch_fields(client, platform, "hint-evil")
    answer = await post_launch(client, fields, origin="https://evil.example")
    assert answer.status_code == 303, answer.text
    policy = answer.headers["content-security-policy"]
    assert f"frame-ancestors {platform.origin}" in policy, policy
    assert "evil.example" not in policy
    page = await client.get("/ui/", headers=with_cookies(answer))
    assert f"frame-ancestors {platform.origin}" in page.headers["content-security-policy"]
    assert "evil.example" not in page.headers["content-security-policy"]
    # An origin the admin registered (Canvas: the school's domain) may frame.
    listed = (await client.get("/lti/platform", headers=org.admin)).json()
    changed = await client.patch(
        f"/lti/platform/{listed[0]['Id']}",
        json={"FrameOrigins": ["https://school.example"]},
        headers=org.admin,
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["FrameOrigins"] == ["https://school.example"]
    platform.launch_as("hint-school", claims)
    fields = await launch_fields(client, platform, "hint-school")
    school = await post_launch(client, fields, origin="https://school.example")
    assert school.status_code == 303, school.text
    assert "frame-ancestors https://school.example" in school.headers["content-security-policy"]
    platform.launch_as("hint-evil-2", claims)
    fields = await launch_fields(client, platform, "hint-evil-2")
    evil = await post_launch(client, fields, origin="https://evil.example")
    assert "evil.example" not in evil.headers["content-security-policy"]
    assert f"frame-ancestors {platform.origin}" in evil.headers["content-security-policy"]


async def test_a_member_made_by_a_launch_is_in_the_audit_log(
    world: World, client: httpx.AsyncClient, platform: LtiPlatform
) -> None:
    org = await _registered(world, platform)
    claims = platform.claims_for("audited-1", email="Alan@Example.org")
    assert (await launch(client, platform, "hint-audit", claims)).status_code == 303
    assert (await launch(client, platform, "hint-audit-2", claims)).status_code == 303
    entries = (
        await client.get("/audit", params={"action": "member.created"}, headers=org.admin)
    ).json()
    assert len(entries) == 1, entries  # the second launch found the member
    members = (await client.get("/member", headers=org.admin)).json()
    entry = entries[0]
    assert entry["TargetType"] == "member"
    assert entry["TargetId"] == members[0]["Id"]
    assert entry["Actor"] == platform.issuer
    assert entry["ActorVia"] == "provider"
    assert entry["Changes"]["Email"]["After"].lower() == "alan@example.org"
    assert "id_token" not in str(entry)
