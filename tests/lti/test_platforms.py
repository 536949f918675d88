"""Registering learning platforms (admins), tenant isolation, audit, and the tool's keys."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet
from sqlalchemy import update

from questline.lti import keys
from questline.lti.models import LtiToolKey
from tests.factories import World
from tests.lti.support import register
from tests.support.harness import AppHarness
from tests.support.lti_platform import LtiPlatform

pytestmark = pytest.mark.anyio


async def test_an_admin_registers_reads_changes_and_removes_a_platform(
    world: World, platform: LtiPlatform
) -> None:
    org = world.org()
    created = await org.client.post(
        "/lti/platform", json=platform.registration(), headers=org.admin
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert created.headers["location"].endswith(f"/lti/platform/{body['Id']}")
    assert body["DeploymentIds"] == [platform.deployment_id]
    assert body["Tool"] == {
        "LoginUrl": "http://questline.test/lti/login",
        "RedirectUrl": "http://questline.test/lti/launch",
        "KeySetUrl": "http://questline.test/.well-known/jwks.json",
        "DeepLinkingUrl": "http://questline.test/lti/launch",
        "TargetLinkUri": "http://questline.test/lti/view/leaderboard",
    }
    path = f"/lti/platform/{body['Id']}"
    read = await org.client.get(path, headers=org.admin)
    assert read.status_code == 200
    assert read.json()["Issuer"] == platform.issuer
    changed = await org.client.patch(
        path, json={"deploymentIds": ["deployment-1", "deployment-2"]}, headers=org.admin
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["DeploymentIds"] == ["deployment-1", "deployment-2"]
    listed = await org.client.get("/lti/platform", headers=org.admin)
    assert [p["Id"] for p in listed.json()] == [body["Id"]]
    assert (await org.client.delete(path, headers=org.admin)).status_code == 204
    assert (await org.client.get(path, headers=org.admin)).status_code == 404
    audit = await org.client.get("/audit", headers=org.admin)
    actions = [entry["Action"] for entry in audit.json()]
    assert {
        "lti.platform_registered",
        "lti.platform_changed",
        "lti.platform_removed",
    } <= set(actions)


async def test_members_cannot_and_other_organizations_see_nothing(
    world: World, platform: LtiPlatform
) -> None:
    org, other = world.org(), world.org()
    body = platform.registration()
    assert (
        await org.client.post("/lti/platform", json=body, headers=org.member)
    ).status_code == 403
    created = await register(org, platform)
    path = f"/lti/platform/{created['Id']}"
    for method in ("GET", "PATCH", "DELETE"):
        answer = await other.client.request(
            method, path, headers=other.admin, json={} if method == "PATCH" else None
        )
        assert answer.status_code == 404, (method, answer.text)
        assert answer.headers["content-type"] == "application/problem+json"
    assert (await other.client.get("/lti/platform", headers=other.admin)).json() == []
    bogus = await org.client.get("/lti/platform/not-an-id", headers=org.admin)
    assert bogus.status_code == 404


async def test_a_deployment_names_one_organization(world: World, platform: LtiPlatform) -> None:
    org, other = world.org(), world.org()
    await register(org, platform)
    taken = await other.client.post(
        "/lti/platform", json=platform.registration(), headers=other.admin
    )
    assert taken.status_code == 409, taken.text
    # Another deployment of the same platform and client id is another installation.
    fine = await other.client.post(
        "/lti/platform",
        json=platform.registration(DeploymentIds=["deployment-9"]),
        headers=other.admin,
    )
    assert fine.status_code == 201, fine.text


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("KeySetUrl", "ftp://platform.example/jwks"),
        ("AuthLoginUrl", "https://user:pw@platform.example/auth"),
        ("Issuer", "not a url"),
        ("DeploymentIds", []),
        ("ClientId", "x" * 300),
        ("FrameOrigins", ["https://school.example/path"]),
        ("FrameOrigins", ["https://school.example; script-src *"]),
        ("FrameOrigins", ["*"]),
        ("FrameOrigins", ["https://*.example"]),
    ],
)
async def test_malformed_registrations_are_422(
    world: World, platform: LtiPlatform, field: str, value: object
) -> None:
    org = world.org()
    answer = await org.client.post(
        "/lti/platform", json=platform.registration(**{field: value}), headers=org.admin
    )
    assert answer.status_code == 422, answer.text
    assert field in answer.text


async def test_private_key_set_urls_are_refused_unless_allowed(
    world: World, platform: LtiPlatform, app_state: AppHarness
) -> None:
    app_state.configure(lti_allow_private_urls=False)
    org = world.org()
    answer = await org.client.post("/lti/platform", json=platform.registration(), headers=org.admin)
    assert answer.status_code == 422, answer.text
    assert "KeySetUrl" in answer.text or "AuthTokenUrl" in answer.text


async def test_the_key_set_publishes_the_signing_key_and_the_one_before(
    client: httpx.AsyncClient, app_state: AppHarness
) -> None:
    first = (await client.get("/.well-known/jwks.json")).json()
    assert [k["kty"] for k in first["keys"]] == ["RSA"]
    assert "d" not in first["keys"][0]
    assert first["keys"][0]["kid"]
    settings = app_state.settings
    secret = app_state.state.signing_secret()
    # A rotation: the signing key is past its age, the next signature makes a new one.
    expired = settings.model_copy(update={"lti_key_rotation_days": 1})
    async with app_state.db.session(write=True) as session:
        await session.execute(
            update(LtiToolKey).values(created_at=dt.datetime(2020, 1, 1, tzinfo=dt.UTC))
        )
        signing = await keys.signing_key(session, settings=expired, signing_secret=secret)
    second = (await client.get("/.well-known/jwks.json")).json()
    kids = [k["kid"] for k in second["keys"]]
    assert kids == [signing.kid, first["keys"][0]["kid"]]
    token = jwt.encode({"alg": "RS256", "kid": signing.kid}, {"iss": "questline"}, signing.key)
    assert jwt.decode(token, KeySet.import_key_set(second)).claims == {"iss": "questline"}


async def test_frame_origins_are_kept_as_origins_and_shown(
    world: World, platform: LtiPlatform, app_state: AppHarness
) -> None:
    org = world.org()
    body = platform.registration(FrameOrigins=["https://School.Example:8443", "https://a.example/"])
    created = await org.client.post("/lti/platform", json=body, headers=org.admin)
    assert created.status_code == 201, created.text
    assert created.json()["FrameOrigins"] == ["https://school.example:8443", "https://a.example"]
    app_state.configure(lti_allow_http=False)
    plain = await org.client.patch(
        f"/lti/platform/{created.json()['Id']}",
        json={"FrameOrigins": ["http://school.example"]},
        headers=org.admin,
    )
    assert plain.status_code == 422, plain.text
    assert "FrameOrigins" in plain.text
