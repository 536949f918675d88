"""Factories: organizations with their tokens, teams and members, made through the API."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from questline.auth.tokens import TokenService
from questline.storage.db import Database
from questline.web.identity import Role

_counter = itertools.count(1)


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_counter)}"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Org:
    """One organization as its callers see it."""

    id: uuid.UUID
    client: httpx.AsyncClient
    admin_token: str
    member_token: str

    @property
    def admin(self) -> dict[str, str]:
        return bearer(self.admin_token)

    @property
    def member(self) -> dict[str, str]:
        return bearer(self.member_token)

    async def create_team(self, name: str | None = None, **fields: Any) -> dict[str, Any]:
        body = {"name": name or unique("Team"), **fields}
        response = await self.client.post("/team", json=body, headers=self.admin)
        assert response.status_code == 201, response.text
        return dict(response.json())

    async def add_member(
        self, team_id: str, email: str | None = None, given_name: str = "Ada"
    ) -> httpx.Response:
        body = {"email": email or f"{unique('m')}@example.org", "givenName": given_name}
        return await self.client.post(f"/team/{team_id}/members", json=body, headers=self.admin)

    async def create_member(self, email: str | None = None) -> dict[str, Any]:
        """A member of the organization (made by adding it to a scratch team)."""
        team = await self.create_team()
        response = await self.add_member(team["Id"], email=email)
        assert response.status_code == 201, response.text
        return dict(response.json())

    async def teams(self) -> list[dict[str, Any]]:
        response = await self.client.get("/team", headers=self.admin)
        assert response.status_code == 200, response.text
        return list(response.json())


@dataclass
class World:
    client: httpx.AsyncClient
    tokens: TokenService
    db: Database
    orgs: list[Org] = field(default_factory=list)

    def org(self) -> Org:
        org_id = uuid.uuid4()
        org = Org(
            id=org_id,
            client=self.client,
            admin_token=self.tokens.mint(role=Role.ADMIN, org_id=org_id, subject="admin"),
            member_token=self.tokens.mint(role=Role.MEMBER, org_id=org_id, subject="member"),
        )
        self.orgs.append(org)
        return org

    def operator_token(self) -> str:
        return self.tokens.mint(role=Role.OPERATOR, org_id=None, subject="operator")
