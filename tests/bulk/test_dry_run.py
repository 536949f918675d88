"""POST /team/bulk?dryRun=true: the whole check, the import's answer, nothing written."""

from __future__ import annotations

import pytest

from tests.factories import World

pytestmark = pytest.mark.anyio

GOOD = "team,email,givenName,tags\nOwls,ada@example.org,Ada,river\nFoxes,,,\n"
BAD = "team,email,givenName,tags\nOwls,ada@example.org,Ada,\nFoxes,not-an-email,Bo,\n"


async def test_a_dry_run_answers_like_the_import_and_writes_nothing(world: World) -> None:
    org = world.org()
    headers = {**org.admin, "Content-Type": "text/csv", "Idempotency-Key": "upload-1"}
    checked = await org.client.post("/team/bulk?dryRun=true", content=GOOD, headers=headers)
    assert checked.status_code == 200, checked.text
    planned = checked.json()
    assert [(t["Name"], t["MemberCount"], t["Tags"]) for t in planned] == [
        ("Owls", 1, ["river"]),
        ("Foxes", 0, []),
    ]
    assert await org.teams() == []
    members = await org.client.get("/member", headers=org.admin)
    assert members.json() == []

    # The same key then really imports (the dry run was not stored under it).
    done = await org.client.post("/team/bulk", content=GOOD, headers=headers)
    assert done.status_code == 201, done.text
    assert sorted(t["Name"] for t in await org.teams()) == ["Foxes", "Owls"]

    # Checking again now finds the names taken, still writing nothing.
    again = await org.client.post(
        "/team/bulk?dryRun=true", content=GOOD, headers=org.admin | {"Content-Type": "text/csv"}
    )
    assert again.status_code == 409  # names already taken, and nothing else wrong
    assert len(again.json()["errors"]) == 2
    assert sorted(t["Name"] for t in await org.teams()) == ["Foxes", "Owls"]


async def test_a_dry_run_reports_every_bad_line(world: World) -> None:
    org = world.org()
    headers = {**org.admin, "Content-Type": "text/csv"}
    checked = await org.client.post("/team/bulk?dryRun=true", content=BAD, headers=headers)
    assert checked.status_code == 422
    fields = [e["field"] for e in checked.json()["errors"]]
    assert fields == ["line 3: email"]
    assert await org.teams() == []
    members = await org.client.get("/member", headers=org.admin)
    assert members.json() == []


async def test_dry_run_takes_only_a_boolean(world: World) -> None:
    org = world.org()
    headers = {**org.admin, "Content-Type": "text/csv"}
    bad = await org.client.post("/team/bulk?dryRun=maybe", content=GOOD, headers=headers)
    assert bad.status_code == 422
    assert await org.teams() == []
