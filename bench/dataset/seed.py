"""The benchmark's dataset (``bench.dataset.rules``), written set-based with SQLAlchemy Core.

The discipline tree (147 rows) is inserted from Python. Everything that grows with
the number of teams is ``INSERT … SELECT`` computed by the database from a row
generator (a recursive CTE) and a small ``stride`` table (which task a team did at
step k, and its running score), so 100,000 teams — 300,000 members and memberships,
2,000,000 completions and 2,000,000 score-history rows — are written in seconds,
not in minutes of Python building rows. The tables and columns are the project's
models (``Base.metadata``): the seed follows the schema, and fails loudly when a
column it does not know becomes required.

The progress tables (``task_completions``, ``score_events``) land with the progress
domain; until the schema has them the seed writes teams' scores without history.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    Index,
    Select,
    Table,
    event,
    func,
    insert,
    select,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from bench.dataset import growth, rules
from bench.dataset.rules import EPOCH, ORG_ID, Kind, TaskRef
from bench.dataset.sqlgen import ident
from bench.dataset.tenants import Tenants
from questline.demo import content as demo_content
from questline.models import Base

PROGRESS_TABLES = ("task_completions", "score_events")


@dataclass
class Seeded:
    """What the load scripts need: ids to pick from, and what was written."""

    org_id: uuid.UUID
    team_ids: list[uuid.UUID]
    discipline_ids: list[uuid.UUID]
    progress_pairs: list[tuple[uuid.UUID, uuid.UUID]]
    """(team, task) pairs the team has not completed: the write benchmark's targets."""
    spare_pair: tuple[uuid.UUID, uuid.UUID]
    """One more such pair, for the pre-flight check of the write row."""
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    history_seeded: bool = False


# -- the discipline tree (Python: a few rows) ----------------------------------------


def discipline_tree() -> tuple[dict[str, list[dict[str, Any]]], list[TaskRef]]:
    """The demo's three disciplines (``questline.demo.content``), owned by the
    organization as ``questline demo`` creates them, as rows of the five tree tables."""
    rows: dict[str, list[dict[str, Any]]] = {
        k: [] for k in ("disciplines", "levels", "quests", "tasks", "resources")
    }
    tasks: list[TaskRef] = []
    counters = dict.fromkeys(rows, 0)

    def add(table: str, kind: int, values: dict[str, Any]) -> uuid.UUID:
        node_id = ident(kind, counters[table])
        counters[table] += 1
        rows[table].append({"id": node_id, **values})
        return node_id

    def resources(d_id: uuid.UUID, owner_kind: str, owner: uuid.UUID, doc: dict[str, Any]) -> None:
        for position, res in enumerate(doc.get("Resources", [])):
            add(
                "resources",
                Kind.RESOURCE,
                {
                    "discipline_id": d_id,
                    "owner_kind": owner_kind,
                    "owner_id": owner,
                    "position": position,
                    "title": res["Title"],
                    "description": res.get("Description", ""),
                    "url": res["Url"],
                    "kind": res.get("Kind", "Link"),
                },
            )

    def text(doc: dict[str, Any]) -> dict[str, Any]:
        return {"title": doc["Title"], "description": doc.get("Description", "")}

    for color in rules.COLORS:
        doc = demo_content.document(color)
        d_id = add(
            "disciplines",
            Kind.DISCIPLINE,
            {
                "organization_id": ORG_ID,
                **text(doc),
                "color": color,
                "created_at": EPOCH,
                "updated_at": EPOCH,
                "version": 1,
            },
        )
        resources(d_id, "discipline", d_id, doc)
        for lp, level in enumerate(doc["Levels"]):
            l_id = add("levels", Kind.LEVEL, {"discipline_id": d_id, "position": lp, **text(level)})
            resources(d_id, "level", l_id, level)
            for qp, quest in enumerate(level["Quests"]):
                q_values = {"discipline_id": d_id, "level_id": l_id, "position": qp, **text(quest)}
                q_id = add("quests", Kind.QUEST, q_values)
                resources(d_id, "quest", q_id, quest)
                for tp, task in enumerate(quest["Tasks"]):
                    t_values = {
                        "discipline_id": d_id,
                        "level_id": l_id,
                        "quest_id": q_id,
                        "position": tp,
                        **text(task),
                        "points": task["Points"],
                    }
                    t_id = add("tasks", Kind.TASK, t_values)
                    resources(d_id, "task", t_id, task)
                    tasks.append(TaskRef(t_id, d_id, task["Points"]))
    assert len(tasks) == rules.TASK_COUNT, (
        "the demo's disciplines changed: update bench/dataset/rules.py"
    )
    return rows, tasks


