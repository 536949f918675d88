"""At scale on PostgreSQL: the leaderboard and the graphs read through their indexes.

5,000 teams (and 5,000 of another organization) are inserted set-based; the exact
statements the endpoints issue are captured and EXPLAINed with their parameters.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event, text

from questline.leaderboard import graphs
from tests.factories import Org, World
from tests.readmodel.statements import statements
from tests.support.database import as_owner
from tests.support.harness import AppHarness

pytestmark = pytest.mark.anyio

TEAMS = 5000

INSERT_TEAMS = """
INSERT INTO teams (organization_id, id, name, name_key, status, tags, score, score_reached_at,
                   is_survey_completed, is_admin_team, is_ranked, created_at, updated_at, version)
SELECT CAST(:org AS uuid), gen_random_uuid(), 'Team ' || g, 'team ' || lpad(g::text, 5, '0'),
       'Active', '[]'::json, (g * 7919) % 500, now() - make_interval(mins => (g * 31) % 997),
       false, g % 50 = 0, g % 50 <> 0, now() - interval '30 days', now(), 1
FROM generate_series(1, :n) AS g
"""

INSERT_HISTORY = """
INSERT INTO score_events (organization_id, id, team_id, task_id, discipline_id, kind, delta,
                          score_after, at, recorded_at)
SELECT t.organization_id, gen_random_uuid(), t.id, gen_random_uuid(), gen_random_uuid(),
       'Completed', 1, s, now() - make_interval(hours => s), now()
FROM teams AS t CROSS JOIN generate_series(1, 5) AS s
WHERE t.organization_id = CAST(:org AS uuid)
"""


@contextmanager
def capture(state: AppHarness) -> Iterator[list[tuple[str, Any]]]:
    seen: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_args: Any) -> None:
        seen.append((statement, parameters))

    engine = state.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


async def explain(
    state: AppHarness, statement: str, parameters: Any, *, analyze: bool = False
) -> list[dict[str, Any]]:
    options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
    async with state.db.engine.connect() as connection:
        result = await connection.exec_driver_sql(f"EXPLAIN ({options}) " + statement, parameters)
        document = result.scalar_one()
    return list(nodes(document[0]["Plan"]))


async def _populate(world: World, state: AppHarness) -> Org:
    org, other = world.org(), world.org()
    await org.create_team("Zero")  # creates the organization rows through the API
    await other.create_team("Zero")
    # Seeded directly, for both organizations at once: as the owner (row security).
    async with as_owner(state) as engine, engine.begin() as connection:
        for each in (org, other):
            await connection.execute(text(INSERT_TEAMS), {"org": str(each.id), "n": TEAMS})
            await connection.execute(text(INSERT_HISTORY), {"org": str(each.id)})
        await connection.execute(text("ANALYZE teams"))
        await connection.execute(text("ANALYZE score_events"))
    return org


@pytest.mark.postgres_only  # EXPLAIN plans are PostgreSQL's
@pytest.mark.slow
async def test_leaderboard_reads_the_index_in_order_without_sorting(
    world: World, app_state: AppHarness
) -> None:
    org = await _populate(world, app_state)
    readmodel = app_state.readmodel
    readmodel.lean.enabled = False  # the route's statement, with its parameters
    with capture(app_state) as seen:
        response = await org.client.get("/leaderboard", headers=org.member)
    assert response.status_code == 200
    board = response.json()
    assert len(board) == 100
    statement, parameters = next((s, p) for s, p in seen if "ORDER BY teams.score DESC" in s)
    # A miss the fast lane builds runs the very same statement (readmodel/lean.py).
    readmodel.lean.enabled = True
    readmodel.cache.drop_bodies()
    with statements(app_state) as lean:
        again = await org.client.get("/leaderboard", headers=org.member)
    assert again.content == response.content
    assert lean == {"engine": [], "lean": [statement]}
    plan = await explain(app_state, statement, parameters)
    scans = [n for n in plan if n.get("Index Name") == "ix_teams_leaderboard"]
    assert scans, plan
    assert scans[0]["Node Type"] in ("Index Scan", "Index Only Scan")
    assert not [n for n in plan if n["Node Type"] in ("Sort", "Incremental Sort")], plan
    assert not [n for n in plan if n["Node Type"] == "Seq Scan"], plan

    # and the order is the one the rules give
    async with as_owner(app_state) as engine, engine.connect() as connection:
        rows = (
            await connection.execute(
                text(
                    "SELECT name, score, score_reached_at, name_key FROM teams "
                    "WHERE organization_id = CAST(:org AS uuid) AND is_ranked"
                ),
                {"org": str(org.id)},
            )
        ).all()
    expected = sorted(rows, key=lambda r: (-r.score, r.score_reached_at, r.name_key))[:100]
    assert [e["Name"] for e in board] == [r.name for r in expected]
    assert [e["Rank"] for e in board] == list(range(1, 101))


@pytest.mark.postgres_only  # EXPLAIN plans are PostgreSQL's
@pytest.mark.slow
async def test_graph_reads_only_the_top_teams_history(world: World, app_state: AppHarness) -> None:
    org = await _populate(world, app_state)
    readmodel = app_state.readmodel
    readmodel.lean.enabled = False  # the route's statements, with their parameters
    with capture(app_state) as seen:
        response = await org.client.get("/leaderboard/graph?top=10", headers=org.member)
    assert response.status_code == 200
    body = response.json()
    assert len(body) == 10
    assert all(len(series["Points"]) == 6 for series in body)  # start + five changes
    # The ranking, then the teams' creation and history in one (issue 30: a cold read
    # in at most three statements with the version check SQLite adds).
    # (Under row security each transaction first sets its organization: not a read.)
    reads = [s for s, _ in seen if not s.startswith("SELECT set_config(")]
    assert len(reads) <= 2, reads
    statement, parameters = next((s, p) for s, p in seen if "score_events" in s)
    # A miss the fast lane builds: the same ranking with each team's history beside, in
    # one statement (readmodel/lean.py); both plans read the history's index, the lean one
    # once for each of the ten ranked teams (not for every ranked team: after the limit).
    readmodel.lean.enabled = True
    readmodel.cache.drop_bodies()
    with statements(app_state) as lean:
        again = await org.client.get("/leaderboard/graph?top=10", headers=org.member)
    assert again.content == response.content
    assert lean["engine"] == []
    ranked = readmodel.lean.statement("graph-ranked-histories", graphs.ranked_histories_statement)
    assert lean["lean"] == [ranked.sql]
    ranking = next(s for s, _ in seen if "ORDER BY teams.score DESC" in s)
    # the ranking's own columns first, its own order and limit last
    assert ranked.sql.startswith(ranking.split("\nFROM")[0].rstrip() + ", ")
    assert ranked.sql.endswith(ranking[ranking.index(" ORDER BY ") :])
    lean_parameters = tuple(ranked.arguments({"org": org.id, "limit": 10, "offset": 0}))
    for sql, values in ((statement, parameters), (ranked.sql, lean_parameters)):
        plan = await explain(app_state, sql, values, analyze=sql == ranked.sql)
        scans = [n for n in plan if n.get("Relation Name") == "score_events"]
        assert [n.get("Index Name") for n in scans] == ["ix_score_events_team_at"], plan
        assert all(n.get("Actual Loops", 1) <= 10 for n in scans), plan
        assert not [n for n in plan if n["Node Type"] == "Seq Scan"], plan
