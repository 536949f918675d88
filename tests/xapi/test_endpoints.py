"""``/organization/xapi``: registration, secrets never shown, the connection test, the
SSRF rule and its test/dev allowance, access and hostile bodies."""

from __future__ import annotations

import base64
import json
import logging
import os

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from questline.auth.tokens import load_or_create_secret
from questline.storage import sealing, tenancy
from questline.xapi.models import LrsConnection
from questline.xapi.sealing import Unreadable, unseal
from tests.factories import World
from tests.support.harness import AppHarness
from tests.support.ralph_lrs import RalphServer, RalphUser
from tests.xapi.support import register

pytestmark = pytest.mark.anyio


async def test_the_secret_is_never_shown_and_replacing_keeps_one_lrs(
    world: World, ralph: RalphServer, lrs_user: RalphUser, caplog: pytest.LogCaptureFixture
) -> None:
    org = world.org()
    caplog.set_level(logging.DEBUG)
    created = await register(org, ralph, lrs_user)
    assert created["Endpoint"] == ralph.endpoint
    assert (created["Auth"], created["Username"]) == ("Basic", lrs_user.username)
    assert created["ActivityBaseIri"] == "https://questline.test/xapi/activities"
    got = await org.client.get("/organization/xapi", headers=org.admin)
    assert got.status_code == 200
    replaced = await org.client.put(
        "/organization/xapi",
        json={"endpoint": ralph.endpoint, "token": "abc.DEF-123_~+/="},
        headers=org.admin,
    )
    assert replaced.status_code == 200, replaced.text
    assert (replaced.json()["Auth"], replaced.json()["Username"]) == ("Bearer", None)
    for body in (created, got.json(), replaced.json()):
        text = json.dumps(body)
        assert lrs_user.password not in text
        assert "abc.DEF" not in text
        assert "Password" not in body
        assert "Token" not in body
    assert lrs_user.password not in caplog.text
    assert "abc.DEF-123" not in caplog.text


async def test_the_secret_is_sealed_at_rest(
    world: World, app_state: AppHarness, ralph: RalphServer, lrs_user: RalphUser
) -> None:
    org, other = world.org(), world.org()
    await register(org, ralph, lrs_user)
    with tenancy.acting_for(org.id):  # read directly: as the organization
        async with app_state.db.session(write=False) as session:
            row = await session.get(LrsConnection, org.id)
    assert row is not None
    assert row.password is not None
    assert row.password.startswith(sealing.PREFIX)
    assert lrs_user.password not in row.password
    settings = app_state.settings
    assert unseal(settings, row.password, organization=str(org.id)) == lrs_user.password
    with pytest.raises(Unreadable):  # bound to its organization
        unseal(settings, row.password, organization=str(other.id))


def _sealed_the_old_way(signing_secret: str, plaintext: str, organization: str) -> str:
    """The format written before ``storage.sealing``: ``v1:`` + base64(nonce, ciphertext)
    under one key for every organization, the organization as associated data."""
    key = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"questline xapi lrs credentials v1"
    ).derive(signing_secret.encode())
    nonce = os.urandom(12)
    sealed = AESGCM(key).encrypt(nonce, plaintext.encode(), organization.encode())
    return "v1:" + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")


async def test_credentials_sealed_the_old_way_still_open_and_reach_the_lrs(
    world: World, app_state: AppHarness, ralph: RalphServer, lrs_user: RalphUser
) -> None:
    org, other = world.org(), world.org()
    await register(org, ralph, lrs_user)
    settings = app_state.settings
    old = _sealed_the_old_way(
        load_or_create_secret(settings), lrs_user.password, organization=str(org.id)
    )
    assert unseal(settings, old, organization=str(org.id)) == lrs_user.password
    with pytest.raises(Unreadable):  # still bound to its organization
        unseal(settings, old, organization=str(other.id))
    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=True) as session:
            row = await session.get(LrsConnection, org.id)
            assert row is not None
            row.password = old
    answered = await org.client.post("/organization/xapi/test", headers=org.admin)
    assert answered.status_code == 200, answered.text
    assert answered.json()["Ok"] is True, answered.json()


