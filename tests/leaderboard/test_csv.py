"""CSV export: ``Accept: text/csv`` on the leaderboard, the team list and a team's
progress: the JSON's fields, RFC 4180, an attachment, formulas neutralized."""

from __future__ import annotations

import csv
import io

import pytest

from questline.web import csvexport
from tests.factories import World

pytestmark = pytest.mark.anyio

CSV = {"Accept": "text/csv"}


def parse(body: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(body, newline="")))


async def test_the_team_list_as_csv_has_the_json_fields_and_values(world: World) -> None:
    org = world.org()
    await org.create_team("Alpha, Inc.", tags=["one", "two"])
    await org.create_team('Beta "quoted"')
    as_json = (await world.client.get("/team", headers=org.member)).json()
    response = await world.client.get("/team", headers={**org.member, **CSV})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv; charset=utf-8")
    assert response.headers["content-disposition"] == 'attachment; filename="teams.csv"'
    assert response.text.endswith("\r\n")
    [header, *rows] = parse(response.text)
    assert header == list(as_json[0].keys())
    assert len(rows) == 2
    for row, team in zip(rows, as_json, strict=True):
        cells = dict(zip(header, row, strict=True))
        assert cells["Id"] == team["Id"]
        assert cells["Name"] == team["Name"]
        assert cells["Tags"] == ";".join(team["Tags"])
        assert cells["Score"] == str(team["Score"])
        assert cells["IsAdminTeam"] == "false"
        assert cells["CreatedAt"] == team["CreatedAt"]
    assert '"Alpha, Inc."' in response.text
    assert '"Beta ""quoted"""' in response.text


@pytest.mark.parametrize("name", ['=HYPERLINK("http://x")', "+1+2", "-3", "@SUM(A1)"])
async def test_formula_cells_are_escaped(world: World, name: str) -> None:
    org = world.org()
    created = await org.client.post(
        "/team", json={"name": "safe", "tags": [name]}, headers=org.admin
    )
    assert created.status_code == 201
    named = await org.client.post("/team", json={"name": name}, headers=org.admin)
    assert named.status_code == 201, named.text
    response = await world.client.get("/team", headers={**org.member, **CSV})
    [header, *rows] = parse(response.text)
    cells = [dict(zip(header, row, strict=True)) for row in rows]
    assert next(c["Tags"] for c in cells if c["Name"] == "safe") == "'" + name
    assert [c["Name"] for c in cells if c["Name"] != "safe"] == ["'" + name]


@pytest.mark.parametrize(
    ("value", "written"),
    [("\tx", "'\tx"), ("\rx", "'\rx"), ("a=b", "a=b"), (-3, "-3"), (None, ""), (True, "true")],
)
def test_cells_a_spreadsheet_would_run_are_escaped(value: object, written: str) -> None:
    """Names are trimmed on input, so leading tabs and CRs are checked on the writer."""
    assert csvexport.cell(value) == written


async def test_the_leaderboard_as_csv_follows_every_parameter(world: World) -> None:
    org = world.org()
    for i in range(3):
        await org.create_team(f"L{i}")
    params = {"limit": 2, "from": "2020-01-01T00:00:00Z"}
    as_json = await world.client.get("/leaderboard", params=params, headers=org.member)
    response = await world.client.get("/leaderboard", params=params, headers={**org.member, **CSV})
    assert response.status_code == 200
    assert response.headers["content-disposition"] == 'attachment; filename="leaderboard.csv"'
    assert response.headers["link"] == as_json.headers["link"]
    [header, *rows] = parse(response.text)
    assert header == ["Rank", "TeamId", "Name", "Score", "TasksCompleted", "ReachedAt"]
    expected = [
        [str(e["Rank"]), e["TeamId"], e["Name"], str(e["Score"]), str(e["TasksCompleted"]), ""]
        for e in as_json.json()
    ]
    assert rows == expected


async def test_a_teams_progress_as_csv(world: World) -> None:
    org = world.org()
    created = await org.client.post(
        "/discipline",
        json={
            "Title": "D",
            "Description": "x",
            "Levels": [{"Title": "L", "Quests": [{"Title": "Q", "Tasks": [{"Title": "T"}]}]}],
        },
        headers=org.admin,
    )
    task_id = created.json()["Levels"][0]["Quests"][0]["Tasks"][0]["Id"]
    team = await org.create_team()
    done = await org.client.post(
        f"/team/{team['Id']}/progress", json={"TaskId": task_id}, headers=org.admin
    )
    assert done.status_code == 201
    response = await world.client.get(f"/team/{team['Id']}/progress", headers={**org.member, **CSV})
    assert response.status_code == 200
    [header, row] = parse(response.text)
    assert header == [
        "TeamId",
        "TaskId",
        "DisciplineId",
        "Points",
        "CompletedAt",
        "MemberId",
        "RecordedBy",
        "Score",
    ]
    assert row[:4] == [team["Id"], task_id, created.json()["Id"], "10"]
    assert row[5:] == ["", "admin", ""]
    other = world.org()
    hidden = await world.client.get(f"/team/{team['Id']}/progress", headers={**other.member, **CSV})
    assert hidden.status_code == 404
    assert hidden.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize(
    ("accept", "csv_expected"),
    [
        ("text/csv", True),
        ("text/csv, */*;q=0.5", True),
        ("application/json, text/csv;q=0.5", False),
        ("text/csv;q=0", False),
        ("*/*", False),
        ("application/json", False),
    ],
)
async def test_content_negotiation(world: World, accept: str, csv_expected: bool) -> None:
    org = world.org()
    response = await world.client.get("/team", headers={**org.member, "Accept": accept})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv") is csv_expected


async def test_the_openapi_document_shows_the_csv_answers(world: World) -> None:
    document = (await world.client.get("/openapi.json")).json()
    for path in ("/leaderboard", "/team", "/team/{team_id}/progress"):
        content = document["paths"][path]["get"]["responses"]["200"]["content"]
        assert "text/csv" in content, path
        assert "application/json" in content, path
