"""The caller's member (``members.callers``): named by the token's ``email`` claim (or its
subject), and the 403 rule for acting on a team."""

from __future__ import annotations

import uuid

import pytest

from questline.members.callers import acting_member, caller_member
from questline.storage import tenancy
from questline.web.errors import Forbidden
from questline.web.identity import Caller, Role
from tests.factories import Org, World, unique

pytestmark = pytest.mark.anyio


async def _member_in_new_team(org: Org, email: str) -> tuple[str, str]:
    team = await org.create_team()
    added = await org.add_member(team["Id"], email=email)
    assert added.status_code == 201, added.text
    return team["Id"], added.json()["Id"]


async def test_the_email_claim_names_the_member_ignoring_case(world: World) -> None:
    org = world.org()
    email = f"{unique('ada')}@example.org"
    team_id, member_id = await _member_in_new_team(org, email)
    other_team = (await org.create_team())["Id"]
    caller = Caller(subject="sso|123", role=Role.MEMBER, org_id=org.id, email=email.upper())
    with tenancy.acting_for(org.id):  # as the request boundary does (row security)
        async with world.db.session() as session:
            assert await caller_member(session, caller=caller) == uuid.UUID(member_id)
            acting = await acting_member(session, caller=caller, team_id=uuid.UUID(team_id))
            assert acting == uuid.UUID(member_id)
            with pytest.raises(Forbidden, match="team's members"):
                await acting_member(session, caller=caller, team_id=uuid.UUID(other_team))


async def test_a_caller_without_a_member_is_refused_and_an_admin_is_not(world: World) -> None:
    org = world.org()
    email = f"{unique('ada')}@example.org"
    team_id, member_id = await _member_in_new_team(org, email)
    team = uuid.UUID(team_id)
    nobody = Caller(subject="member", role=Role.MEMBER, org_id=org.id)
    admin = Caller(subject="admin", role=Role.ADMIN, org_id=org.id)
    admin_member = Caller(subject="admin", role=Role.ADMIN, org_id=org.id, email=email)
    with tenancy.acting_for(org.id):  # as the request boundary does (row security)
        async with world.db.session() as session:
            assert await caller_member(session, caller=nobody) is None
            with pytest.raises(Forbidden, match="names no member"):
                await acting_member(session, caller=nobody, team_id=team)
            assert await acting_member(session, caller=admin, team_id=team) is None
            assert await acting_member(session, caller=admin_member, team_id=team) == uuid.UUID(
                member_id
            )


async def test_another_organizations_member_is_no_callers_member(world: World) -> None:
    org, other = world.org(), world.org()
    email = f"{unique('ada')}@example.org"
    team_id, _ = await _member_in_new_team(org, email)
    await _member_in_new_team(other, email)  # the same address, another organization
    stranger = Caller(subject="member", role=Role.MEMBER, org_id=other.id, email=email)
    with tenancy.acting_for(other.id):  # as the request boundary does (row security)
        async with world.db.session() as session:
            with pytest.raises(Forbidden, match="team's members"):
                await acting_member(session, caller=stranger, team_id=uuid.UUID(team_id))


async def test_a_subject_that_is_the_members_id_names_it(world: World) -> None:
    org = world.org()
    team_id, member_id = await _member_in_new_team(org, f"{unique('ada')}@example.org")
    caller = Caller(subject=member_id, role=Role.MEMBER, org_id=org.id)
    with tenancy.acting_for(org.id):  # as the request boundary does (row security)
        async with world.db.session() as session:
            acting = await acting_member(session, caller=caller, team_id=uuid.UUID(team_id))
            assert acting == uuid.UUID(member_id)
