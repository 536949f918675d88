"""The isolation matrix: every route of the application by every kind of caller.

``EXPECTED`` holds, for each (method, path template) of the route table, the status each
caller gets. The route table is read from the application itself, so a route added
without an entry here fails ``test_every_route_has_an_entry``: decide who may call it
first. After the matrix ran, the owner's organization must read exactly as before.

Callers: ``anonymous`` (no token), ``forged`` (a well-formed token signed with another
key), ``stranger`` (another organization's admin), ``member`` (the owner's
organization's member), ``operator`` (platform staff, no organization) and, as the
positive control that shows each request is well-formed, ``admin`` (the owner's admin,
run on a separate organization so that its changes do not touch the snapshot).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import jwt
import pytest
from fastapi import FastAPI

from tests.factories import Org, World, bearer, unique
from tests.reliability.seeding import seed_organization
from tests.support.routes import route_table

pytestmark = pytest.mark.anyio

CALLERS = ("anonymous", "forged", "stranger", "member", "operator")
Body = Callable[[], Any] | None


@dataclass(frozen=True)
class Expect:
    statuses: dict[str, int]
    body: Body = None
    snapshot: bool = False
    """A GET of the owner's data that must read the same before and after."""
    forbidden_text: bool = True
    """The owner's ids must not appear in what other callers get."""
    extra: dict[str, str] = field(default_factory=dict)
    """Query string for the request, e.g. to make a DELETE name something real."""


def public(status: int = 200) -> Expect:
    """Health, metrics and docs: anyone, no organization data in them."""
    return Expect(dict.fromkeys((*CALLERS, "admin"), status), forbidden_text=False)


def read(*, scoped: bool) -> Expect:
    """Member reads. ``scoped``: the path names one of the owner's resources."""
    return Expect(
        {
            "anonymous": 401,
            "forged": 401,
            "stranger": 404 if scoped else 200,
            "member": 200,
            "operator": 403,
            "admin": 200,
        },
        snapshot=True,
    )


def write(status: int, *, scoped: bool, body: Body = None) -> Expect:
    """Admin writes. Unscoped ones (``POST /team``) act in the stranger's own organization."""
    return Expect(
        {
            "anonymous": 401,
            "forged": 401,
            "stranger": 404 if scoped else status,
            "member": 403,
            "operator": 403,
            "admin": status,
        },
        body=body,
    )


def _new_member() -> dict[str, str]:
    return {"email": f"{unique('iso')}@example.org", "givenName": "Iso"}


EXPECTED: dict[tuple[str, str], Expect] = {
    # Operations (no authentication).
    ("GET", "/healthz"): public(),
    ("GET", "/readyz"): public(),
    ("GET", "/metrics"): public(),
    ("GET", "/openapi.json"): public(),
    ("GET", "/docs"): public(),
    ("*", "/docs-assets/{path}"): public(),
    # Teams.
    ("GET", "/team"): read(scoped=False),
    ("POST", "/team"): write(201, scoped=False, body=lambda: {"name": unique("Iso")}),
    ("GET", "/team/{team_id}"): read(scoped=True),
    ("PATCH", "/team/{team_id}"): write(200, scoped=True, body=lambda: {"Tags": ["changed"]}),
    ("DELETE", "/team/{team_id}"): write(204, scoped=True),
    ("GET", "/team/{team_id}/members"): read(scoped=True),
    ("POST", "/team/{team_id}/members"): write(201, scoped=True, body=_new_member),
    ("DELETE", "/team/{team_id}/members/{member_id}"): write(204, scoped=True),
    ("POST", "/team/{team_id}/isadminteam"): write(200, scoped=True),
    ("POST", "/team/{team_id}/survey"): write(200, scoped=True),
    # Members.
    ("GET", "/member"): read(scoped=False),
    ("GET", "/member/{member_id}"): read(scoped=True),
}
"""Add the routes of disciplines, progress, leaderboard, bulk and the dashboard here as
they land on main (the completeness test names each one that is missing)."""


def _app_routes(app: FastAPI) -> list[tuple[str, str]]:
    return [entry.key for entry in route_table(app)]


async def test_every_route_has_an_entry(app: FastAPI) -> None:
    routes = _app_routes(app)
    missing = [key for key in routes if key not in EXPECTED]
    stale = [key for key in EXPECTED if key not in routes]
    assert not missing, (
        f"routes without an isolation entry: {missing}. Add each to EXPECTED in "
        "tests/reliability/test_isolation_matrix.py: who may call it and what every "
        "other caller gets."
    )
    assert not stale, f"EXPECTED names routes the app does not have: {stale}"


@dataclass
class Resolved:
    """The owner's ids for each path parameter."""

    ids: dict[str, str]

    def url(self, method: str, path: str, extra: dict[str, str]) -> str:
        if method == "*":
            path = path.replace("{path}", "favicon-32x32.png")
        url = path.format(**{k: v for k, v in self.ids.items() if "{" + k + "}" in path})
        if extra:
            url += "?" + "&".join(f"{k}={v}" for k, v in extra.items())
        return url


