"""``questline import FILE.csv``: local checks, batching, and runs against a live server."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from questline.bulk import csv_batches
from questline.bulk.csv_input import parse_csv
from questline.cli.main import app as cli
from questline.config import Settings
from tests.bulk.factories import csv_text, team_names
from tests.bulk.live import QUESTLINE, LiveServer, live_server
from tests.factories import World

runner = CliRunner()


def write(tmp_path: Path, text: str, name: str = "cohort.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


COHORT = csv_text(
    [
        ("Red", "ada@example.org", "Ada", "cohort-1"),
        ("Blue", "bob@example.org", "Bob", ""),
        ("Red", "cy@example.org", "Cy", "red"),
        ("Green", "", "", ""),
        ("Blue", "ada@example.org", "Ada", ""),
        ("Yellow", "yan@example.org", "Yan", ""),
        ("Purple", "pia@example.org", "Pia", ""),
    ]
)


def test_dry_run_reports_every_problem_with_its_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "team,email,givenName,tags\r\n"
        "A,a@example.org,Ada,\r\n"
        "B,not-an-email,Bo,\r\n"
        '"C\r\nD",,Cy,\r\n'
        "E,e@example.org,,\r\n",
    )
    result = runner.invoke(cli, ["import", str(path), "--dry-run"])
    assert result.exit_code == 1
    assert "line 3: email" in result.output
    assert "line 4: team" in result.output  # a line break: names refuse it
    assert "line 6: givenName" in result.output
    assert "nothing was sent" in result.output


def test_dry_run_of_a_good_file_sends_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, COHORT)
    # Nothing listens on port 9: any request would fail the command.
    result = runner.invoke(cli, ["import", str(path), "--dry-run", "--url", "http://127.0.0.1:9"])
    assert result.exit_code == 0, result.output
    assert "5 teams, 7 rows, no problems found" in result.output


def test_a_wrong_header_fails_locally(tmp_path: Path) -> None:
    path = write(tmp_path, "name,mail\r\nA,a@example.org\r\n")
    result = runner.invoke(cli, ["import", str(path), "--dry-run"])
    assert result.exit_code == 1
    assert "line 1: header" in result.output


def test_batches_keep_a_teams_rows_together_and_map_lines_back() -> None:
    text = (
        "Email,TEAM,tags,givenName\r\n"  # 1 (another column order)
        "a@example.org,Red,x,Ada\r\n"  # 2
        'b@example.org,Blue,,"Bo, ""B."""\r\n'  # 3 (names hold no line break)
        "\r\n"  # 4, blank
        "c@example.org,Red,,Cy\r\n"  # 5
        ",Green,,\r\n"  # 6
        "d@example.org,Blue,,Di"  # 7, no line end
    )
    plan = parse_csv(text.encode(), max_teams=100)
    batches = csv_batches.split(plan, batch_size=2)
    assert [b.team_names for b in batches] == [["Red", "Blue"], ["Green"]]
    first = parse_csv(batches[0].body, max_teams=2)
    assert [(t.name, len(t.people)) for t in first.teams] == [("Red", 2), ("Blue", 2)]
    assert batches[0].file_lines == [1, 2, 5, 3, 7]
    assert batches[0].in_file_terms("line 3: email") == "line 5: email"
    assert batches[0].in_file_terms("line 5: team") == "line 7: team"
    assert batches[1].body.decode() == "Email,TEAM,tags,givenName\r\n,Green,,\r\n"
    # Deterministic: the same file gives the same batches (and so the same keys).
    assert [b.body for b in csv_batches.split(plan, batch_size=2)] == [b.body for b in batches]


