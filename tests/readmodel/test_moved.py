"""Reads that survive writes: a write that says what it moved leaves the bodies built
from anything else in place, carried to the new version without a statement."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from questline.readmodel import moved
from questline.readmodel.moved import MovedLog
from questline.storage import notify
from tests.disciplines.sql import count_statements
from tests.factories import Org, World, unique
from tests.learners.factories import ANSWER, Game, learners_game
from tests.progress.factories import completed, make_discipline
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio

ORG = uuid.uuid4()


def test_the_log_carries_only_over_versions_it_knows_moved_nothing_wanted() -> None:
    log = MovedLog()
    a, b = moved.team(uuid.uuid4()), moved.team(uuid.uuid4())
    log.record(ORG, 4, frozenset({a}))
    log.record(ORG, 5, frozenset({a, moved.SCORES}))
    assert log.untouched(ORG, 3, 5, {b})
    assert not log.untouched(ORG, 3, 5, {a})
    assert not log.untouched(ORG, 3, 5, {moved.SCORES})
    assert log.untouched(ORG, 4, 5, moved.NOTHING)
    # A version it was not told about (another process's, say) moved anything.
    assert not log.untouched(ORG, 2, 5, {b})
    log.record(ORG, 6, None)
    assert not log.untouched(ORG, 5, 6, moved.NOTHING)
    assert not log.untouched(uuid.uuid4(), 0, 1, moved.NOTHING)
    log.clear()
    assert not log.untouched(ORG, 3, 5, {b})


def test_a_notification_carries_what_each_version_moved() -> None:
    said = {4: frozenset({"scores", moved.team(ORG)}), 6: frozenset()}
    text = notify.payload(ORG, 6, said)
    assert notify.parsed(text) == (ORG, 6, said)
    assert notify.parsed(f"{ORG}:3") == (ORG, 3, {})
    # Too long to send: the versions go without their moves ("anything moved").
    many = {v: frozenset({moved.team(uuid.uuid4())}) for v in range(300)}
    assert notify.parsed(notify.payload(ORG, 299, many)) == (ORG, 299, {})
    with pytest.raises(ValueError, match="UUID"):
        notify.parsed("not a payload")


def test_a_step_crosses_the_places_between_where_it_left_and_where_it_lands() -> None:
    low, middle, high = (-5, 100.0), (-10, 50.0), (-20, 10.0)  # place keys: high ranks first
    up = moved.step(low, high)
    assert moved.crossed(up, moved.placed(middle))
    assert moved.crossed(moved.step(high, low), moved.placed(middle))
    assert not moved.crossed(up, moved.placed((-30, 5.0)))  # ahead of both: kept
    assert not moved.crossed(up, moved.placed((0, 500.0)))  # behind both: kept
    # The same points at the same time: the names decide, which no scope knows.
    assert moved.crossed(up, moved.placed(high))
    # A step that cannot be read (a stranger's notification) crosses everything.
    assert moved.crossed("step:x:1", moved.placed(middle))
    assert moved.crossed(f"{moved.STEP}1:2.0", moved.placed(middle))
    log = MovedLog()
    log.record(ORG, 2, frozenset({moved.team(ORG), moved.SCORES, up}))
    assert log.untouched(ORG, 1, 2, {moved.RANKS, moved.placed((-30, 5.0))})
    assert not log.untouched(ORG, 1, 2, {moved.RANKS, moved.placed(middle)})


async def test_a_step_rebuilds_only_the_overviews_of_the_teams_it_passed(
    world: World, app_state: AppHarness
) -> None:
    org, teams, tree = await _seeded(world)  # Team 0: 10 points; Teams 1 and 2: none
    urls = [f"/team/{team['Id']}/overview" for team in teams]
    before = [await world.client.get(url, headers=org.member) for url in urls]
    assert [b.json()["Rank"] for b in before] == [1, 2, 3]
    await completed(org, teams[2]["Id"], tree.task(0, 0, 1))  # 20 points: past both
    await completed(org, teams[1]["Id"], tree.task(0, 1, 0))  # 5 points: past nobody
    carried = app_state.readmodel.cache.carried
    after = [await world.client.get(url, headers=org.member) for url in urls]
    assert [a.json()["Rank"] for a in after] == [2, 3, 1]
    assert app_state.readmodel.cache.carried == carried  # each one crossed or stepped
    await completed(org, teams[1]["Id"], tree.task(0, 0, 0))  # 15 points: past Team 0 only
    carried = app_state.readmodel.cache.carried
    again = [await world.client.get(url, headers=org.member) for url in urls]
    assert [a.json()["Rank"] for a in again] == [3, 2, 1]
    assert app_state.readmodel.cache.carried == carried + 1  # Team 2's, still first
    assert again[2].content == after[2].content


def test_the_log_forgets_old_versions() -> None:
    log = MovedLog()
    for version in range(1, moved.KEPT_VERSIONS + 10):
        log.record(ORG, version, moved.NOTHING)
    assert not log.untouched(ORG, 0, 5, moved.NOTHING)
    assert log.untouched(ORG, 20, moved.KEPT_VERSIONS + 9, moved.NOTHING)


async def _seeded(world: World) -> tuple[Org, list[dict[str, Any]], Any]:
    org = world.org()
    teams = [await org.create_team(f"Team {n}") for n in range(3)]
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 20], [5]]])
    await completed(org, teams[0]["Id"], tree.task(0, 0, 0))
    return org, teams, tree


async def test_a_completion_keeps_the_other_teams_and_the_documents(
    world: World, app_state: AppHarness
) -> None:
    org, teams, tree = await _seeded(world)
    kept = [f"/team/{teams[0]['Id']}", f"/discipline/{tree.id}", "/discipline"]
    rebuilt = [f"/team/{teams[1]['Id']}", "/leaderboard", "/team"]
    before = {url: await world.client.get(url, headers=org.member) for url in kept + rebuilt}
    await completed(org, teams[1]["Id"], tree.task(0, 0, 1))
    carried = app_state.readmodel.cache.carried
    with count_statements(app_state.db) as log:
        after = {url: await world.client.get(url, headers=org.member) for url in kept}
    assert log.statements == 0, log.texts
    assert app_state.readmodel.cache.carried == carried + len(kept)
    for url in kept:
        assert after[url].content == before[url].content, url
        # The ETag a client holds still matches: 304 across the write.
        etag = before[url].headers["etag"]
        again = await world.client.get(url, headers={**org.member, "If-None-Match": etag})
        assert again.status_code == 304, url
    for url in rebuilt:
        fresh = await world.client.get(url, headers=org.member)
        assert fresh.content != before[url].content, url
    scores = {
        e["TeamId"]: e["Score"]
        for e in (await world.client.get("/leaderboard", headers=org.member)).json()
    }
    assert scores[teams[1]["Id"]] == 20


async def test_a_write_that_says_nothing_makes_everything_stale(
    world: World, app_state: AppHarness
) -> None:
    org, teams, tree = await _seeded(world)
    url = f"/discipline/{tree.id}"
    await world.client.get(url, headers=org.member)
    await world.client.get(f"/team/{teams[0]['Id']}", headers=org.member)
    renamed = await world.client.patch(
        f"/team/{teams[1]['Id']}", json={"Name": "Renamed"}, headers=org.admin
    )
    assert renamed.status_code == 200
    carried = app_state.readmodel.cache.carried
    await world.client.get(url, headers=org.member)
    await world.client.get(f"/team/{teams[0]['Id']}", headers=org.member)
    assert app_state.readmodel.cache.carried == carried


async def test_another_process_carries_across_what_the_notification_says(
    world: World, app_state: AppHarness, other_app: FastAPI
) -> None:
    """Two application instances on one database (two worker processes): the one that
    did not write learns what the write moved from its notification on PostgreSQL, and
    keeps the bodies it did not touch; on SQLite it learns the version only, and builds
    them again. Either way it serves what the database holds."""
    org, teams, tree = await _seeded(world)
    other = AppHarness(other_app)
    transport = httpx.ASGITransport(app=other_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://questline.test") as reader:
        untouched = f"/team/{teams[0]['Id']}"
        touched = f"/team/{teams[1]['Id']}"
        before = {url: await reader.get(url, headers=org.member) for url in (untouched, touched)}
        seen = await other.readmodel.version(org.id)
        assert seen is not None
        await completed(org, teams[1]["Id"], tree.task(0, 0, 1))
        now = await app_state.readmodel.version(org.id)
        assert await other.readmodel.changes.wait(org.id, seen, timeout=30) == now
        carried = other.readmodel.cache.carried
        kept = await reader.get(untouched, headers=org.member)
        changed = await reader.get(touched, headers=org.member)
    assert kept.content == before[untouched].content
    assert changed.json()["Score"] == before[touched].json()["Score"] + 20
    assert other.readmodel.cache.carried == carried + (0 if app_state.db.is_sqlite else 1)


async def test_another_processes_version_is_never_carried_over(
    world: World, app_state: AppHarness
) -> None:
    org, teams, _tree = await _seeded(world)
    url = f"/team/{teams[0]['Id']}"
    await world.client.get(url, headers=org.member)
    # A version this process did not commit (as another process's would arrive).
    readmodel = app_state.readmodel
    async with app_state.db.session() as session:
        from questline.readmodel.versions import bump

        version = await bump(session, org.id)
        session.info.clear()  # announce nothing, as a commit elsewhere
    readmodel.changes.advance(org.id, version)
    carried = readmodel.cache.carried
    assert (await world.client.get(url, headers=org.member)).status_code == 200
    assert readmodel.cache.carried == carried


# -- property: after random writes of every kind, what is served equals the route's build --

KINDS = [
    "wrong",
    "right",
    "withdraw-answer",
    "self",
    "complete",
    "withdraw",
    "hint",
    "adjust",
    "rename",
    "admin",
    "archive",
    "discipline",
    "outsider-wrong",
    "submit",
    "decide",
]
WRITES = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(min_value=0, max_value=1)),
    min_size=1,
    max_size=8,
)


def _reads(game: Game, teams: list[str]) -> list[tuple[str, dict[str, str]]]:
    """Every cached read of the game's organization, as the callers that see different
    bodies of it."""
    org = game.org
    discipline = game.discipline["Id"]
    plain = [
        "/leaderboard",
        "/leaderboard?limit=1&offset=1",
        f"/leaderboard?discipline={discipline}",
        "/leaderboard/graph?top=3",
        "/team",
        "/team?limit=1",
        "/discipline",
        f"/discipline/{discipline}",
    ]
    per_team = [f"/team/{t}{suffix}" for t in teams for suffix in ("", "/overview")]
    return [
        (url, headers)
        for url in plain + per_team
        for headers in (org.member, org.admin, game.alice)
    ]


async def _withdraw(game: Game, team: str, title: str) -> None:
    task = game.task(title)
    await game.client.delete(f"/team/{team}/progress/{task}", headers=game.org.admin)


async def _act(game: Game, teams: list[str], op: tuple[str, int]) -> None:
    """One write of ``op``'s kind; a completion withdraws the task first, so that each
    one moves the scores."""
    kind, which = op
    org, client, team = game.org, game.client, teams[which]
    if kind == "wrong":
        await game.attempt(game.alice, "Answer task", "nope")
    elif kind == "right":
        await _withdraw(game, game.team_id, "Answer task")
        await game.attempt(game.bob, "Answer task", ANSWER)
    elif kind == "withdraw-answer":
        await _withdraw(game, game.team_id, "Answer task")
    elif kind == "self":
        await _withdraw(game, game.team_id, "Self task")
        await game.complete(game.alice, "Self task")
    elif kind == "complete":
        await _withdraw(game, team, "Admin task")
        await game.complete(org.admin, "Admin task", team_id=team)
    elif kind == "withdraw":
        await _withdraw(game, team, "Admin task")
    elif kind == "hint":
        await game.hint(game.alice, "Answer task", which)
    elif kind == "adjust":
        await client.post(
            f"/team/{team}/adjustments", json={"Points": 3, "Reason": "r"}, headers=org.admin
        )
    elif kind == "rename":
        await client.patch(f"/team/{team}", json={"Name": unique("T")}, headers=org.admin)
    elif kind == "admin":
        await client.post(f"/team/{team}/isadminteam", headers=org.admin)
    elif kind == "archive":
        current = (await client.get(f"/team/{team}", headers=org.admin)).json()["Status"]
        status = "Active" if current == "Archived" else "Archived"
        await client.patch(f"/team/{team}", json={"Status": status}, headers=org.admin)
    elif kind == "discipline":
        await client.post(
            "/discipline", json={"Title": unique("D"), "Description": "d"}, headers=org.admin
        )
    elif kind == "submit":
        await _withdraw(game, game.team_id, "Review task")
        await client.post(
            f"/team/{game.team_id}/submissions",
            json={"TaskId": game.task("Review task"), "Text": "my work"},
            headers=game.alice,
        )
    elif kind == "decide":
        pending = await client.get("/submission?state=Pending", headers=org.admin)
        for found in pending.json()[:1]:
            verdict = "approve" if which == 0 else "reject"
            await client.post(
                f"/submission/{found['Id']}/{verdict}", json={"Comment": "ok"}, headers=org.admin
            )
    else:
        await game.attempt(game.outsider, "Answer task", "nope", team_id=teams[1])


async def _settled(apps: list[AppHarness], organization_id: uuid.UUID) -> None:
    """Until every application knows the newest version any of them committed."""
    newest = max([await app.readmodel.version(organization_id) or 0 for app in apps])
    for app in apps:
        found = await app.readmodel.changes.wait(organization_id, newest - 1, timeout=30)
        assert found >= newest


@settings(
    max_examples=6,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(writes=WRITES, writers=st.lists(st.integers(min_value=0, max_value=1), min_size=8))
async def test_served_bodies_equal_the_routes_after_random_writes(
    world: World,
    app_state: AppHarness,
    other_app: FastAPI,
    writes: list[tuple[str, int]],
    writers: list[int],
) -> None:
    """Two application instances on one database (two worker processes), writes through
    either: after each write, every read either serves equals what the route builds
    from the database."""
    if not hasattr(world, "_game"):
        game = await learners_game(world)
        teams = [team["Id"] for team in await game.org.teams()]
        world._game = (game, teams)  # type: ignore[attr-defined]
    game, teams = world._game  # type: ignore[attr-defined]
    await _check(world, app_state, other_app, game, teams, writes, writers)


async def test_each_kind_of_write_once_then_the_served_bodies_equal_the_routes(
    world: World, app_state: AppHarness, other_app: FastAPI
) -> None:
    """Every kind of write in turn (the property above may not draw each one), each
    through one application and then the other."""
    game = await learners_game(world)
    teams = [team["Id"] for team in await game.org.teams()]
    writes = [(kind, which) for kind in KINDS for which in (0, 1)]
    writers = [n % 2 for n in range(len(writes))]
    await _check(world, app_state, other_app, game, teams, writes, writers)


async def _check(
    world: World,
    app_state: AppHarness,
    other_app: FastAPI,
    game: Game,
    teams: list[str],
    writes: list[tuple[str, int]],
    writers: list[int],
) -> None:
    """``writes`` through the test's application or ``other_app`` (by ``writers``); after
    each one, every read either serves equals what the route builds."""
    transport = httpx.ASGITransport(app=other_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://questline.test") as second:
        apps = [app_state, AppHarness(other_app)]
        await _compare(world, apps, second, game, teams, writes, writers)


async def _compare(
    world: World,
    apps: list[AppHarness],
    second: httpx.AsyncClient,
    game: Game,
    teams: list[str],
    writes: list[tuple[str, int]],
    writers: list[int],
) -> None:
    app_state = apps[0]
    clients = [world.client, second]
    reads = _reads(game, teams)
    for client in clients:  # cache every read at the current version
        for url, headers in reads:
            await client.get(url, headers=headers)
    for op, writer in zip(writes, writers, strict=False):
        await _act(dataclasses.replace(game, client=clients[writer]), teams, op)
        await _settled(apps, game.org.id)
        served = [
            [await client.get(url, headers=headers) for url, headers in reads] for client in clients
        ]
        for app in apps:
            app.readmodel.cache.clear()
        app_state.readmodel.lean.enabled = False  # the route itself builds
        try:
            built = [await world.client.get(url, headers=headers) for url, headers in reads]
        finally:
            app_state.readmodel.lean.enabled = True
        for one in served:
            for (url, _), a, b in zip(reads, one, built, strict=True):
                assert a.status_code == b.status_code, (op, url)
                assert a.content == b.content, (op, url)
