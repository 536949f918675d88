"""``/season``: creation, the time rules, reads by any role, changes, deletion, reveal."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from tests.factories import World
from tests.seasons.support import create_season, create_task, iso, now
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def test_create_read_list_update_delete(world: World) -> None:
    org = world.org()
    start, end = now() - dt.timedelta(days=1), now() + dt.timedelta(days=1)
    created = await world.client.post(
        "/season",
        json={"name": "Cup", "startsAt": iso(start), "endsAt": iso(end)},
        headers=org.admin,
    )
    assert created.status_code == 201, created.text
    season = created.json()
    assert created.headers["Location"].endswith(f"/season/{season['Id']}")
    assert season["Name"] == "Cup"
    assert season["Phase"] == "Running"
    assert season["FreezesAt"] is None
    assert season["RevealedAt"] is None
    got = await world.client.get(f"/season/{season['Id']}", headers=org.member)
    assert got.status_code == 200
    assert got.json() == season
    listed = await world.client.get("/season", headers=org.member)
    assert [s["Id"] for s in listed.json()] == [season["Id"]]
    changed = await world.client.patch(
        f"/season/{season['Id']}", json={"Name": "Cup 2"}, headers=org.admin
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["Name"] == "Cup 2"
    gone = await world.client.delete(f"/season/{season['Id']}", headers=org.admin)
    assert gone.status_code == 204
    missing = await world.client.get(f"/season/{season['Id']}", headers=org.member)
    assert missing.status_code == 404


@pytest.mark.parametrize(
    ("starts", "freezes", "ends"),
    [(0, None, 0), (2, None, 1), (0, 0, 2), (0, 3, 2), (1, 0, 2)],
)
async def test_times_out_of_order_are_422(
    world: World, starts: int, freezes: int | None, ends: int
) -> None:
    org = world.org()
    base = now()
    body = {
        "Name": "Cup",
        "StartsAt": iso(base + dt.timedelta(hours=starts)),
        "EndsAt": iso(base + dt.timedelta(hours=ends)),
    }
    if freezes is not None:
        body["FreezesAt"] = iso(base + dt.timedelta(hours=freezes))
    response = await world.client.post("/season", json=body, headers=org.admin)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")


async def test_freeze_equal_to_the_end_is_allowed_and_patch_checks_the_whole(
    world: World,
) -> None:
    org = world.org()
    end = now() + dt.timedelta(days=2)
    season = await create_season(org, EndsAt=iso(end), FreezesAt=iso(end))
    assert season["FreezesAt"] == iso(end)
    late = await world.client.patch(
        f"/season/{season['Id']}",
        json={"EndsAt": iso(end - dt.timedelta(hours=1))},
        headers=org.admin,
    )
    assert late.status_code == 422
    cleared = await world.client.patch(
        f"/season/{season['Id']}", json={"FreezesAt": None}, headers=org.admin
    )
    assert cleared.status_code == 200
    assert cleared.json()["FreezesAt"] is None
    null_name = await world.client.patch(
        f"/season/{season['Id']}", json={"Name": None}, headers=org.admin
    )
    assert null_name.status_code == 422


async def test_members_cannot_write_and_other_organizations_see_nothing(world: World) -> None:
    org, other = world.org(), world.org()
    season = await create_season(org)
    body = {"Name": "x", "StartsAt": iso(now()), "EndsAt": iso(now() + dt.timedelta(hours=1))}
    assert (await world.client.post("/season", json=body, headers=org.member)).status_code == 403
    url = f"/season/{season['Id']}"
    assert (await world.client.patch(url, json={}, headers=org.member)).status_code == 403
    assert (await world.client.delete(url, headers=org.member)).status_code == 403
    assert (await world.client.post(f"{url}/reveal", headers=org.member)).status_code == 403
    for method, path in (
        ("GET", url),
        ("PATCH", url),
        ("DELETE", url),
        ("POST", f"{url}/reveal"),
        ("GET", "/season/not-a-uuid"),
        ("GET", f"/season/{uuid.uuid4()}"),
    ):
        kwargs = {"json": {}} if method == "PATCH" else {}
        response = await world.client.request(method, path, headers=other.admin, **kwargs)
        assert response.status_code == 404, (method, path, response.text)
    assert (await world.client.get("/season", headers=other.member)).json() == []
    board = await world.client.get(
        "/leaderboard", params={"season": season["Id"]}, headers=other.member
    )
    assert board.status_code == 404


async def test_discipline_must_be_visible(world: World) -> None:
    org, other = world.org(), world.org()
    theirs, _ = await create_task(other, [10])
    start, end = now(), now() + dt.timedelta(hours=1)
    body = {"Name": "x", "StartsAt": iso(start), "EndsAt": iso(end), "DisciplineId": theirs}
    response = await world.client.post("/season", json=body, headers=org.admin)
    assert response.status_code == 422
    mine, _ = await create_task(org, [10])
    ok = await world.client.post("/season", json={**body, "DisciplineId": mine}, headers=org.admin)
    assert ok.status_code == 201
    assert ok.json()["DisciplineId"] == mine


async def test_hostile_input_is_refused_without_a_5xx(world: World) -> None:
    org = world.org()
    for body in (
        {"Name": "", "StartsAt": iso(now()), "EndsAt": iso(now())},
        {"Name": "x" * 101, "StartsAt": iso(now()), "EndsAt": iso(now())},
        {"Name": "a\u202eb", "StartsAt": iso(now()), "EndsAt": iso(now())},
        {"Name": "x", "StartsAt": 5, "EndsAt": iso(now())},
        {"Name": "x", "StartsAt": "2026-13-40T00:00:00Z", "EndsAt": iso(now())},
        {"Name": "x", "StartsAt": iso(now()), "EndsAt": iso(now()), "Extra": 1},
        {"Name": "x", "StartsAt": iso(now()), "EndsAt": iso(now()), "DisciplineId": "zz"},
        [],
    ):
        response = await world.client.post("/season", json=body, headers=org.admin)
        assert response.status_code == 422, (body, response.text)
    for value in ("x", "' OR 1=1 --", "\u0000"):
        response = await world.client.get(
            "/leaderboard", params={"season": value}, headers=org.member
        )
        assert response.status_code in (404, 422), response.text


async def test_reveal_only_while_frozen(world: World) -> None:
    org = world.org()
    running = await create_season(org, FreezesAt=iso(now() + dt.timedelta(days=1)))
    refused = await world.client.post(f"/season/{running['Id']}/reveal", headers=org.admin)
    assert refused.status_code == 409
    frozen = await create_season(org, FreezesAt=iso(now() - dt.timedelta(minutes=1)))
    assert frozen["Phase"] == "Frozen"
    revealed = await world.client.post(f"/season/{frozen['Id']}/reveal", headers=org.admin)
    assert revealed.status_code == 200, revealed.text
    assert revealed.json()["Phase"] == "Ended"
    assert revealed.json()["RevealedAt"] is not None
    again = await world.client.post(f"/season/{frozen['Id']}/reveal", headers=org.admin)
    assert again.status_code == 409


async def test_location_is_built_like_every_routes_whatever_the_host_header(
    world: World, app_state: AppHarness
) -> None:
    org = world.org()
    body = {"Name": "Cup", "StartsAt": iso(now()), "EndsAt": iso(now() + dt.timedelta(days=1))}
    forged = {**org.admin, "Host": "evil.example"}
    created = await world.client.post("/season", json=body, headers=forged)
    assert created.status_code == 201, created.text
    assert created.headers["Location"] == f"/season/{created.json()['Id']}"
    team = await world.client.post("/team", json={"name": "Owls"}, headers=forged)
    assert team.headers["Location"] == f"/team/{team.json()['Id']}"  # the same rule

    app_state.configure(public_url="https://questline.example.org")
    again = await world.client.post("/season", json=body, headers=forged)
    assert again.status_code == 201, again.text
    assert again.headers["Location"] == (
        f"https://questline.example.org/season/{again.json()['Id']}"
    )
    read = await world.client.get(f"/season/{again.json()['Id']}", headers=org.admin)
    assert read.status_code == 200
