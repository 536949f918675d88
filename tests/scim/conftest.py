"""SCIM tests: an organization of its own per test, its scim token, and a client that
speaks ``application/scim+json`` to the in-process application."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from questline.auth.tokens import TokenService
from questline.web.identity import Role
from tests.factories import Org, World

SCIM = "application/scim+json"
BASE = "/scim/v2"


@dataclass
class Directory:
    """A directory provisioning one organization through ``/scim/v2``."""

    client: httpx.AsyncClient
    org_id: uuid.UUID
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "Content-Type": SCIM}

    async def request(
        self, method: str, path: str, body: Any = None, **headers: str
    ) -> httpx.Response:
        return await self.client.request(
            method, BASE + path, json=body, headers={**self.headers, **headers}
        )

    async def create_user(self, email: str, given: str = "Ada", **extra: Any) -> dict[str, Any]:
        body = {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
            "userName": email,
            "name": {"givenName": given},
            "emails": [{"value": email, "primary": True}],
            **extra,
        }
        response = await self.request("POST", "/Users", body)
        assert response.status_code == 201, response.text
        return dict(response.json())

    async def create_group(self, name: str, members: Sequence[str] = ()) -> dict[str, Any]:
        body = {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
            "displayName": name,
            "members": [{"value": m} for m in members],
        }
        response = await self.request("POST", "/Groups", body)
        assert response.status_code == 201, response.text
        return dict(response.json())


def directory_for(org: Org, tokens: TokenService) -> Directory:
    token = tokens.mint(role=Role.SCIM, org_id=org.id, subject="directory")
    return Directory(client=org.client, org_id=org.id, token=token)


@pytest.fixture
def org(world: World) -> Org:
    return world.org()


@pytest.fixture
def directory(org: Org, world: World) -> Directory:
    """The directory of ``org``."""
    return directory_for(org, world.tokens)
