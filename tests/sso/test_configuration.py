"""``/organization/sso``: an admin configures the organization's OpenID provider."""

from __future__ import annotations

import logging

import httpx
import pytest
from sqlalchemy import select

from questline.sso.models import SsoConfiguration
from questline.storage import sealing as storage_sealing
from questline.storage import tenancy
from tests.factories import Org, World
from tests.sso.provider import QUIET, Provider, running_provider
from tests.sso.support import CLIENT_SECRET, configure, configured
from tests.support.harness import AppHarness

pytestmark = [pytest.mark.anyio, QUIET]


async def test_put_fetches_the_provider_and_get_shows_everything_but_the_secret(
    client: httpx.AsyncClient, world: World, provider: Provider, app_state: AppHarness
) -> None:
    org = world.org()
    response = await configure(
        org, provider, AllowedEmailDomains=["@Example.ORG", "example.org"], GroupsClaim="roles"
    )
    assert response.status_code == 201, response.text
    assert response.headers["location"].endswith("/organization/sso")
    body = response.json()
    assert body["Issuer"] == provider.issuer
    assert body["ClientSecretSet"] is True
    assert body["AllowedEmailDomains"] == ["example.org"]
    assert body["GroupsClaim"] == "roles"
    assert body["RedirectUri"].endswith("/auth/oidc/callback")
    assert body["LoginUrl"].endswith(f"/auth/oidc/{org.id}/login")
    assert body["EndSessionEndpoint"] == f"{provider.issuer}/oauth2/end_session"
    assert CLIENT_SECRET not in response.text

    got = await client.get("/organization/sso", headers=org.admin)
    assert got.status_code == 200
    assert got.json() == body
    assert CLIENT_SECRET not in got.text

    again = await configure(org, provider, Enabled=False)
    assert again.status_code == 200
    assert again.json()["Enabled"] is False


async def test_the_secret_is_stored_encrypted_and_never_logged(
    world: World,
    provider: Provider,
    app_state: AppHarness,
    caplog: pytest.LogCaptureFixture,
) -> None:
    org = world.org()
    with caplog.at_level(logging.DEBUG):
        await configured(org, provider)
    assert CLIENT_SECRET not in caplog.text
    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=False) as session:
            row = await session.scalar(
                select(SsoConfiguration).where(SsoConfiguration.organization_id == org.id)
            )
    assert row is not None
    assert CLIENT_SECRET not in row.client_secret_sealed
    assert row.client_secret_sealed.startswith(storage_sealing.PREFIX)


async def test_the_secret_is_required_once_then_kept_when_left_out(
    world: World, provider: Provider, app_state: AppHarness
) -> None:
    org = world.org()
    first = await configure(org, provider, ClientSecret=None)
    assert first.status_code == 422
    assert first.json()["errors"][0]["field"] == "ClientSecret"
    await configured(org, provider)
    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=False) as session:
            before = await session.scalar(select(SsoConfiguration.client_secret_sealed))
    body = {"Issuer": provider.issuer, "ClientId": "questline", "GroupsClaim": "roles"}
    kept = await org.client.put("/organization/sso", json=body, headers=org.admin)
    assert kept.status_code == 200, kept.text
    assert kept.json()["GroupsClaim"] == "roles"
    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=False) as session:
            after = await session.scalar(select(SsoConfiguration.client_secret_sealed))
    assert after == before


async def test_an_unreachable_or_wrong_issuer_is_422_with_the_reason(
    world: World, provider: Provider
) -> None:
    org = world.org()
    with running_provider() as gone:
        issuer = gone.issuer
    unreachable = await configure(org, provider, Issuer=issuer)
    assert unreachable.status_code == 422
    assert "cannot be fetched" in unreachable.json()["detail"]
    assert unreachable.json()["errors"][0]["field"] == "Issuer"

    not_a_provider = await configure(org, provider, Issuer=f"{provider.issuer}/realms/none")
    assert not_a_provider.status_code == 422
    assert "HTTP 404" in not_a_provider.json()["detail"]

    for bad in ("not a url", "ftp://idp.example.org", "https://user:pw@idp.example.org"):
        response = await configure(org, provider, Issuer=bad)
        assert response.status_code == 422, (bad, response.text)
    missing = await org.client.get("/organization/sso", headers=org.admin)
    assert missing.status_code == 404