def _seasons() -> list[dict[str, Any]]:
    """The dataset's seasons: ``rules.SEASON_ID``, frozen while the benchmark runs, and
    ``rules.LIVE_SEASON_ID``, running (no freeze)."""
    ends = dt.datetime.now(dt.UTC) + dt.timedelta(days=365)
    common = {"organization_id": ORG_ID, "ends_at": ends, "created_at": EPOCH, "updated_at": EPOCH}
    return [
        {
            **common,
            "id": rules.SEASON_ID,
            "name": "Bench season",
            "starts_at": rules.SEASON_STARTS,
            "freezes_at": rules.SEASON_FREEZES,
        },
        {
            **common,
            "id": rules.LIVE_SEASON_ID,
            "name": "Bench live season",
            "starts_at": rules.LIVE_SEASON_STARTS,
            "freezes_at": None,
        },
    ]


def _table(name: str) -> Table:
    table = Base.metadata.tables.get(name)
    if table is None:
        raise RuntimeError(f"the schema has no table {name!r}")
    return table


def _check_covers(table: Table, query: Select[Any]) -> list[str]:
    """The query's column names; raises when the table requires a column it lacks."""
    names = [c.name for c in query.selected_columns]
    unknown = set(names) - set(table.c.keys())
    missing = [
        c.name
        for c in table.columns
        if c.name not in names and not c.nullable and c.default is None and c.server_default is None
    ]
    if unknown or missing:
        raise SchemaDrift(f"{table.name}: unknown {sorted(unknown)}, missing {missing}")
    return names


class SchemaDrift(RuntimeError):
    """The schema changed in a way the seed does not know: update bench/dataset/seed.py."""


def history_available() -> bool:
    if not all(name in Base.metadata.tables for name in PROGRESS_TABLES):
        return False
    try:
        _check_covers(_table("task_completions"), growth.completions_select(_SQLITE, 1))
        _check_covers(_table("score_events"), growth.history_select(_SQLITE, 1))
    except SchemaDrift as drift:
        print(f"bench: not seeding the progress history ({drift})")
        return False
    return True


async def _insert_select(conn: AsyncConnection, table_name: str, query: Select[Any]) -> int:
    table = _table(table_name)
    names = _check_covers(table, query)
    result = await conn.execute(insert(table).from_select(names, query))
    if result.rowcount >= 0:
        return int(result.rowcount)
    # sqlite3 counts no rows for a statement that starts with WITH.
    return int(await conn.scalar(select(func.count()).select_from(table)) or 0)


async def _drop_indexes(conn: AsyncConnection, names: tuple[str, ...]) -> list[Index]:
    """Secondary indexes off during the load: one sort each after it, instead of
    millions of index insertions."""
    dropped = [index for name in names for index in _table(name).indexes]
    for index in dropped:
        await conn.run_sync(index.drop)
    return dropped


async def _copy(
    conn: AsyncConnection, table: Table, names: list[str], rows: list[tuple[Any, ...]]
) -> None:
    """Rows computed in Python: ``COPY`` on PostgreSQL (asyncpg's binary copy), else one
    ``executemany``."""
    if conn.dialect.name == "postgresql":
        raw = await conn.get_raw_connection()
        await raw.driver_connection.copy_records_to_table(  # type: ignore[union-attr]
            table.name, records=rows, columns=names
        )
        return
    await conn.execute(insert(table), [dict(zip(names, row, strict=True)) for row in rows])


async def _write_tenants(conn: AsyncConnection, tenants: Tenants) -> dict[str, int]:
    """The organizations and the team → organization table the selects join."""
    orgs = [(org_id, EPOCH, f"Org {rank}") for rank, org_id in enumerate(tenants.org_ids)]
    await _copy(conn, _table("organizations"), ["id", "created_at", "name"], orgs)
    await conn.run_sync(growth.OWNERS.create)
    owners = list(tenants.owner_rows())
    await _copy(conn, growth.OWNERS, ["n", "organization_id"], owners)
    return {"organizations": len(orgs)}