async def test_the_connection_test_reports_the_lrs_answer(
    world: World, ralph: RalphServer, lrs_user: RalphUser
) -> None:
    org = world.org()
    await register(org, ralph, lrs_user)
    answered = await org.client.post("/organization/xapi/test", headers=org.admin)
    assert answered.status_code == 200, answered.text
    report = answered.json()
    assert (report["Ok"], report["StatusCode"], report["Error"]) == (True, 200, None)
    assert report["StatementId"] in report["Answer"]
    [stored] = ralph.statements(lrs_user)
    assert stored["id"] == report["StatementId"]
    assert stored["actor"]["account"]["name"] == "user/admin"

    wrong = await org.client.put(
        "/organization/xapi",
        json={"Endpoint": ralph.endpoint, "Username": lrs_user.username, "Password": "nope"},
        headers=org.admin,
    )
    assert wrong.status_code == 200
    refused = (await org.client.post("/organization/xapi/test", headers=org.admin)).json()
    assert (refused["Ok"], refused["StatusCode"]) == (False, 401)

    gone = await org.client.put(
        "/organization/xapi",
        json={"Endpoint": "http://127.0.0.1:9/xAPI", "Username": "u", "Password": "p"},
        headers=org.admin,
    )
    assert gone.status_code == 200
    unreachable = (await org.client.post("/organization/xapi/test", headers=org.admin)).json()
    assert (unreachable["Ok"], unreachable["StatusCode"]) == (False, None)
    assert unreachable["Error"]


async def test_loopback_endpoints_need_the_explicit_allowance(
    world: World, app_state: AppHarness
) -> None:
    org = world.org()
    app_state.configure(xapi_allow_private_urls=False)
    for url in ("http://127.0.0.1:8100/xAPI", "http://10.0.0.7/xAPI", "http://[::1]/xAPI"):
        refused = await org.client.put(
            "/organization/xapi",
            json={"Endpoint": url, "Username": "u", "Password": "p"},
            headers=org.admin,
        )
        assert refused.status_code == 422, refused.text
        assert refused.json()["errors"][0]["field"] == "Endpoint"
    assert (await org.client.get("/organization/xapi", headers=org.admin)).status_code == 404


@pytest.mark.parametrize(
    "body",
    [
        {"Endpoint": "https://lrs.example.org/xAPI"},
        {"Endpoint": "https://lrs.example.org/xAPI", "Username": "u"},
        {
            "Endpoint": "https://lrs.example.org/xAPI",
            "Username": "u",
            "Password": "p",
            "Token": "t",
        },
        {"Endpoint": "https://lrs.example.org/xAPI", "Token": "bad token\r\nX-Evil: 1"},
        {"Endpoint": "ftp://lrs.example.org/", "Token": "t"},
        {"Endpoint": "https://user:pw@lrs.example.org/", "Token": "t"},
        {"Endpoint": "x" * 5000, "Token": "t"},
        {"Endpoint": 7, "Token": "t"},
        {"Endpoint": "https://lrs.example.org/xAPI", "Token": "t", "Extra": 1},
        {"Endpoint": "https://lrs.example.org/\u202exapi", "Token": "t"},
        [],
    ],
)
async def test_bad_bodies_are_refused_without_a_5xx(world: World, body: object) -> None:
    org = world.org()
    response = await org.client.put("/organization/xapi", json=body, headers=org.admin)
    assert response.status_code in (400, 422), response.text
    assert response.headers["content-type"].startswith("application/problem+json")


async def test_only_admins_of_the_organization(world: World) -> None:
    org = world.org()
    for method, path in (
        ("PUT", "/organization/xapi"),
        ("GET", "/organization/xapi"),
        ("DELETE", "/organization/xapi"),
        ("POST", "/organization/xapi/test"),
        ("GET", "/organization/xapi/failures"),
    ):
        body = {"Endpoint": "https://lrs.example.org/xAPI", "Token": "t"}
        kwargs = {"json": body} if method == "PUT" else {}
        member = await org.client.request(method, path, headers=org.member, **kwargs)
        assert member.status_code == 403, (method, path, member.text)
        anonymous = await org.client.request(method, path, **kwargs)
        assert anonymous.status_code == 401, (method, path)
        if method != "PUT":
            missing = await org.client.request(method, path, headers=org.admin)
            assert missing.status_code == 404, (method, path)


async def test_concurrent_first_registrations_make_one_lrs(
    world: World, ralph: RalphServer, lrs_user: RalphUser
) -> None:
    import asyncio

    org = world.org()
    body = {"Endpoint": ralph.endpoint, "Username": lrs_user.username, "Password": "x"}
    answers = await asyncio.gather(
        *(org.client.put("/organization/xapi", json=body, headers=org.admin) for _ in range(4))
    )
    assert sorted(a.status_code for a in answers) == [200, 200, 200, 201]