async def _resolve(org: Org, paths: dict[str, Any]) -> Resolved:
    seeded = await seed_organization(org, paths, teams=2)
    team_id = seeded.kept["teams"][0]
    detail = await org.client.get(f"/team/{team_id}", headers=org.admin)
    assert detail.status_code == 200, detail.text
    ids = {"team_id": team_id, "member_id": detail.json()["Members"][0]["Id"]}
    for param, pool in (("discipline_id", "disciplines"), ("task_id", "tasks")):
        if seeded.kept.get(pool):
            ids[param] = seeded.kept[pool][0]
    return Resolved(ids)


def _forged_token(org: Org) -> str:
    now = dt.datetime.now(dt.UTC)
    claims = {
        "sub": "admin",
        "org": str(org.id),
        "role": "admin",
        "iss": "questline",
        "aud": "questline",
        "iat": now,
        "exp": now + dt.timedelta(hours=1),
    }
    return jwt.encode(claims, "not-the-secret-" + uuid.uuid4().hex, algorithm="HS256")


async def _snapshot(client: httpx.AsyncClient, org: Org, resolved: Resolved) -> dict[str, Any]:
    """Every authenticated GET, as the owner's admin reads it."""
    taken: dict[str, Any] = {}
    for (method, path), expect in EXPECTED.items():
        if method == "GET" and expect.snapshot:
            url = resolved.url(method, path, expect.extra)
            response = await client.get(url, headers=org.admin)
            assert response.status_code == 200, (url, response.text)
            taken[url] = response.json()
    return taken


def _owner_values(node: Any) -> set[str]:
    """The distinctive strings of the owner's data (ids, names, e-mails)."""
    if isinstance(node, dict):
        return set().union(*(_owner_values(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(_owner_values(v) for v in node)) if node else set()
    if isinstance(node, str) and len(node) >= 8 and not node.endswith("Z"):
        return {node}
    return set()


def _order(key: tuple[str, str]) -> tuple[int, int]:
    """Reads first, deletions last, the longest deletion path before shorter ones."""
    method, path = key
    rank = {"GET": 0, "*": 0, "POST": 1, "PUT": 2, "PATCH": 2, "DELETE": 3}.get(method, 1)
    return (rank, -len(path) if method == "DELETE" else 0)


async def _call(
    client: httpx.AsyncClient, key: tuple[str, str], expect: Expect, url: str, headers: Any
) -> httpx.Response:
    method = "GET" if key[0] == "*" else key[0]
    body = expect.body() if expect.body is not None else None
    return await client.request(method, url, json=body, headers=headers)


async def test_every_caller_gets_its_status_and_the_owner_is_untouched(
    app: FastAPI, world: World
) -> None:
    owner, stranger = world.org(), world.org()
    await stranger.create_team()
    paths = app.openapi()["paths"]
    resolved = await _resolve(owner, paths)
    headers = {
        "anonymous": {},
        "forged": bearer(_forged_token(owner)),
        "stranger": stranger.admin,
        "member": owner.member,
        "operator": bearer(world.operator_token()),
    }
    before = await _snapshot(world.client, owner, resolved)
    secrets = _owner_values(before) | {str(owner.id)}

    mismatches: list[str] = []
    leaks: list[str] = []
    for key in sorted(EXPECTED, key=_order):
        expect = EXPECTED[key]
        url = resolved.url(key[0], key[1], expect.extra)
        for caller in CALLERS:
            response = await _call(world.client, key, expect, url, headers[caller])
            if response.status_code != expect.statuses[caller]:
                mismatches.append(
                    f"{key[0]} {key[1]} as {caller}: {response.status_code} "
                    f"(expected {expect.statuses[caller]}) {response.text[:200]}"
                )
            if caller != "member" and expect.forbidden_text:
                shown = [v for v in secrets if v in response.text and v not in url]
                leaks += [f"{key[0]} {key[1]} as {caller} shows {value!r}" for value in shown]
    assert not mismatches, "\n".join(mismatches)
    assert not leaks, "\n".join(leaks)
    assert await _snapshot(world.client, owner, resolved) == before


async def test_the_owner_admin_succeeds_on_every_route(app: FastAPI, world: World) -> None:
    """The positive control: every request of the matrix is one the owner may make."""
    owner = world.org()
    resolved = await _resolve(owner, app.openapi()["paths"])
    failures: list[str] = []
    for key in sorted(EXPECTED, key=_order):
        expect = EXPECTED[key]
        url = resolved.url(key[0], key[1], expect.extra)
        response = await _call(world.client, key, expect, url, owner.admin)
        if response.status_code != expect.statuses["admin"]:
            failures.append(f"{key}: {response.status_code} {response.text[:200]}")
    assert not failures, "\n".join(failures)
