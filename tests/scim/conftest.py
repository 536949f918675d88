"""SCIM tests: an organization of its own per test, its scim token, and a client that
speaks ``application/scim+json`` to the in-process application."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from questline.web.identity import Role
from tests.support.harness import AppHarness

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

    async def create_group(self, name: str, members: list[str] = ()) -> dict[str, Any]:  # type: ignore[assignment]
        body = {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
            "displayName": name,
            "members": [{"value": m} for m in members],
        }
        response = await self.request("POST", "/Groups", body)
        assert response.status_code == 201, response.text
        return dict(response.json())


def directory_for(client: httpx.AsyncClient, app_state: AppHarness) -> Directory:
    org_id = uuid.uuid4()
    token = app_state.tokens.mint(role=Role.SCIM, org_id=org_id, subject="directory")
    return Directory(client=client, org_id=org_id, token=token)


@pytest.fixture
def directory(client: httpx.AsyncClient, app_state: AppHarness) -> Directory:
    return directory_for(client, app_state)
