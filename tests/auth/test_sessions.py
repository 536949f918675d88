"""The dashboard's sign-in: one-time codes, the session cookie, CSRF, sign-out, expiry."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update
from typer.testing import CliRunner

from questline.auth import sessions
from questline.auth.models import DashboardSession
from questline.cli.main import app as cli
from questline.config import Settings
from questline.storage import tenancy
from questline.web.identity import Role
from tests.factories import World
from tests.support.harness import AppHarness
from tests.support.live import database_env

pytestmark = pytest.mark.anyio


async def _code(
    state: AppHarness,
    org_id: uuid.UUID,
    role: Role = Role.ADMIN,
    email: str | None = None,
    lifetime: dt.timedelta | None = None,
) -> str:
    with tenancy.acting_for(org_id):  # minted directly: as the organization, like the command line
        async with state.db.session(write=True) as session:
            return await sessions.mint_signin_code(
                session,
                settings=state.settings,
                org_id=org_id,
                role=role,
                subject="ada",
                email=email,
                lifetime=lifetime,
            )


async def _sign_in(client: httpx.AsyncClient, code: str) -> dict[str, Any]:
    response = await client.post("/auth/session", json={"Code": code})
    assert response.status_code == 201, response.text
    return dict(response.json())


async def test_a_code_signs_in_once_and_the_cookie_reads_and_writes(
    client: httpx.AsyncClient, app_state: AppHarness, world: World
) -> None:
    org = world.org()
    team = await org.create_team("Owls")
    await org.add_member(team["Id"], email="Ada@Example.org")
    code = await _code(app_state, org.id, email="ada@example.org")
    info = await _sign_in(client, code)
    assert info["Role"] == "admin"
    assert info["OrganizationId"] == str(org.id)
    assert info["TeamIds"] == [team["Id"]]  # the caller's team, by e-mail ignoring case
    cookie = client.cookies.get(sessions.SESSION_COOKIE)
    assert cookie

    # Another site's page cannot sign a browser in (login CSRF).
    other = await _code(app_state, org.id)
    cross = await client.post(
        "/auth/session", json={"Code": other}, headers={"Origin": "https://evil.example"}
    )
    assert cross.status_code == 403

    # The code was spent.
    again = await client.post("/auth/session", json={"Code": code})
    assert again.status_code == 401
    assert "not valid" in again.json()["detail"]

    # Reads work with the cookie alone.
    listed = await client.get("/team")
    assert listed.status_code == 200
    assert [t["Name"] for t in listed.json()] == ["Owls"]
    current = await client.get("/auth/session")
    assert current.status_code == 200
    assert current.json()["CsrfToken"] == info["CsrfToken"]

    # A write without the CSRF header is refused and changes nothing.
    refused = await client.post("/team", json={"name": "Foxes"})
    assert refused.status_code == 403
    assert "X-CSRF-Token" in refused.json()["detail"]
    wrong = await client.post(
        "/team", json={"name": "Foxes"}, headers={"X-CSRF-Token": "not-the-token"}
    )
    assert wrong.status_code == 403
    # With the token but from another site's page: refused too.
    cross = await client.post(
        "/team",
        json={"name": "Foxes"},
        headers={"X-CSRF-Token": info["CsrfToken"], "Origin": "https://evil.example"},
    )
    assert cross.status_code == 403
    assert [t["Name"] for t in (await client.get("/team")).json()] == ["Owls"]

    made = await client.post(
        "/team",
        json={"name": "Foxes"},
        headers={"X-CSRF-Token": info["CsrfToken"], "Origin": "http://questline.test"},
    )
    assert made.status_code == 201, made.text


async def test_the_cookie_is_httponly_strict_and_secure_only_over_https(
    app_state: AppHarness, world: World, client: httpx.AsyncClient, app: FastAPI
) -> None:
    org = world.org()
    response = await client.post("/auth/session", json={"Code": await _code(app_state, org.id)})
    header = response.headers["set-cookie"].lower()
    assert "httponly" in header
    assert "samesite=strict" in header
    assert "path=/" in header
    assert "secure" not in header  # plain http: a Secure cookie would never come back

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://questline.test") as tls:
        secure = await tls.post("/auth/session", json={"Code": await _code(app_state, org.id)})
    assert secure.status_code == 201
    assert "; secure" in secure.headers["set-cookie"].lower()


async def test_members_get_a_read_only_session(
    client: httpx.AsyncClient, app_state: AppHarness, world: World
) -> None:
    org = world.org()
    info = await _sign_in(client, await _code(app_state, org.id, role=Role.MEMBER))
    assert info["Role"] == "member"
    assert (await client.get("/team")).status_code == 200
    denied = await client.post(
        "/team", json={"name": "Foxes"}, headers={"X-CSRF-Token": info["CsrfToken"]}
    )
    assert denied.status_code == 403


async def test_sign_out_ends_the_session_for_every_tab(
    client: httpx.AsyncClient, app_state: AppHarness, world: World
) -> None:
    org = world.org()
    info = await _sign_in(client, await _code(app_state, org.id))
    cookie = client.cookies[sessions.SESSION_COOKIE]
    no_csrf = await client.delete("/auth/session")
    assert no_csrf.status_code == 403
    out = await client.delete("/auth/session", headers={"X-CSRF-Token": info["CsrfToken"]})
    assert out.status_code == 204
    assert sessions.SESSION_COOKIE not in client.cookies
    # Another tab still holding the old cookie is signed out too.
    client.cookies.set(sessions.SESSION_COOKIE, cookie)
    stale = await client.get("/team")
    assert stale.status_code == 401


async def test_expired_codes_and_sessions_are_refused(
    client: httpx.AsyncClient, app_state: AppHarness, world: World
) -> None:
    org = world.org()
    old = await _code(app_state, org.id, lifetime=dt.timedelta(seconds=-1))
    assert (await client.post("/auth/session", json={"Code": old})).status_code == 401
    await _sign_in(client, await _code(app_state, org.id))
    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=True) as session:
            await session.execute(
                update(DashboardSession).values(
                    expires_at=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
                )
            )
    expired = await client.get("/team")
    assert expired.status_code == 401
    assert "expired" in expired.json()["detail"]


async def test_a_verified_token_becomes_a_session_and_bearer_tokens_still_work(
    client: httpx.AsyncClient, app_state: AppHarness, world: World
) -> None:
    org = world.org()
    forged = org.admin_token[:-4] + ("AAAA" if not org.admin_token.endswith("AAAA") else "BBBB")
    bad = await client.post("/auth/session", json={"IdToken": forged})
    assert bad.status_code == 401
    assert sessions.SESSION_COOKIE not in client.cookies
    made = await client.post("/auth/session", json={"IdToken": org.member_token})
    assert made.status_code == 201
    assert made.json()["Role"] == "member"
    operator = await client.post("/auth/session", json={"IdToken": world.operator_token()})
    assert operator.status_code == 403
    # A bearer token wins over the cookie: the admin token can write without CSRF.
    created = await client.post("/team", json={"name": "Owls"}, headers=org.admin)
    assert created.status_code == 201


@pytest.mark.parametrize(
    "body",
    [{}, {"Code": "x", "IdToken": "y"}, {"Code": ""}, {"Code": "x", "Extra": 1}, []],
)
async def test_malformed_sign_in_bodies_are_422(client: httpx.AsyncClient, body: object) -> None:
    response = await client.post("/auth/session", json=body)
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")
    assert sessions.SESSION_COOKIE not in client.cookies


async def test_without_a_cookie_the_session_is_401(client: httpx.AsyncClient) -> None:
    assert (await client.get("/auth/session")).status_code == 401
    client.cookies.set(sessions.SESSION_COOKIE, "nope")
    unknown = await client.get("/auth/session")
    assert unknown.status_code == 401


async def test_questline_signin_link_prints_a_working_one_time_link(
    client: httpx.AsyncClient, settings: Settings, world: World
) -> None:
    org = world.org()
    env = {
        "QUESTLINE_DATA_DIR": str(settings.data_dir),
        "QUESTLINE_PUBLIC_URL": "http://questline.test",
    }
    env.update(database_env(settings))
    args = ["signin-link", "--org", str(org.id), "--role", "member", "--email", "a@example.org"]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        result = pool.submit(CliRunner().invoke, cli, args, env=env).result()
    assert result.exit_code == 0, result.output
    link = result.output.strip().splitlines()[-1]
    assert link.startswith("http://questline.test/ui/#code=")
    info = await _sign_in(client, link.split("#code=")[1])
    assert (info["Role"], info["Email"]) == ("member", "a@example.org")

    refused = CliRunner().invoke(cli, ["signin-link", "--org", "nope"], env=env)
    assert refused.exit_code != 0
    operator = CliRunner().invoke(cli, ["signin-link", "--org", str(org.id), "--role", "operator"])
    assert operator.exit_code != 0