async def seed(
    engine: AsyncEngine, teams: int, *, pairs: int = 4_000, tenants: Tenants | None = None
) -> Seeded:
    """Write the dataset into an empty, migrated database.

    With ``tenants`` (bench.platform): many organizations, team ``n`` in the one
    ``tenants`` gives it (``teams`` is then their total), the organizations and the
    team → organization table written with ``COPY`` on PostgreSQL; the demo's three
    disciplines are global (every organization reads the same tree, as a platform's
    shared catalogue: one tree instead of one per organization), and no season."""
    started = time.perf_counter()
    tree, tasks = discipline_tree()
    if tenants is not None:
        teams = tenants.teams
        for row in tree["disciplines"]:
            row["organization_id"] = None
    owners = growth.OWNERS if tenants is not None else None
    with_history = history_available()
    dialect = engine.dialect
    written: dict[str, int] = {name: len(rows) for name, rows in tree.items()}
    async with _loading(engine) as conn:
        if tenants is None:
            organization = {"id": ORG_ID, "created_at": EPOCH}
            await conn.execute(insert(_table("organizations")), [organization])
        else:
            written |= await _write_tenants(conn, tenants)
        for name, rows in tree.items():
            await conn.execute(insert(_table(name)), rows)
        if "seasons" in Base.metadata.tables and tenants is None:
            await conn.execute(insert(_table("seasons")), _seasons())
        await conn.run_sync(growth.STRIDE.create)
        await conn.execute(insert(growth.STRIDE), growth.stride_rows(tasks))
        dropped = await _drop_indexes(conn, PROGRESS_TABLES if with_history else ())
    if dialect.name == "postgresql":
        async with engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql(f"ANALYZE {growth.STRIDE.name}")
            if owners is not None:
                await conn.exec_driver_sql(f"ANALYZE {owners.name}")
    groups = [
        [
            ("teams", growth.teams_select(dialect, teams, owners)),
            ("members", growth.members_select(dialect, teams, owners)),
            ("team_members", growth.memberships_select(dialect, teams, owners)),
        ]
    ]
    if with_history:
        groups.append([("task_completions", growth.completions_select(dialect, teams, owners))])
        groups.append([("score_events", growth.history_select(dialect, teams, owners))])

    async def load(group: list[tuple[str, Select[Any]]]) -> None:
        async with _loading(engine) as conn:
            for name, query in group:
                written[name] = await _insert_select(conn, name, query)

    async def build(index: Index) -> None:
        async with _loading(engine) as conn:
            await conn.run_sync(index.create)

    await _each(engine, [load(g) for g in groups])
    await _each(engine, [build(index) for index in dropped])
    async with _loading(engine) as conn:
        await conn.run_sync(growth.STRIDE.drop)
        if owners is not None:
            await conn.run_sync(owners.drop)
        if with_history:
            await _check_scores(conn)
    await _analyze(engine)
    progress_pairs = _progress_pairs(teams, tasks, pairs + 1)
    return Seeded(
        org_id=ORG_ID if tenants is None else tenants.org_ids[0],
        team_ids=[ident(Kind.TEAM, n) for n in range(teams)],
        discipline_ids=[ident(Kind.DISCIPLINE, d) for d in range(len(rules.COLORS))],
        progress_pairs=progress_pairs[:-1],
        spare_pair=progress_pairs[-1],
        rows=written,
        seconds=time.perf_counter() - started,
        history_seeded=with_history,
    )


async def _each(engine: AsyncEngine, jobs: list[Coroutine[Any, Any, None]]) -> None:
    """PostgreSQL: side by side, on as many connections (the machine has the cores to
    spare during the load); SQLite has one writer: one after the other."""
    if engine.dialect.name == "postgresql":
        await asyncio.gather(*jobs)
        return
    for job in jobs:
        await job


@asynccontextmanager
async def _loading(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A transaction set up for a bulk load."""
    async with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            # Consistent by construction (and checked): no foreign-key trigger per row,
            # as a bulk load does. (SQLite: the seeding engine leaves foreign keys off,
            # SQLite's default.) Sorts and index builds in memory.
            for setting in (
                "session_replication_role = replica",
                "work_mem = '512MB'",
                "maintenance_work_mem = '512MB'",
                "jit = off",
            ):
                await conn.exec_driver_sql(f"SET LOCAL {setting}")
        yield conn


async def _check_scores(conn: AsyncConnection) -> None:
    """The teams' scores equal the points of their completions."""
    teams, completions = _table("teams"), _table("task_completions")
    team_total = await conn.scalar(select(func.sum(teams.c.score)))
    done_total = await conn.scalar(select(func.sum(completions.c.points)))
    if int(team_total or 0) != int(done_total or 0):
        raise RuntimeError(f"seed: scores add up to {team_total}, completions to {done_total}")


def _progress_pairs(
    teams: int, tasks: list[TaskRef], count: int
) -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(team, task) pairs not completed yet, spread over the teams, no admin team."""
    pairs: list[tuple[uuid.UUID, uuid.UUID]] = []
    ranked = [n for n in range(teams) if not rules.is_admin(n)]
    stride = max(1, len(ranked) // count)
    round_ = 0
    while len(pairs) < count:
        for n in ranked[round_ % stride :: stride]:
            free = sorted(set(range(rules.TASK_COUNT)) - rules.completed_tasks(n))
            pairs.append((ident(Kind.TEAM, n), tasks[free[round_ % len(free)]].id))
            if len(pairs) == count:
                break
        round_ += 1
    return pairs


def seeding_engine(url: str) -> AsyncEngine:
    """An engine for the load. SQLite: WAL as the service keeps it, a large page cache
    and no fsync during the load."""
    engine = create_async_engine(url)
    if engine.dialect.name == "sqlite":

        @event.listens_for(engine.sync_engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            for pragma in ("journal_mode=WAL", "synchronous=OFF", "cache_size=-1000000"):
                cursor.execute(f"PRAGMA {pragma}")
            cursor.close()

    return engine


async def _analyze(engine: AsyncEngine) -> None:
    """Fresh planner statistics and visibility maps, as autovacuum leaves a live database."""
    if engine.dialect.name == "postgresql":
        async with engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql("VACUUM ANALYZE")
    else:
        async with engine.begin() as conn:
            await conn.exec_driver_sql("ANALYZE")


def _sqlite_dialect() -> Dialect:
    from sqlalchemy.dialects import sqlite

    return sqlite.dialect()


_SQLITE = _sqlite_dialect()
