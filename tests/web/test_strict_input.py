"""Strict input: booleans are true/false, timestamps RFC 3339 strings, no NUL, names
NFKC-normalized without invisible characters, scores past int32 on PostgreSQL; every
refusal a 4xx that changes nothing, never a 500."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import update

from questline.storage import tenancy
from questline.teams.models import Team
from tests.factories import World
from tests.progress.factories import complete, make_discipline

pytestmark = pytest.mark.anyio


async def test_booleans_are_true_or_false_only(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    path = f"/team/{team['Id']}"
    for value in (0, 1, "yes", "true", "false", None, 0.0):
        admin = await world.client.post(
            f"{path}/isadminteam", json={"IsAdminTeam": value}, headers=org.admin
        )
        assert admin.status_code == 422, (value, admin.text)
        survey = await world.client.post(
            f"{path}/survey", json={"IsSurveyCompleted": value}, headers=org.admin
        )
        assert survey.status_code == 422, (value, survey.text)
    unchanged = (await world.client.get(path, headers=org.admin)).json()
    assert unchanged["IsAdminTeam"] is False
    ok = await world.client.post(
        f"{path}/isadminteam", json={"IsAdminTeam": True}, headers=org.admin
    )
    assert ok.status_code == 200
    assert ok.json()["IsAdminTeam"] is True


async def test_query_booleans_are_true_or_false_only(world: World) -> None:
    org = world.org()
    discipline = await world.client.post(
        "/discipline", json={"Title": "T", "Description": "D"}, headers=org.admin
    )
    path = f"/discipline/{discipline.json()['Id']}"
    for value in ("yes", "1", "on", "True", ""):
        response = await world.client.delete(f"{path}?force={value}", headers=org.admin)
        assert response.status_code == 422, (value, response.text)
    assert (await world.client.delete(f"{path}?force=true", headers=org.admin)).status_code == 204


async def test_timestamps_are_rfc3339_strings_and_calendar_edges_are_422(
    world: World,
) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[5, 5]]])
    for value in ("0.5", "1700000000", "2026-11-22", "0001-01-01T00:00:00+05:00"):
        graph = await world.client.get(
            "/leaderboard/graph", params={"to": value}, headers=org.member
        )
        assert graph.status_code == 422, (value, graph.text)
    edges = ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"]
    for value in [0, 1700000000, 0.5, True, "2026-11-22", *edges]:
        response = await world.client.post(
            f"/team/{team['Id']}/progress",
            json={"TaskId": tree.task(0, 0, 0), "CompletedAt": value},
            headers=org.admin,
        )
        assert response.status_code == 422, (value, response.text)
    fine = await world.client.post(
        f"/team/{team['Id']}/progress",
        json={"TaskId": tree.task(0, 0, 0), "CompletedAt": "2026-01-01T10:00:00+05:00"},
        headers=org.admin,
    )
    assert fine.status_code == 201, fine.text


async def test_nul_characters_are_refused(world: World) -> None:
    org = world.org()
    for body in ({"name": "a\u0000b"}, {"name": "ok", "tags": ["x\u0000"]}):
        response = await world.client.post("/team", json=body, headers=org.admin)
        assert response.status_code == 422, (body, response.text)
    for params in ({"discipline": "\u0000"}, {"limit": "1\u0000"}):
        response = await world.client.get("/leaderboard", params=params, headers=org.member)
        assert response.status_code == 422, (params, response.text)
    assert await org.teams() == []


async def test_names_are_nfkc_normalized_and_invisible_characters_refused(
    world: World,
) -> None:
    org = world.org()
    fullwidth = await world.client.post("/team", json={"name": "\uff32ockets"}, headers=org.admin)
    assert fullwidth.status_code == 201
    assert fullwidth.json()["Name"] == "Rockets"
    again = await world.client.post("/team", json={"name": "Rockets"}, headers=org.admin)
    assert again.status_code == 409, again.text
    for name in ("Rock\u200bets", "\u202eRockets", "Rock\u200dets", "Rockets\ufeff", "a\u2028b"):
        response = await world.client.post("/team", json={"name": name}, headers=org.admin)
        assert response.status_code == 422, (name, response.text)
    eszett = await world.client.post("/team", json={"name": "\u00df" * 60}, headers=org.admin)
    assert eszett.status_code == 201, eszett.text  # folds to 120 characters: fits its key
    ligatures = await world.client.post(
        "/team", json={"name": "\ufb01" * 60}, headers=org.admin
    )  # NFKC: 120 characters, past the 100 allowed
    assert ligatures.status_code == 422, ligatures.text
    assert sorted(t["Name"] for t in await org.teams()) == sorted(["Rockets", "\u00df" * 60])


async def test_scores_past_int32_are_kept(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[1_000_000]]])
    near = 2**31 - 10
    with tenancy.acting_for(org.id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with world.db.session() as session:
            await session.execute(
                update(Team).where(Team.id == uuid.UUID(team["Id"])).values(score=near)
            )
    response = await complete(org, team["Id"], tree.task(0, 0, 0))
    assert response.status_code == 201, response.text
    assert response.json()["Score"] == near + 1_000_000
    listed = {t["Id"]: t for t in await org.teams()}
    assert listed[team["Id"]]["Score"] == near + 1_000_000
    board = await world.client.get("/leaderboard", headers=org.member)
    assert board.status_code == 200
    assert board.json()[0]["Score"] == near + 1_000_000
