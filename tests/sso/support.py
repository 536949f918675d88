"""Steps of a sign-in through the test provider, as a browser takes them."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from tests.factories import Org
from tests.sso.provider import Provider

CLIENT_SECRET = "kc-client-secret-4f1e0c7d"


async def configure(org: Org, provider: Provider, **fields: Any) -> httpx.Response:
    body = {
        "Issuer": provider.issuer,
        "ClientId": "questline",
        "ClientSecret": CLIENT_SECRET,
        "AdminGroups": ["questline-admins"],
        **fields,
    }
    return await org.client.put("/organization/sso", json=body, headers=org.admin)


async def configured(org: Org, provider: Provider, **fields: Any) -> dict[str, Any]:
    response = await configure(org, provider, **fields)
    assert response.status_code in (200, 201), response.text
    return dict(response.json())


async def start_login(
    client: httpx.AsyncClient, org_id: uuid.UUID | str, next_path: str | None = None
) -> str:
    """``GET /auth/oidc/{org}/login``: the provider's authorization URL it sends to."""
    params = {"next": next_path} if next_path is not None else {}
    response = await client.get(f"/auth/oidc/{org_id}/login", params=params)
    assert response.status_code == 302, (response.status_code, response.headers)
    return response.headers["location"]


async def come_back(client: httpx.AsyncClient, redirect: str) -> httpx.Response:
    """Follow the provider's redirect to Questline's callback (path and query)."""
    parts = urlsplit(redirect)
    assert parts.path == "/auth/oidc/callback", redirect
    return await client.get(f"{parts.path}?{parts.query}")


async def sign_in(
    client: httpx.AsyncClient,
    provider: Provider,
    org_id: uuid.UUID,
    sub: str,
    *,
    next_path: str | None = None,
    **claims: Any,
) -> httpx.Response:
    """The whole way: claims at the provider, login, the provider's page, callback."""
    provider.set_user(sub, **claims)
    url = await start_login(client, org_id, next_path)
    return await come_back(client, await provider.authorize(url, sub))


def refusal(response: httpx.Response) -> str | None:
    """The ``sso-error`` code of a redirect to the sign-in page (None: not one)."""
    assert response.status_code == 303, response.text
    location = response.headers["location"]
    if not location.startswith("/ui/#/signin?"):
        return None
    return parse_qs(location.split("?", 1)[1])["sso-error"][0]


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
