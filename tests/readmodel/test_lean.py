"""Lean misses (readmodel/lean.py, the fast lane's miss of ``GET /team/{id}`` and its
overview): the same bytes and validators as the route, one statement and no transaction,
and every case the route answers differently still goes to the route."""

from __future__ import annotations

from typing import Any

import pytest

from questline.progress import rank_memo
from questline.readmodel.cache import memo_key
from questline.teams import queries as teams_queries
from tests.factories import Org, World
from tests.progress.factories import completed, make_discipline
from tests.readmodel.statements import statements
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio


async def _team_with_progress(world: World) -> tuple[Org, dict[str, Any]]:
    org = world.org()
    team = await org.create_team()
    other = await org.create_team()
    for email in ("b@example.org", "a@example.org"):
        assert (await org.add_member(team["Id"], email=email)).status_code == 201
    assert (await org.add_member(other["Id"], email="a@example.org")).status_code == 201
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 20], [5]], [[1]]])
    await completed(org, team["Id"], tree.task(0, 0, 1))
    await completed(org, team["Id"], tree.task(1, 0, 0))
    return org, team


@pytest.mark.parametrize(
    ("role", "suffix"), [("member", ""), ("member", "/overview"), ("admin", "")]
)
async def test_a_lean_miss_sends_the_routes_bytes_in_one_statement(
    world: World, app_state: AppHarness, suffix: str, role: str
) -> None:
    """(An admin's overview carries ``Contributions``: the route builds it, below.)"""
    org, team = await _team_with_progress(world)
    headers = org.member if role == "member" else org.admin
    url = f"/team/{team['Id']}{suffix}"
    readmodel = app_state.readmodel
    readmodel.lean.enabled = False
    routed = await world.client.get(url, headers=headers)
    assert routed.status_code == 200, routed.text
    readmodel.lean.enabled = True
    readmodel.cache.drop_bodies()  # the tree memo stays: built at this version by the route
    with statements(app_state) as seen:
        lean = await world.client.get(url, headers=headers)
    assert lean.status_code == 200
    assert seen == {"engine": [], "lean": seen["lean"]}, seen  # no session, no BEGIN
    assert len(seen["lean"]) == 1, seen
    assert lean.content == routed.content
    assert lean.headers["etag"] == routed.headers["etag"]
    assert lean.headers["content-type"] == "application/json"
    # Kept in the cache: the next request is a hit, with no statement at all.
    with statements(app_state) as again:
        hit = await world.client.get(url, headers=headers)
        unchanged = await world.client.get(
            url, headers={**headers, "If-None-Match": lean.headers["etag"]}
        )
    assert again == {"engine": [], "lean": []}
    assert hit.content == lean.content
    assert unchanged.status_code == 304


async def test_an_admins_overview_is_left_to_the_route_which_adds_contributions(
    world: World, app_state: AppHarness
) -> None:
    org, team = await _team_with_progress(world)
    app_state.readmodel.cache.drop_bodies()
    with statements(app_state) as seen:
        overview = await world.client.get(f"/team/{team['Id']}/overview", headers=org.admin)
    assert overview.status_code == 200, overview.text
    assert seen["lean"] == []  # the lean builder declined: the route answered
    contributions = overview.json()["Contributions"]
    assert isinstance(contributions, list)
    assert contributions


async def test_members_see_names_and_admins_see_emails_on_a_lean_miss(
    world: World, app_state: AppHarness
) -> None:
    org, team = await _team_with_progress(world)
    url = f"/team/{team['Id']}"
    app_state.readmodel.cache.drop_bodies()
    as_member = (await world.client.get(url, headers=org.member)).json()
    app_state.readmodel.cache.drop_bodies()
    as_admin = (await world.client.get(url, headers=org.admin)).json()
    assert [m["Email"] for m in as_member["Members"]] == [None, None]
    assert [m["Email"] for m in as_admin["Members"]] == ["a@example.org", "b@example.org"]
    assert [len(m["TeamIds"]) for m in as_admin["Members"]] == [2, 1]
    assert as_admin["MemberCount"] == 2


@pytest.mark.parametrize("suffix", ["", "/overview"])
async def test_another_organizations_team_is_the_routes_404(
    world: World, app_state: AppHarness, suffix: str
) -> None:
    owner, team = await _team_with_progress(world)
    stranger = world.org()
    # Known to this process first (a new organization is recorded by the route).
    assert (await world.client.get("/team", headers=stranger.member)).status_code == 200
    for headers in (stranger.member, stranger.admin):
        app_state.readmodel.cache.drop_bodies()
        answer = await world.client.get(f"/team/{team['Id']}{suffix}", headers=headers)
        assert answer.status_code == 404
        assert answer.headers["content-type"] == "application/problem+json"
    # The owner's view was never cached for the stranger, nor the other way round.
    mine = await world.client.get(f"/team/{team['Id']}{suffix}", headers=owner.member)
    assert mine.status_code == 200