async def test_https_is_required_unless_allowed(
    world: World, provider: Provider, app_state: AppHarness
) -> None:
    app_state.configure(oidc_allow_http=False)
    # The directory was made with the settings of its first use: make it anew.
    app_state.app.state.sso_providers = None
    org = world.org()
    response = await configure(org, provider)
    assert response.status_code == 422
    assert "QUESTLINE_OIDC_ALLOW_HTTP" in response.json()["detail"]


async def test_private_addresses_are_refused_unless_allowed(
    world: World, provider: Provider, app_state: AppHarness
) -> None:
    app_state.configure(oidc_allow_private_issuers=False)
    app_state.app.state.sso_providers = None
    org = world.org()
    response = await configure(org, provider)
    assert response.status_code == 422
    assert "QUESTLINE_OIDC_ALLOW_PRIVATE_ISSUERS" in response.json()["detail"]


async def test_hostile_bodies_are_422_never_5xx(world: World, provider: Provider) -> None:
    org = world.org()
    bodies: list[object] = [
        {"Issuer": provider.issuer},
        {"Issuer": provider.issuer, "ClientId": "q", "ClientSecret": "s", "Extra": 1},
        {"Issuer": 5, "ClientId": "q", "ClientSecret": "s"},
        {"Issuer": provider.issuer, "ClientId": "q\x00", "ClientSecret": "s"},
        {"Issuer": provider.issuer, "ClientId": "q", "ClientSecret": "s", "AdminGroups": "x"},
        {"Issuer": provider.issuer, "ClientId": "q", "ClientSecret": "s", "AdminGroups": [""]},
        {
            "Issuer": provider.issuer,
            "ClientId": "q",
            "ClientSecret": "s",
            "AllowedEmailDomains": ["not a domain"],
        },
        {"Issuer": "h" * 5000, "ClientId": "q", "ClientSecret": "s"},
        [1, 2],
    ]
    for body in bodies:
        response = await org.client.put("/organization/sso", json=body, headers=org.admin)
        assert response.status_code == 422, (body, response.text)
        assert response.headers["content-type"] == "application/problem+json"


async def test_only_admins_configure_and_each_organization_sees_its_own(
    world: World, provider: Provider
) -> None:
    mine, theirs = world.org(), world.org()
    await configured(mine, provider)
    assert (await configure(mine, provider, ClientId="x")).status_code == 200
    member = await mine.client.get("/organization/sso", headers=mine.member)
    assert member.status_code == 403
    put = await mine.client.put(
        "/organization/sso",
        json={"Issuer": provider.issuer, "ClientId": "q", "ClientSecret": "s"},
        headers=mine.member,
    )
    assert put.status_code == 403
    assert (await mine.client.delete("/organization/sso", headers=mine.member)).status_code == 403
    anonymous = await mine.client.get("/organization/sso")
    assert anonymous.status_code == 401
    # Another organization sees none, and deleting there leaves this one alone.
    assert (await theirs.client.get("/organization/sso", headers=theirs.admin)).status_code == 404
    gone = await theirs.client.delete("/organization/sso", headers=theirs.admin)
    assert gone.status_code == 404
    assert (await mine.client.get("/organization/sso", headers=mine.admin)).status_code == 200


async def test_delete_removes_it(world: World, provider: Provider) -> None:
    org = world.org()
    await configured(org, provider)
    deleted = await org.client.delete("/organization/sso", headers=org.admin)
    assert deleted.status_code == 204
    assert (await org.client.get("/organization/sso", headers=org.admin)).status_code == 404
    assert (await org.client.get(f"/auth/oidc/{org.id}")).status_code == 404


