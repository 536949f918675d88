"""Questline against an LTI 1.3 platform it did not write: OpenLearning's
``lti1p3platform`` (tests/support/third_party_lti.py) talks to Questline running as a
service, over HTTP on loopback. The platform starts the login, signs the launch, checks
the deep-linking response with the key set Questline publishes, verifies Questline's
client assertions at its token endpoint and the bearer tokens at its roster and
gradebook."""

from __future__ import annotations

import re
import time
from typing import Any

import anyio
import httpx
import pytest
from sqlalchemy import select

from questline.members.models import Member
from questline.storage import tenancy
from tests.factories import World
from tests.lti.third_party import launch, on_tool, register, session_cookie
from tests.progress.factories import make_discipline
from tests.support.harness import AppHarness
from tests.support.live import LiveServer
from tests.support.lti_platform import form_fields
from tests.support.third_party_lti import (
    INSTRUCTOR,
    LEARNER,
    Link,
    ThirdPartyPlatform,
    User,
    in_roster,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TICKET = re.compile(r"name=ticket value='([^']+)'")
QUESTLINE_ACTION = re.compile(r"action='([^']+)'")


async def test_a_learner_lands_in_the_organization_and_the_team(
    world: World, tool: LiveServer, third_party: ThirdPartyPlatform
) -> None:
    async with httpx.AsyncClient(base_url=tool.url, timeout=120) as http:
        org, bystander = on_tool(world.org(), http), on_tool(world.org(), http)
        await register(org, third_party)
        team = await org.create_team("Rockets")
        await org.create_team("Comets")
        added = await org.add_member(team["Id"], email="ada@example.org")
        assert added.status_code == 201, added.text
        third_party.enrol("ada", User("ada-sub", [LEARNER], "Ada Lovelace", "Ada@Example.org"))
        # The course's roster lists her: the sync a launch starts keeps her active.
        third_party.set_roster([in_roster("ada-sub", "ada@example.org")])
        third_party.place("team-page", Link(target_link_uri=f"{tool.url}/lti/view/team"))

        answer = await launch(http, third_party, tool, user="ada", link="team-page")
        assert answer.status_code == 303, answer.text
        assert answer.headers["location"] == f"/ui/#/team/{team['Id']}"
        me = await http.get("/auth/session", headers=session_cookie(answer))
        assert me.status_code == 200, me.text
        assert me.json()["OrganizationId"] == str(org.id)
        assert me.json()["Role"] == "member"
        assert me.json()["Email"].lower() == "ada@example.org"
        # No second member was made: the launch found the team's member by e-mail.
        members = (await http.get("/member", headers=org.admin)).json()
        assert [m["Email"].lower() for m in members] == ["ada@example.org"]
        assert (await http.get("/member", headers=bystander.admin)).json() == []
        registration = (await http.get("/lti/platform", headers=org.admin)).json()
        assert registration[0]["ContextTitle"] == "Phishing drills"


async def test_an_instructor_adds_a_disciplines_leaderboard_by_deep_linking(
    world: World, tool: LiveServer, third_party: ThirdPartyPlatform
) -> None:
    async with httpx.AsyncClient(base_url=tool.url, timeout=120) as http:
        org = on_tool(world.org(), http)
        await register(org, third_party)
        created = await http.post(
            "/discipline", json={"Title": "Phishing", "Description": "Spot it"}, headers=org.admin
        )
        assert created.status_code == 201, created.text
        discipline = created.json()["Id"]
        third_party.enrol("grace", User("grace-sub", [INSTRUCTOR], "Grace", "grace@example.org"))
        third_party.set_roster(
            [in_roster("grace-sub", "grace@example.org"), in_roster("ann-sub", "ann@example.org")]
        )
        third_party.place("select-content", Link(deep_linking=True))
        received = len(third_party.data.deep_links)

        picker = await launch(http, third_party, tool, user="grace", link="select-content")
        assert picker.status_code == 200, picker.text
        ticket = TICKET.search(picker.text)
        assert ticket is not None, picker.text
        chosen = await http.post(
            "/lti/deep-link",
            data={"ticket": ticket.group(1), "choice": "discipline", "discipline": discipline},
        )
        assert chosen.status_code == 200, chosen.text
        action = QUESTLINE_ACTION.search(chosen.text)
        assert action is not None
        assert action.group(1) == f"{third_party.base}/deep-link-return"
        # The browser posts the response to the platform, which verifies it with the key
        # set it fetches from Questline.
        returned = await http.post(action.group(1), data=form_fields(chosen.text))
        assert returned.status_code == 200, (returned.text, third_party.data.refused)
        [items] = third_party.data.deep_links[received:]
        url = f"{tool.url}/lti/view/leaderboard?discipline={discipline}"
        assert items == [{"type": "ltiResourceLink", "title": "Leaderboard: Phishing", "url": url}]

        # The link the platform made from it launches onto that leaderboard.
        third_party.enrol("ann", User("ann-sub", [LEARNER], "Ann", "ann@example.org"))
        third_party.place("made-link", Link(target_link_uri=url, resource_link_id="link-dl"))
        opened = await launch(http, third_party, tool, user="ann", link="made-link")
        assert opened.status_code == 303, opened.text
        assert opened.headers["location"] == f"/ui/#/leaderboard?discipline={discipline}"


async def _active(app_state: AppHarness, org_id: object) -> list[str]:
    with tenancy.for_every_organization():
        async with app_state.db.session(write=False) as session:
            rows = await session.scalars(
                select(Member.email).where(
                    Member.organization_id == org_id, Member.active.is_not(False)
                )
            )
            return sorted(rows.all())


async def _synced(
    http: httpx.AsyncClient, admin: dict[str, str], platform_id: str, platform: ThirdPartyPlatform
) -> None:
    """Until the registration shows a sync (a deadline to fail on, not a timed assertion)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        shown = (await http.get(f"/lti/platform/{platform_id}", headers=admin)).json()
        if shown.get("LastSyncAt"):
            return
        await anyio.sleep(0.1)
    raise AssertionError(f"no roster sync; the platform refused: {platform.data.refused}")


async def test_the_roster_is_synced_from_the_platforms_names_and_roles_service(
    world: World, tool: LiveServer, third_party: ThirdPartyPlatform, app_state: AppHarness
) -> None:
    async with httpx.AsyncClient(base_url=tool.url, timeout=120) as http:
        org = on_tool(world.org(), http)
        registered = await register(org, third_party)
        third_party.set_roster(
            [
                in_roster("teacher-sub", "teacher@example.org"),
                in_roster("ben-sub", "ben@example.org"),
                in_roster("cid-sub", None),
                in_roster("dee-sub", "dee@example.org", status="Inactive"),
            ]
        )
        third_party.enrol("teacher", User("teacher-sub", [INSTRUCTOR], "T", "teacher@example.org"))
        third_party.place("course-home", Link())
        launched = await launch(http, third_party, tool, user="teacher", link="course-home")
        assert launched.status_code == 303, launched.text

        # The launch named the roster service: the service syncs it once it answered.
        await _synced(http, org.admin, str(registered["Id"]), third_party)
        active = await _active(app_state, org.id)
        assert "ben@example.org" in active
        assert "teacher@example.org" in active
        assert "dee@example.org" not in active
        assert len(active) == 3  # cid, without an e-mail, by a reserved address
        again = await http.post(f"/lti/platform/{registered['Id']}/sync", headers=org.admin)
        assert again.json() == {"Read": 4, "Added": 0, "Reactivated": 0, "Deactivated": 0}
        # Ben leaves the course.
        third_party.set_roster([p for p in third_party.data.roster if p["user_id"] != "ben-sub"])
        left = await http.post(f"/lti/platform/{registered['Id']}/sync", headers=org.admin)
        assert left.json() == {"Read": 3, "Added": 0, "Reactivated": 0, "Deactivated": 1}
        assert "ben@example.org" not in await _active(app_state, org.id)


async def _scores_after(platform: ThirdPartyPlatform, count: int) -> list[dict[str, Any]]:
    """At least ``count`` scores (a deadline to fail on, not a timed assertion)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        found = platform.scores()
        if len(found) >= count:
            return found
        await anyio.sleep(0.1)
    raise AssertionError(
        f"expected {count} scores, got {platform.scores()}; {platform.data.refused}"
    )


async def test_progress_becomes_a_score_the_platform_verifies_and_keeps(
    world: World, tool: LiveServer, third_party: ThirdPartyPlatform, app_state: AppHarness
) -> None:
    async with httpx.AsyncClient(base_url=tool.url, timeout=120) as http:
        org = on_tool(world.org(), http)
        await register(org, third_party)
        tree = await make_discipline(
            app_state.db, org_id=org.id, shape=[[[10, 20]]], title="Crypto"
        )
        team = await org.create_team("Rockets")
        assert (await org.add_member(team["Id"], email="ada@example.org")).status_code == 201
        third_party.enrol("ada", User("ada-grades", [LEARNER], "Ada", "ada@example.org"))
        third_party.set_roster([in_roster("ada-grades", "ada@example.org")])
        third_party.place("graded", Link())
        launched = await launch(http, third_party, tool, user="ada", link="graded")
        assert launched.status_code == 303, launched.text
        before = len(third_party.scores())

        done = await http.post(
            f"/team/{team['Id']}/progress", json={"TaskId": tree.task(0, 0, 0)}, headers=org.admin
        )
        assert done.status_code == 201, done.text
        [score] = (await _scores_after(third_party, before + 1))[before:]
        assert (score["userId"], score["scoreGiven"], score["scoreMaximum"]) == (
            "ada-grades",
            10,
            30,
        )
        assert score["activityProgress"] == "InProgress"
        assert score["gradingProgress"] == "FullyGraded"
        item = third_party.data.line_items[score["lineItem"]]
        assert (item["label"], item["resourceId"]) == ("Crypto", f"questline-discipline-{tree.id}")
        assert third_party.data.refused == []

        # The platform verifies what posts scores: a made-up bearer token is refused.
        forged = await http.post(
            f"{score['lineItem']}/scores",
            json={"userId": "ada-grades", "scoreGiven": 30, "scoreMaximum": 30},
            headers={"Authorization": "Bearer made.up.token"},
        )
        assert forged.status_code == 401, forged.text
        assert len(third_party.scores()) == before + 1