async def test_a_new_organizations_first_read_takes_the_route(
    world: World, app_state: AppHarness
) -> None:
    org = world.org()
    missing = "0190d0c0-0000-7000-8000-000000000000"
    assert org.id not in app_state.known_orgs
    answer = await world.client.get(f"/team/{missing}", headers=org.member)
    assert answer.status_code == 404
    assert org.id in app_state.known_orgs  # the route recorded the organization


@pytest.mark.parametrize(
    "shape",
    [
        "{id}".upper(),  # not the canonical form
        "{id_hex}",  # no hyphens: uuid.UUID accepts it, the route answers
        "not-a-uuid",
    ],
)
async def test_other_id_forms_get_the_routes_answer(
    world: World, app_state: AppHarness, shape: str
) -> None:
    org, team = await _team_with_progress(world)
    team_id = team["Id"]
    path = shape.replace("{ID}", team_id.upper()).replace("{id_hex}", team_id.replace("-", ""))
    app_state.readmodel.lean.enabled = False
    routed = await world.client.get(f"/team/{path}", headers=org.member)
    app_state.readmodel.lean.enabled = True
    app_state.readmodel.cache.drop_bodies()
    with statements(app_state) as seen:
        answer = await world.client.get(f"/team/{path}", headers=org.member)
    assert seen["lean"] == []
    assert answer.status_code == routed.status_code
    if routed.status_code == 200:
        assert answer.content == routed.content
    else:  # a problem: the same one (its request id differs)
        assert answer.json()["type"] == routed.json()["type"]


async def test_a_team_too_large_for_the_loop_takes_the_route(
    world: World, app_state: AppHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(teams_queries, "LEAN_MAX_ROWS", 1)
    app_state.readmodel.lean._statements.clear()  # compiled again with the new bound
    org, team = await _team_with_progress(world)
    app_state.readmodel.cache.drop_bodies()
    with statements(app_state) as seen:
        answer = await world.client.get(f"/team/{team['Id']}", headers=org.admin)
    assert answer.status_code == 200
    assert len(seen["lean"]) == 1  # tried, declined (3 rows > 1)
    assert seen["engine"]  # then the route
    assert answer.json()["MemberCount"] == 2


async def test_the_writer_reads_its_write_on_a_lean_miss(world: World) -> None:
    org, team = await _team_with_progress(world)
    url = f"/team/{team['Id']}"
    before = await world.client.get(url, headers=org.admin)
    assert (await org.add_member(team["Id"], email="c@example.org")).status_code == 201
    after = await world.client.get(url, headers=org.admin)
    assert after.headers["etag"] != before.headers["etag"]
    assert [m["Email"] for m in after.json()["Members"]][-1] == "c@example.org"


async def test_ranks_from_the_memo_equal_ranks_counted_in_sql(
    world: World, app_state: AppHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = world.org()
    teams = [await org.create_team(f"Rank {n}") for n in range(6)]
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 20], [5]], [[1]]])
    # Scores 30, 20, 10, 10 (a tie: who reached it first), 0, 0 (ties by name).
    await completed(org, teams[3]["Id"], tree.task(0, 0, 0))
    await completed(org, teams[2]["Id"], tree.task(0, 0, 0))
    await completed(org, teams[1]["Id"], tree.task(0, 0, 1))
    await completed(org, teams[0]["Id"], tree.task(0, 0, 0))
    await completed(org, teams[0]["Id"], tree.task(0, 0, 1))
    assert (
        await world.client.post(f"/team/{teams[5]['Id']}/isadminteam", headers=org.admin)
    ).status_code == 200
    urls = [f"/team/{team['Id']}/overview" for team in teams]
    readmodel = app_state.readmodel

    async def read_all() -> list[Any]:
        readmodel.cache.drop_bodies()
        readmodel.forget_memos()
        readmodel.lean._statements.clear()
        first = [(await world.client.get(url, headers=org.member)).json() for url in urls]
        readmodel.cache.drop_bodies()  # again, now as lean misses with the memos of the route
        again = [(await world.client.get(url, headers=org.member)).json() for url in urls]
        assert again == first
        return first

    def memo() -> rank_memo.Ranks:
        found = readmodel.cache.memo(memo_key(org.id, "ranks"))
        assert found is not None
        return found.value  # type: ignore[no-any-return]

    counted = await read_all()
    assert memo().counted_in_sql
    monkeypatch.setattr(rank_memo, "RANK_MEMO_MIN", 2)
    memoized = await read_all()
    assert not memo().counted_in_sql
    assert [o["Rank"] for o in counted] == [1, 2, 4, 3, 5, None]
    assert memoized == counted
    # An order larger than the read model would keep is counted in SQL again.
    monkeypatch.setattr(rank_memo, "RANK_BYTES", readmodel.largest_memo // 4)
    too_large = await read_all()
    assert memo().counted_in_sql
    assert too_large == counted
