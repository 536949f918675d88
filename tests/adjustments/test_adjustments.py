"""Point adjustments through the API: the route's contract, and the score, history,
leaderboard and outbox they change."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest
from sqlalchemy import select, update

from questline.adjustments.models import MAX_POINTS, MAX_SCORE
from questline.events.models import Event
from questline.storage import tenancy
from questline.teams.models import Team
from tests.events.factories import listened_to
from tests.factories import Org, World

pytestmark = pytest.mark.anyio

PAST = "2026-01-01T10:00:00Z"


def url(team: dict[str, Any], suffix: str = "") -> str:
    return f"/team/{team['Id']}/adjustments{suffix}"


async def adjust(org: Org, team: dict[str, Any], points: int, **more: Any) -> dict[str, Any]:
    response = await org.client.post(
        url(team), json={"Points": points, "Reason": "because", **more}, headers=org.admin
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


async def score_of(org: Org, team: dict[str, Any]) -> int:
    response = await org.client.get(f"/team/{team['Id']}", headers=org.member)
    return int(response.json()["Score"])


async def test_an_adjustment_changes_the_score_and_is_listed(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    response = await org.client.post(
        url(team), json={"points": 15, "reason": "  Helped another team  "}, headers=org.admin
    )
    assert response.status_code == 201, response.text
    made = response.json()
    assert made["Points"] == 15
    assert made["Score"] == 15
    assert made["Reason"] == "Helped another team"
    assert made["RecordedBy"] == "admin"
    assert made["WithdrawnAt"] is None
    assert response.headers["Location"].endswith(url(team, f"/{made['Id']}"))
    penalty = await adjust(org, team, -20, At=PAST)
    assert penalty["Score"] == -5
    assert penalty["At"] == PAST
    assert await score_of(org, team) == -5

    listed = await org.client.get(url(team), headers=org.admin)
    assert [a["Id"] for a in listed.json()] == [penalty["Id"], made["Id"]]  # by At
    seen_by_member = await org.client.get(url(team), headers=org.member)
    assert seen_by_member.status_code == 200
    assert {a["RecordedBy"] for a in seen_by_member.json()} == {None}
    one = await org.client.get(url(team, f"/{made['Id']}"), headers=org.member)
    assert one.status_code == 200
    assert one.json()["Points"] == 15


async def test_withdrawing_takes_the_points_back_once(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    made = await adjust(org, team, 40)
    gone = await org.client.delete(url(team, f"/{made['Id']}"), headers=org.admin)
    assert gone.status_code == 204
    assert await score_of(org, team) == 0
    again = await org.client.delete(url(team, f"/{made['Id']}"), headers=org.admin)
    assert again.status_code == 409
    assert await score_of(org, team) == 0
    listed = (await org.client.get(url(team), headers=org.admin)).json()
    assert listed[0]["WithdrawnAt"] is not None
    assert listed[0]["WithdrawnBy"] == "admin"
    graph = (await org.client.get(f"/team/{team['Id']}/graph", headers=org.member)).json()
    assert [p["Score"] for p in graph["Points"]] == [0, 40, 0]


@pytest.mark.parametrize(
    "body",
    [
        {"Points": 0, "Reason": "x"},
        {"Points": "10", "Reason": "x"},
        {"Points": 10.0, "Reason": "x"},
        {"Points": True, "Reason": "x"},
        {"Points": MAX_POINTS + 1, "Reason": "x"},
        {"Points": -MAX_POINTS - 1, "Reason": "x"},
        {"Points": 10**30, "Reason": "x"},
        {"Points": 10},
        {"Points": 10, "Reason": "   "},
        {"Points": 10, "Reason": "x" * 501},
        {"Points": 10, "Reason": "nul\x00"},
        {"Points": 10, "Reason": "x", "At": "2999-01-01T00:00:00Z"},
        {"Points": 10, "Reason": "x", "At": "yesterday"},
        {"Points": 10, "Reason": "x", "Task": "typo"},
        [],
    ],
)
async def test_invalid_adjustments_are_refused(world: World, body: Any) -> None:
    org = world.org()
    team = await org.create_team()
    response = await org.client.post(url(team), json=body, headers=org.admin)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert await score_of(org, team) == 0


async def set_score(world: World, org: Org, team: dict[str, Any], score: int) -> None:
    with tenancy.acting_for(org.id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with world.db.session() as session:
            changed = await session.execute(
                update(Team)
                .where(Team.organization_id == org.id, Team.id == uuid.UUID(team["Id"]))
                .values(score=score)
            )
    assert changed.rowcount == 1  # type: ignore[attr-defined]


async def test_the_largest_adjustments_fit_and_a_score_never_overflows(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    await adjust(org, team, MAX_POINTS)
    penalty = await adjust(org, team, -MAX_POINTS)
    await set_score(world, org, team, MAX_SCORE - 5)
    over = await org.client.post(url(team), json={"Points": 10, "Reason": "x"}, headers=org.admin)
    assert over.status_code == 422, over.text
    assert await score_of(org, team) == MAX_SCORE - 5
    assert (await adjust(org, team, 5))["Score"] == MAX_SCORE
    # Withdrawing the penalty would add MAX_POINTS: refused, not a failed write.
    refused = await org.client.delete(url(team, f"/{penalty['Id']}"), headers=org.admin)
    assert refused.status_code == 422, refused.text
    await set_score(world, org, team, -MAX_SCORE + 5)
    under = await org.client.post(url(team), json={"Points": -6, "Reason": "x"}, headers=org.admin)
    assert under.status_code == 422, under.text
    assert (await adjust(org, team, -5))["Score"] == -MAX_SCORE


async def test_roles_organizations_and_archived_teams(world: World) -> None:
    org, other = world.org(), world.org()
    team = await org.create_team()
    body = {"Points": 5, "Reason": "x"}
    as_member = await org.client.post(url(team), json=body, headers=org.member)
    assert as_member.status_code == 403
    for headers in (other.admin, other.member):
        assert (await org.client.post(url(team), json=body, headers=headers)).status_code in (
            403,
            404,
        )
        assert (await org.client.get(url(team), headers=headers)).status_code == 404
    made = await adjust(org, team, 5)
    for path in (url(team, f"/{made['Id']}"), url(team, f"/{uuid.uuid4()}"), url(team, "/nope")):
        assert (await org.client.get(path, headers=other.admin)).status_code == 404
        assert (await org.client.delete(path, headers=other.admin)).status_code == 404
    theirs = await other.create_team()
    stolen = await org.client.delete(
        f"/team/{theirs['Id']}/adjustments/{made['Id']}", headers=other.admin
    )
    assert stolen.status_code == 404
    archived = await org.client.patch(
        f"/team/{team['Id']}", json={"Status": "Archived"}, headers=org.admin
    )
    assert archived.status_code == 200
    refused = await org.client.post(url(team), json=body, headers=org.admin)
    assert refused.status_code == 409
    refused = await org.client.delete(url(team, f"/{made['Id']}"), headers=org.admin)
    assert refused.status_code == 409


async def test_an_adjustment_counts_at_its_time_in_the_tie_rule(world: World) -> None:
    org = world.org()
    early, late = await org.create_team("Early"), await org.create_team("Late")
    await adjust(org, late, 10, At="2026-01-01T12:00:00Z")
    await adjust(org, early, 10, At="2026-01-01T11:00:00Z")
    board = (await org.client.get("/leaderboard", headers=org.member)).json()
    assert [(e["Name"], e["Score"]) for e in board] == [("Early", 10), ("Late", 10)]
    assert board[0]["ReachedAt"] == "2026-01-01T11:00:00Z"
    window = (
        await org.client.get(
            "/leaderboard",
            params={"from": "2026-01-01T11:30:00Z", "to": "2026-01-01T12:30:00Z"},
            headers=org.member,
        )
    ).json()
    assert [(e["Name"], e["Score"], e["TasksCompleted"]) for e in window] == [
        ("Late", 10, 0),
        ("Early", 0, 0),
    ]


async def test_events_are_written_with_the_change(world: World) -> None:
    org = world.org()
    await listened_to(org)  # a consumer listens: its events are recorded
    team = await org.create_team()
    made = await adjust(org, team, 7)
    await org.client.delete(url(team, f"/{made['Id']}"), headers=org.admin)
    with tenancy.acting_for(org.id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with world.db.session(write=False) as session:
            rows = (
                await session.execute(
                    select(Event.type, Event.payload)
                    .where(Event.organization_id == org.id, Event.type.like("team.adjust%"))
                    .order_by(Event.id)
                )
            ).all()
    assert [r.type for r in rows] == ["team.adjusted", "team.adjustment_withdrawn"]
    assert rows[0].payload["Id"] == made["Id"]
    assert rows[0].payload["Score"] == 7
    assert rows[1].payload["Score"] == 0
    assert rows[1].payload["WithdrawnAt"] is not None


async def test_a_new_adjustment_changes_the_cached_leaderboard(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    first = await org.client.get("/leaderboard", headers=org.member)
    etag = first.headers["ETag"]
    assert (
        await org.client.get("/leaderboard", headers={**org.member, "If-None-Match": etag})
    ).status_code == 304
    await adjust(org, team, 3)
    after = await org.client.get("/leaderboard", headers={**org.member, "If-None-Match": etag})
    assert after.status_code == 200
    assert after.json()[0]["Score"] == 3


async def test_paging_and_csv(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    for minute in range(5):
        when = dt.datetime(2026, 1, 1, 10, minute, tzinfo=dt.UTC).isoformat()
        await adjust(org, team, minute + 1, At=when)
    seen: list[int] = []
    path: str | None = url(team) + "?limit=2"
    while path is not None:
        page = await org.client.get(path, headers=org.admin)
        assert page.status_code == 200
        seen += [a["Points"] for a in page.json()]
        link = page.headers.get("Link")
        path = link[1 : link.index(">")] if link else None
    assert seen == [1, 2, 3, 4, 5]
    exported = await org.client.get(url(team), headers={**org.admin, "Accept": "text/csv"})
    assert exported.status_code == 200
    assert exported.headers["content-type"].startswith("text/csv")
    lines = exported.text.strip().splitlines()
    assert lines[0].startswith("Id,TeamId,Points,Reason,At")
    assert len(lines) == 6


async def test_adjustments_belong_to_no_discipline(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    made = await org.client.post(
        "/discipline", json={"Title": "D", "Description": "x"}, headers=org.admin
    )
    discipline_id = made.json()["Id"]
    await adjust(org, team, 12, At=PAST)
    ranked = await org.client.get(
        "/leaderboard", params={"discipline": discipline_id}, headers=org.member
    )
    assert [e["Score"] for e in ranked.json()] == [0]
    windowed = await org.client.get(
        "/leaderboard",
        params={"discipline": discipline_id, "from": "2020-01-01T00:00:00Z"},
        headers=org.member,
    )
    assert [e["Score"] for e in windowed.json()] == [0]
    graph = await org.client.get(
        f"/team/{team['Id']}/graph", params={"discipline": discipline_id}, headers=org.member
    )
    assert [p["Score"] for p in graph.json()["Points"]] == [0]
    overall = await org.client.get(f"/team/{team['Id']}/graph", headers=org.member)
    assert [(p["At"], p["Score"]) for p in overall.json()["Points"]] == [(PAST, 0), (PAST, 12)]
    overview = await org.client.get(f"/team/{team['Id']}/overview", headers=org.member)
    assert overview.json()["Score"] == 12
    assert overview.json()["TasksCompleted"] == 0