async def _stored(app_state: AppHarness, org: Org) -> tuple[str, str, str, list[str]]:
    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=False) as session:
            row = await session.scalar(
                select(SsoConfiguration).where(SsoConfiguration.organization_id == org.id)
            )
    assert row is not None
    return row.issuer, row.client_id, row.client_secret_sealed, list(row.admin_groups)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param("issuer", id="another-issuer"),
        pytest.param("client", id="another-client-id"),
    ],
)
async def test_the_secret_follows_the_issuer_and_client(
    world: World,
    provider: Provider,
    other_provider: Provider,
    app_state: AppHarness,
    change: str,
) -> None:
    """A stored secret belongs to one client at one provider: a PUT that names another
    issuer or client id without a new secret is refused, and changes nothing."""
    org = world.org()
    await configured(org, provider)
    before = await _stored(app_state, org)
    moved = {"Issuer": other_provider.issuer} if change == "issuer" else {"ClientId": "questline-2"}
    refused = await configure(org, provider, ClientSecret=None, AdminGroups=["x"], **moved)
    assert refused.status_code == 422, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert [e["field"] for e in refused.json()["errors"]] == ["ClientSecret"]
    assert await _stored(app_state, org) == before
    log = await org.client.get("/audit", params={"action": "sso.changed"}, headers=org.admin)
    assert log.json() == []

    accepted = await configure(org, provider, ClientSecret="a-new-secret-9c1b", **moved)
    assert accepted.status_code == 200, accepted.text
    issuer, client_id, sealed, _ = await _stored(app_state, org)
    assert (issuer, client_id) == (
        (other_provider.issuer, "questline")
        if change == "issuer"
        else (provider.issuer, "questline-2")
    )
    assert sealed != before[2]


async def test_a_trailing_slash_is_the_same_issuer(
    world: World, provider: Provider, app_state: AppHarness
) -> None:
    """The issuer is compared as the provider names it: the admin's spelling with a
    trailing slash is no other issuer, and the stored secret is kept."""
    org = world.org()
    await configured(org, provider)
    before = await _stored(app_state, org)
    same = await configure(org, provider, Issuer=provider.issuer + "/", ClientSecret=None)
    assert same.status_code == 200, same.text
    assert (await _stored(app_state, org))[2] == before[2]


async def test_the_audit_entry_has_the_values_before_and_never_the_secret(
    world: World, provider: Provider, other_provider: Provider
) -> None:
    org = world.org()
    await configured(org, provider, AllowedEmailDomains=["example.org"])
    changed = await configure(
        org,
        other_provider,
        ClientSecret="a-new-secret-9c1b",
        ClientId="questline-2",
        AdminGroups=["staff"],
        AllowedEmailDomains=[],
        Enabled=False,
    )
    assert changed.status_code == 200, changed.text
    kept = await configure(org, other_provider, ClientSecret=None, ClientId="questline-2")
    assert kept.status_code == 200, kept.text
    removed = await org.client.delete("/organization/sso", headers=org.admin)
    assert removed.status_code == 204

    log = await org.client.get("/audit", headers=org.admin)
    assert log.status_code == 200
    assert CLIENT_SECRET not in log.text
    assert "a-new-secret-9c1b" not in log.text
    entries = {e["Action"]: e for e in log.json() if e["Action"].startswith("sso.")}
    [rotated, unchanged] = [e["Changes"] for e in log.json() if e["Action"] == "sso.changed"][::-1]
    assert rotated == {
        "Issuer": {"Before": provider.issuer, "After": other_provider.issuer},
        "ClientId": {"Before": "questline", "After": "questline-2"},
        "ClientCredential": {"Before": "stored", "After": "replaced"},
        "AdminGroups": {"Before": ["questline-admins"], "After": ["staff"]},
        "AllowedEmailDomains": {"Before": ["example.org"], "After": []},
        "Enabled": {"Before": True, "After": False},
    }
    # The second PUT kept the secret and changed the admin groups and Enabled back.
    assert unchanged == {
        "AdminGroups": {"Before": ["staff"], "After": ["questline-admins"]},
        "Enabled": {"Before": False, "After": True},
    }
    assert entries["sso.configured"]["Changes"]["ClientCredential"] == {
        "Before": None,
        "After": "stored",
    }
    gone = entries["sso.removed"]["Changes"]
    assert gone["Issuer"] == {"Before": other_provider.issuer, "After": None}
    assert gone["ClientCredential"] == {"Before": "stored", "After": None}
