"""A directory speaking ``application/scim+json`` to the service, and its typical
sequence (first sync, moves, deactivations): shared by tests/scim and
bench/probes/scim_sync.py."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

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


PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


@dataclass
class SyncRun:
    """What ``directory_sequence`` made, and how long each phase took (seconds)."""

    users: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)


async def directory_sequence(
    directory: Directory, *, users: int, groups: int, moves: int, deactivate: int
) -> SyncRun:
    """A directory's first sync and churn, as Okta or Entra ID send it: ``users`` users
    (one POST each), ``groups`` groups with ``users // groups`` members each (one POST
    each, members listed), ``moves`` members moved from a group to the next (a PATCH
    remove with a ``members[value eq "…"]`` path, a PATCH add), and the last
    ``deactivate`` users deactivated (PATCH replace ``active``)."""
    done = SyncRun()
    started = time.perf_counter()
    for i in range(users):
        created = await directory.create_user(f"p{i:05}@example.org", f"P{i}", externalId=f"u{i}")
        done.users.append(created["id"])
    _phase(done, "users", started, users)
    size = users // groups
    started = time.perf_counter()
    for g in range(groups):
        members = done.users[g * size : (g + 1) * size]
        done.groups.append((await directory.create_group(f"Group {g:04}", members))["id"])
    _phase(done, "groups", started, groups)
    started = time.perf_counter()
    for g in range(moves):
        member = done.users[(g % groups) * size]
        source, target = done.groups[g % groups], done.groups[(g + 1) % groups]
        removal = {"op": "remove", "path": f'members[value eq "{member}"]'}
        addition = {"op": "add", "path": "members", "value": [{"value": member}]}
        for group, operation in ((source, removal), (target, addition)):
            body = {"schemas": [PATCH_OP], "Operations": [operation]}
            response = await directory.request("PATCH", f"/Groups/{group}", body)
            assert response.status_code == 200, response.text
    _phase(done, "moves", started, 2 * moves)
    started = time.perf_counter()
    off = {
        "schemas": [PATCH_OP],
        "Operations": [{"op": "replace", "path": "active", "value": False}],
    }
    for user in done.users[len(done.users) - deactivate :]:
        response = await directory.request("PATCH", f"/Users/{user}", off)
        assert response.status_code == 200, response.text
    _phase(done, "deactivations", started, deactivate)
    return done


def _phase(done: SyncRun, name: str, started: float, requests: int) -> None:
    done.seconds[name] = time.perf_counter() - started
    done.requests[name] = requests
