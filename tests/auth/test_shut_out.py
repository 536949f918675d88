"""A member deactivated or deleted is signed out: every path that deactivates or deletes
it ends its dashboard sessions, and a session whose member a path left deactivated
stops working on the next request all the same (one indexed look-up more a request)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import event, func, select, update

from questline.auth import sessions
from questline.auth.models import DashboardSession, SigninCode
from questline.members.models import Member
from questline.storage import tenancy
from questline.web.identity import Role
from tests.factories import Org, World
from tests.scim.conftest import directory_for
from tests.scim.support import PATCH_OP
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def cookie_of(state: AppHarness, client: httpx.AsyncClient, org: Org, email: str) -> str:
    """A signed-in session of the member with ``email`` (its cookie value)."""
    with tenancy.acting_for(org.id):  # minted directly: as the organization, like the command line
        async with state.db.session(write=True) as session:
            code = await sessions.mint_signin_code(
                session,
                settings=state.settings,
                org_id=org.id,
                role=Role.MEMBER,
                subject=email,
                email=email,
            )
    signed_in = await client.post("/auth/session", json={"Code": code})
    assert signed_in.status_code == 201, signed_in.text
    value = signed_in.cookies[sessions.SESSION_COOKIE]
    client.cookies.clear()
    return value


def with_cookie(value: str) -> dict[str, str]:
    return {"Cookie": f"{sessions.SESSION_COOKIE}={value}"}


async def works(client: httpx.AsyncClient, cookie: str) -> bool:
    session = await client.get("/auth/session", headers=with_cookie(cookie))
    teams = await client.get("/team", headers=with_cookie(cookie))
    assert session.status_code == teams.status_code, (session.text, teams.text)
    assert session.status_code in (200, 401), session.text
    if session.status_code == 401:
        assert session.headers["content-type"] == "application/problem+json"
        assert teams.headers["content-type"] == "application/problem+json"
    return session.status_code == 200


async def stored(state: AppHarness, org: Org) -> tuple[int, int]:
    """The organization's sessions and unspent codes."""
    with tenancy.acting_for(org.id):
        async with state.db.session(write=False) as session:
            counts = []
            for table in (DashboardSession, SigninCode):
                counts.append(
                    int(
                        await session.scalar(
                            select(func.count())
                            .select_from(table)
                            .where(table.organization_id == org.id)
                        )
                        or 0
                    )
                )
    return counts[0], counts[1]


@pytest.mark.parametrize(
    "deactivation",
    [
        (
            "PATCH",
            {"schemas": [PATCH_OP], "Operations": [{"op": "replace", "value": {"active": False}}]},
        ),
        (
            "PUT",
            {
                "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                "userName": "ada@example.org",
                "name": {"givenName": "Ada"},
                "emails": [{"value": "ada@example.org", "primary": True}],
                "active": False,
            },
        ),
        ("DELETE", None),
    ],
    ids=["patch", "put", "delete"],
)
async def test_the_directory_deactivating_or_deleting_a_member_ends_its_sessions(
    client: httpx.AsyncClient,
    app_state: AppHarness,
    world: World,
    deactivation: tuple[str, Any],
) -> None:
    org = world.org()
    directory = await directory_for(org, world)
    ada = await directory.create_user("ada@example.org")
    await directory.create_user("bo@example.org", given="Bo")
    # Two browsers, one signed in with the address in another case.
    first = await cookie_of(app_state, client, org, "ada@example.org")
    second = await cookie_of(app_state, client, org, "ADA@Example.org")
    bo = await cookie_of(app_state, client, org, "bo@example.org")
    assert await works(client, first)
    assert await works(client, second)

    method, body = deactivation
    response = await directory.request(method, f"/Users/{ada['id']}", body)
    assert response.status_code in (200, 204), response.text

    assert not await works(client, first)
    assert not await works(client, second)
    assert await works(client, bo)  # only hers
    assert await stored(app_state, org) == (1, 0)


async def test_a_session_of_a_member_left_deactivated_stops_working(
    client: httpx.AsyncClient, app_state: AppHarness, world: World
) -> None:
    """A path that deactivates without ending the sessions: the next request is refused."""
    org = world.org()
    directory = await directory_for(org, world)
    await directory.create_user("ada@example.org")
    cookie = await cookie_of(app_state, client, org, "Ada@example.org")
    assert await works(client, cookie)

    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=True) as session:
            await session.execute(
                update(Member).where(Member.organization_id == org.id).values(active=False)
            )
    assert not await works(client, cookie)
    with tenancy.acting_for(org.id):
        async with app_state.db.session(write=True) as session:
            await session.execute(
                update(Member).where(Member.organization_id == org.id).values(active=True)
            )
    assert await works(client, cookie)  # activated again: the session was never ended


@contextmanager
def counted(state: AppHarness) -> Iterator[list[str]]:
    statements: list[str] = []

    def note(*args: Any) -> None:
        statements.append(str(args[2]))

    engine = state.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", note)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", note)


async def test_a_session_request_looks_the_member_up_once(
    client: httpx.AsyncClient, app_state: AppHarness, world: World
) -> None:
    org = world.org()
    directory = await directory_for(org, world)
    await directory.create_user("ada@example.org")
    cookie = await cookie_of(app_state, client, org, "ada@example.org")
    member_token = world.tokens.mint(role=Role.MEMBER, org_id=org.id, subject="ada@example.org")
    bearer = {"Authorization": f"Bearer {member_token}"}
    for headers in (bearer, with_cookie(cookie)):  # warm: the organization is known
        assert (await client.get("/team", headers=headers)).status_code == 200

    with counted(app_state) as by_token:
        assert (await client.get("/team", headers=bearer)).status_code == 200
    with counted(app_state) as by_cookie:
        assert (await client.get("/team", headers=with_cookie(cookie))).status_code == 200

    def selects(statements: list[str]) -> list[str]:
        return [s for s in statements if s.lstrip().upper().startswith("SELECT")]

    extra = len(selects(by_cookie)) - len(selects(by_token))
    # The session's row, and the member's state by its unique (organization, e-mail) key.
    assert extra == 2, (by_token, by_cookie)
    lookups = [s for s in by_cookie if "FROM members" in s and "email_key" in s]
    assert len(lookups) == 1, by_cookie
    assert "members.organization_id = " in lookups[0], lookups[0]
