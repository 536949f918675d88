"""SCIM tokens: stored by id, created by an admin (the secret shown once), listed
without their secrets, revoked at once; a revoked, expired or unknown token, or a JWT
claiming the role ``scim``, is a 401 SCIM error."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import json
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from questline.app import create_app
from questline.cli.main import app as cli
from questline.config import Settings
from questline.web.identity import Role
from tests.factories import Org, World, bearer
from tests.scim.conftest import issue_token
from tests.scim.support import SCIM
from tests.support.live import database_env
from tests.web.conftest import client_for

pytestmark = pytest.mark.anyio

TOKENS = "/organization/scim-tokens"


async def scim_users(client: httpx.AsyncClient, token: str) -> httpx.Response:
    return await client.get("/scim/v2/Users", headers=bearer(token))


def assert_scim_401(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.headers["content-type"].startswith(SCIM)
    body = response.json()
    assert body["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    assert body["status"] == "401"


async def listed(org: Org) -> list[dict[str, Any]]:
    response = await org.client.get(TOKENS, headers=org.admin)
    assert response.status_code == 200, response.text
    return list(response.json())


async def test_created_listed_used_and_revoked(org: Org) -> None:
    made = await org.client.post(TOKENS, json={"Label": "Okta", "Days": 90}, headers=org.admin)
    assert made.status_code == 201, made.text
    body = made.json()
    token = body["Token"]
    assert token.startswith("qlscim_")
    assert len(token) > 40
    assert body["Label"] == "Okta"
    assert body["BaseUrl"].endswith("/scim/v2")
    created = dt.datetime.fromisoformat(body["CreatedAt"])
    assert dt.datetime.fromisoformat(body["ExpiresAt"]) - created == dt.timedelta(days=90)

    [row] = await listed(org)
    assert (row["Id"], row["Label"], row["Status"]) == (body["Id"], "Okta", "active")
    assert row["LastUsedAt"] is None
    assert row["RevokedAt"] is None
    assert "Token" not in row

    used = await scim_users(org.client, token)
    assert used.status_code == 200, used.text
    [row] = await listed(org)
    assert row["LastUsedAt"] is not None

    revoked = await org.client.delete(f"{TOKENS}/{body['Id']}", headers=org.admin)
    assert revoked.status_code == 204, revoked.text
    assert_scim_401(await scim_users(org.client, token))
    [row] = await listed(org)
    assert row["Status"] == "revoked"
    assert row["RevokedAt"] is not None
    again = await org.client.delete(f"{TOKENS}/{body['Id']}", headers=org.admin)
    assert again.status_code == 204

    # Audited, the secret nowhere: not in the log, not in any listing.
    log = await org.client.get("/audit", params={"limit": 100}, headers=org.admin)
    entries = [e for e in log.json() if e["TargetType"] == "scim_token"]
    assert sorted(e["Action"] for e in entries) == ["scim_token.created", "scim_token.revoked"]
    assert token not in log.text
    assert token not in json.dumps(await listed(org))


async def test_the_default_lifetime_is_a_year_at_most(org: Org) -> None:
    made = await org.client.post(TOKENS, headers=org.admin)
    assert made.status_code == 201, made.text
    body = made.json()
    lifetime = dt.datetime.fromisoformat(body["ExpiresAt"]) - dt.datetime.fromisoformat(
        body["CreatedAt"]
    )
    assert lifetime == dt.timedelta(days=365)
    longer = await org.client.post(TOKENS, json={"Days": 366}, headers=org.admin)
    assert longer.status_code == 422, longer.text
    assert longer.headers["content-type"].startswith("application/problem+json")


async def test_a_shorter_configured_lifetime_is_the_default_and_the_limit(
    settings: Settings, world: World
) -> None:
    org = world.org()
    app = create_app(settings.model_copy(update={"scim_token_max_days": 30}))
    try:
        async with client_for(app) as client:
            made = await client.post(TOKENS, headers=org.admin)
            assert made.status_code == 201, made.text
            body = made.json()
            expires = dt.datetime.fromisoformat(body["ExpiresAt"])
            assert expires - dt.datetime.fromisoformat(body["CreatedAt"]) == dt.timedelta(days=30)
            refused = await client.post(TOKENS, json={"Days": 31}, headers=org.admin)
            assert refused.status_code == 422, refused.text
    finally:
        await app.state.questline.db.dispose()


async def test_expired_unknown_and_jwt_scim_tokens_are_refused(org: Org, world: World) -> None:
    expired = await issue_token(world.db, org.id, lifetime=dt.timedelta(seconds=-1))
    assert_scim_401(await scim_users(org.client, expired.token))
    [row] = await listed(org)
    assert row["Status"] == "expired"
    live = await issue_token(world.db, org.id)
    assert (await scim_users(org.client, live.token)).status_code == 200
    assert_scim_401(await scim_users(org.client, live.token[:-2] + "xx"))
    assert_scim_401(await scim_users(org.client, "qlscim_"))
    # A JWT with the role scim names its organization in a claim and cannot be revoked.
    jwt_token = world.tokens.mint(role=Role.SCIM, org_id=org.id, subject="directory")
    refused = await scim_users(org.client, jwt_token)
    assert_scim_401(refused)
    assert "scim-tokens" in refused.json()["detail"]


async def test_only_the_organizations_admins_manage_its_tokens(org: Org, world: World) -> None:
    made = (await org.client.post(TOKENS, json={"Label": "Entra"}, headers=org.admin)).json()
    for method, path in (("GET", TOKENS), ("POST", TOKENS), ("DELETE", f"{TOKENS}/{made['Id']}")):
        response = await org.client.request(method, path, headers=org.member)
        assert response.status_code == 403, (method, response.text)
        as_scim = await org.client.request(method, path, headers=bearer(made["Token"]))
        assert as_scim.status_code == 403, (method, as_scim.text)
    other = world.org()
    assert (await other.client.get(TOKENS, headers=other.admin)).json() == []
    stranger = await other.client.delete(f"{TOKENS}/{made['Id']}", headers=other.admin)
    assert stranger.status_code == 404, stranger.text
    assert stranger.headers["content-type"].startswith("application/problem+json")
    assert (await scim_users(org.client, made["Token"])).status_code == 200
    unknown = await org.client.delete(f"{TOKENS}/not-a-uuid", headers=org.admin)
    assert unknown.status_code == 422


async def test_the_dashboards_route_makes_a_stored_token(org: Org) -> None:
    made = await org.client.post("/organization/scim-token", json={"Days": 7}, headers=org.admin)
    assert made.status_code == 201, made.text
    [row] = await listed(org)
    assert row["Id"] == made.json()["Id"]
    await org.client.delete(f"{TOKENS}/{row['Id']}", headers=org.admin)
    assert_scim_401(await scim_users(org.client, made.json()["Token"]))


async def test_questline_token_create_role_scim_stores_a_revocable_token(
    settings: Settings, org: Org
) -> None:
    env = {"QUESTLINE_DATA_DIR": str(settings.data_dir)}
    env.update(database_env(settings))
    args = ["token", "create", "--role", "scim", "--org", str(org.id), "--subject", "Okta"]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        result = pool.submit(CliRunner().invoke, cli, args, env=env).result()
        too_long = pool.submit(CliRunner().invoke, cli, [*args, "--days", "400"], env=env).result()
    assert result.exit_code == 0, result.output
    token = result.output.strip().splitlines()[-1]
    assert token.startswith("qlscim_")
    assert (await scim_users(org.client, token)).status_code == 200
    [row] = await listed(org)
    assert row["Label"] == "Okta"
    await org.client.delete(f"{TOKENS}/{row['Id']}", headers=org.admin)
    assert_scim_401(await scim_users(org.client, token))
    assert too_long.exit_code != 0
    assert len(await listed(org)) == 1