@pytest.fixture(scope="module")
def server(
    migrated_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """A live server on the test database (each test's ``world`` empties it first; every
    test uses new organizations, so the server's cache of known ones stays right)."""
    log = tmp_path_factory.mktemp("server") / "server.log"
    with live_server(migrated_settings, log) as live:
        yield live


def run_import(
    path: Path, server: LiveServer, token: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(QUESTLINE), "import", str(path), "--url", server.url, "--token", token, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=path.parent,
    )


@pytest.mark.slow
@pytest.mark.anyio
async def test_import_through_a_live_server_and_again_creates_nothing_twice(
    world: World, server: LiveServer, tmp_path: Path
) -> None:
    org = world.org()
    path = write(tmp_path, COHORT)
    done = await asyncio.to_thread(run_import, path, server, org.admin_token, "--batch-size", "2")
    assert done.returncode == 0, done.stderr + server.log_text()
    printed = [line.split("\t") for line in done.stdout.splitlines()]
    assert [name for _, name, _ in printed] == ["Red", "Blue", "Green", "Yellow", "Purple"]
    assert [count for _, _, count in printed] == ["2", "2", "0", "1", "1"]
    assert "created 5 teams in 3 request(s)" in done.stderr
    assert sorted(await team_names(org)) == ["Blue", "Green", "Purple", "Red", "Yellow"]

    again = await asyncio.to_thread(run_import, path, server, org.admin_token, "--batch-size", "2")
    assert again.returncode == 0, again.stderr
    assert "3 replayed" in again.stderr
    assert again.stdout == done.stdout
    assert len(await org.teams()) == 5
    members = (await world.client.get("/member", headers=org.admin)).json()
    assert len(members) == 5


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_refused_batch_names_the_file_line_and_a_rerun_resumes(
    world: World, server: LiveServer, tmp_path: Path
) -> None:
    org = world.org()
    taken = await org.create_team("Yellow")
    path = write(tmp_path, COHORT)
    failed = await asyncio.to_thread(run_import, path, server, org.admin_token, "--batch-size", "2")
    assert failed.returncode == 1
    # Batch 2 is Green (line 5) and Yellow (line 7 of the file, line 3 of the batch).
    assert "line 7: team" in failed.stderr, failed.stderr
    assert [line.split("\t")[1] for line in failed.stdout.splitlines()] == ["Red", "Blue"]
    assert sorted(await team_names(org)) == ["Blue", "Red", "Yellow"]

    deleted = await world.client.delete(f"/team/{taken['Id']}", headers=org.admin)
    assert deleted.status_code == 204
    resumed = await asyncio.to_thread(
        run_import, path, server, org.admin_token, "--batch-size", "2"
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "1 replayed" in resumed.stderr
    assert sorted(await team_names(org)) == ["Blue", "Green", "Purple", "Red", "Yellow"]


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_member_token_is_refused_and_nothing_is_created(
    world: World, server: LiveServer, tmp_path: Path
) -> None:
    org = world.org()
    path = write(tmp_path, COHORT)
    done = await asyncio.to_thread(run_import, path, server, org.member_token)
    assert done.returncode == 1
    assert "403" in done.stderr
    assert done.stdout == ""
    assert await org.teams() == []


@pytest.mark.slow
@pytest.mark.anyio
async def test_skip_existing_leaves_existing_teams_alone_and_reports_them(
    world: World, server: LiveServer, tmp_path: Path
) -> None:
    org = world.org()
    red = await org.create_team("RED", tags=["kept"])  # the file says "Red": same name
    path = write(tmp_path, COHORT)

    refused = await asyncio.to_thread(run_import, path, server, org.admin_token)
    assert refused.returncode == 1, "without the option an existing name is a conflict"

    done = await asyncio.to_thread(
        run_import, path, server, org.admin_token, "--skip-existing", "--batch-size", "2"
    )
    assert done.returncode == 0, done.stderr + server.log_text()
    assert "skipped: Red (exists)" in done.stderr
    assert "created 4 teams in 2 request(s); skipped 1 that exist." in done.stderr
    assert [line.split("\t")[1] for line in done.stdout.splitlines()] == [
        "Blue",
        "Green",
        "Yellow",
        "Purple",
    ]
    assert sorted(await team_names(org)) == ["Blue", "Green", "Purple", "RED", "Yellow"]
    kept = (await world.client.get(f"/team/{red['Id']}", headers=org.admin)).json()
    assert kept["Tags"] == ["kept"]
    assert kept["Members"] == []


def test_headers_match_whatever_the_case_spacing_or_underscores(tmp_path: Path) -> None:
    for header in (
        "Team,E-mail,Given Name,Tags",
        "team,email,given_name,tags",
        "TEAM, EMAIL ,givenName,TAGS",
        "tags,given name,team,e_mail",
    ):
        columns = [c.strip() for c in header.split(",")]
        row = {"team": "Red", "email": "ada@example.org", "givenname": "Ada", "tags": "x"}
        values = [
            row[c.replace(" ", "").replace("_", "").replace("-", "").lower()] for c in columns
        ]
        path = write(tmp_path, f"{header}\r\n{','.join(values)}\r\n")
        result = runner.invoke(cli, ["import", str(path), "--dry-run"])
        assert result.exit_code == 0, (header, result.output)
        assert "1 teams, 1 rows, no problems found" in result.output
    plan = parse_csv(b"Team,E-mail,Given Name,Tags\r\nRed,ada@example.org,Ada,x\r\n", max_teams=9)
    assert [(t.name, [p.given_name for p in t.people], t.tags) for t in plan.teams] == [
        ("Red", ["Ada"], ["x"])
    ]
