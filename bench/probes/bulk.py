"""Benchmark of ``POST /team/bulk``: 10,000 teams with 3 members each, SQLite and PostgreSQL.

    .venv/bin/python -m bench.bulk [--teams 10000] [--members 3] [--repeat 3]
                                   [--backends sqlite,postgresql]

For each backend (PostgreSQL: a throwaway server started from the local binaries, as
the tests do) and each body format it measures, in the same run:

* the endpoint, through the whole ASGI stack in-process (httpx ASGITransport: JWT,
  body guard, parsing, validation, pre-checks, inserts, response):
  - ``json``: teams naming 3 existing members by id (the members are inserted first,
    untimed);
  - ``csv``: one row a member, the members created by e-mail;
* a plain batched insert of the same rows with SQLAlchemy Core
  (``connection.execute(insert(table), rows)`` in one transaction), no checks at all;
* on PostgreSQL, a plain ``COPY`` of the same rows into the same tables (with their
  indexes and keys), one per table in one transaction (asyncpg's
  ``copy_records_to_table``): the floor of any import;

and prints teams per second of each and the ratios (endpoint / Core, goal >= 0.5;
endpoint / COPY on PostgreSQL, goal >= 0.5).
Times are the best of ``--repeat`` runs, every run in a new organization; ``ratio`` is
best over best, ``paired`` the median ratio of runs made back to back (steadier when
other processes share the machine).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import insert
from tests.support.postgres import PostgresServer

from questline.app import create_app
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.members.models import Member, TeamMembership
from questline.organizations.models import Organization
from questline.storage.db import Database, new_id, utcnow
from questline.storage.migrate import upgrade
from questline.teams.models import Team, TeamStatus
from questline.web.identity import Role


@dataclass(frozen=True)
class Result:
    backend: str
    form: str
    teams: int
    api: list[float]
    core: list[float]
    """Seconds of each run; ``api[i]`` and ``core[i]`` ran back to back."""
    copy: list[float]
    """PostgreSQL: seconds of the plain ``COPY`` run after ``api[i]`` (empty on SQLite)."""

    @property
    def ratio(self) -> float:
        """Best Core time over best endpoint time."""
        return min(self.core) / min(self.api)

    @property
    def paired_ratio(self) -> float:
        """The median of the back-to-back runs' ratios (steadier on a busy machine)."""
        return statistics.median(c / a for a, c in zip(self.api, self.core, strict=True))

    @property
    def copy_ratio(self) -> float | None:
        """The median of the back-to-back runs' COPY time over endpoint time."""
        if not self.copy:
            return None
        return statistics.median(c / a for a, c in zip(self.api, self.copy, strict=True))

    def line(self) -> str:
        api, core = min(self.api), min(self.core)
        copied = (
            f"{min(self.copy):>9.2f}{self.teams / min(self.copy):>10.0f}{self.copy_ratio:>8.2f}"
            if self.copy_ratio is not None
            else f"{'-':>9}{'-':>10}{'-':>8}"
        )
        return (
            f"{self.backend:<11}{self.form:<6}{self.teams:>7}"
            f"{api:>9.2f}{self.teams / api:>10.0f}{core:>9.2f}{self.teams / core:>10.0f}"
            f"{self.ratio:>8.2f}{self.paired_ratio:>8.2f}{copied}"
        )


HEADER = (
    f"{'backend':<11}{'body':<6}{'teams':>7}{'api s':>9}{'api t/s':>10}"
    f"{'core s':>9}{'core t/s':>10}{'ratio':>8}{'paired':>8}"
    f"{'copy s':>9}{'copy t/s':>10}{'÷ copy':>8}"
)


def team_row(org_id: uuid.UUID, name: str, now: Any) -> dict[str, Any]:
    return {
        "organization_id": org_id,
        "id": new_id(),
        "name": name,
        "name_key": name.casefold(),
        "status": TeamStatus.ACTIVE,
        "tags": ["cohort"],
        "score": 0,
        "score_reached_at": now,
        "is_survey_completed": False,
        "is_admin_team": False,
        "is_ranked": True,
        "created_at": now,
        "updated_at": now,
        "version": 1,
    }


def member_row(org_id: uuid.UUID, email: str, now: Any) -> dict[str, Any]:
    return {
        "organization_id": org_id,
        "id": new_id(),
        "email": email,
        "email_key": email.casefold(),
        "given_name": "Person",
        "created_at": now,
    }


async def new_org(db: Database) -> uuid.UUID:
    org_id = uuid.uuid4()
    async with db.engine.begin() as connection:
        await connection.execute(
            insert(Organization.__table__).values(id=org_id, created_at=utcnow())
        )
    return org_id


Rows = tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]


async def same_rows(db: Database, *, teams: int, members: int, with_members: bool) -> Rows:
    """The rows an import of ``teams`` makes in a new organization: its teams, members
    (inserted now, untimed, when the import names existing ones) and memberships."""
    org_id = await new_org(db)
    now = utcnow()
    team_rows = [team_row(org_id, f"Team {i:06d}", now) for i in range(teams)]
    member_rows = [member_row(org_id, f"p{i}@example.org", now) for i in range(teams * members)]
    if not with_members:  # json: the members exist before the timed part
        async with db.engine.begin() as connection:
            await connection.execute(insert(Member.__table__), member_rows)
    links = [
        {
            "organization_id": org_id,
            "team_id": team_rows[i // members]["id"],
            "member_id": member_rows[i]["id"],
            "created_at": now,
        }
        for i in range(teams * members)
    ]
    return team_rows, member_rows if with_members else [], links


async def core_insert(db: Database, *, teams: int, members: int, with_members: bool) -> float:
    """The same rows, straight into the database: the yardstick."""
    team_rows, member_rows, links = await same_rows(
        db, teams=teams, members=members, with_members=with_members
    )
    started = time.perf_counter()
    async with db.engine.begin() as connection:
        await connection.execute(insert(Team.__table__), team_rows)
        if member_rows:
            await connection.execute(insert(Member.__table__), member_rows)
        await connection.execute(insert(TeamMembership.__table__), links)
    return time.perf_counter() - started


async def copy_insert(db: Database, *, teams: int, members: int, with_members: bool) -> float:
    """PostgreSQL: the same rows by a plain ``COPY`` a table, in one transaction: the
    floor an import is measured against."""
    team_rows, member_rows, links = await same_rows(
        db, teams=teams, members=members, with_members=with_members
    )
    tables = [(Team.__table__, team_rows), (Member.__table__, member_rows)]
    tables.append((TeamMembership.__table__, links))
    async with db.engine.connect() as connection:
        driver = (await connection.get_raw_connection()).driver_connection
        started = time.perf_counter()
        async with driver.transaction():
            for table, rows in tables:
                if not rows:
                    continue
                columns = list(rows[0])
                await driver.copy_records_to_table(
                    table.name,
                    records=[tuple(_copied(row[c]) for c in columns) for row in rows],
                    columns=columns,
                )
        return time.perf_counter() - started


def _copied(value: Any) -> Any:
    """A value as asyncpg's binary COPY takes it (enums by value, JSON as text)."""
    if isinstance(value, TeamStatus):
        return value.value
    if isinstance(value, list):
        return json.dumps(value)
    return value


async def api_insert(
    client: httpx.AsyncClient,
    db: Database,
    token_for: Callable[[uuid.UUID], str],
    *,
    teams: int,
    members: int,
    form: str,
) -> float:
    org_id = await new_org(db)
    headers = {"Authorization": f"Bearer {token_for(org_id)}"}
    if form == "json":
        now = utcnow()
        people = [member_row(org_id, f"p{i}@example.org", now) for i in range(teams * members)]
        async with db.engine.begin() as connection:
            await connection.execute(insert(Member.__table__), people)
        items = [
            {
                "name": f"Team {i:06d}",
                "members": [str(people[i * members + j]["id"]) for j in range(members)],
                "tags": ["cohort"],
            }
            for i in range(teams)
        ]
        request = client.build_request("POST", "/team/bulk", json=items, headers=headers)
    else:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(["team", "email", "givenName", "tags"])
        for i in range(teams * members):
            writer.writerow([f"Team {i // members:06d}", f"p{i}@example.org", "Person", "cohort"])
        request = client.build_request(
            "POST",
            "/team/bulk",
            content=out.getvalue().encode(),
            headers={**headers, "Content-Type": "text/csv"},
        )
    started = time.perf_counter()
    response = await client.send(request)
    elapsed = time.perf_counter() - started
    if response.status_code != 201 or len(response.json()) != teams:
        raise RuntimeError(f"bulk request failed: {response.status_code} {response.text[:500]}")
    return elapsed


async def measure(settings: Settings, backend: str, args: argparse.Namespace) -> list[Result]:
    app = create_app(settings)
    state = app.state.questline
    db: Database = state.db

    def token_for(org_id: uuid.UUID) -> str:
        return TokenService(settings).mint(role=Role.ADMIN, org_id=org_id, subject="bench")

    results = []
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://bench", timeout=600
    ) as client:
        for form in ("json", "csv"):
            api: list[float] = []
            core: list[float] = []
            copied: list[float] = []
            for _ in range(args.repeat):
                api.append(
                    await api_insert(
                        client, db, token_for, teams=args.teams, members=args.members, form=form
                    )
                )
                core.append(
                    await core_insert(
                        db, teams=args.teams, members=args.members, with_members=form == "csv"
                    )
                )
                if backend == "postgresql":
                    copied.append(
                        await copy_insert(
                            db, teams=args.teams, members=args.members, with_members=form == "csv"
                        )
                    )
            result = Result(backend, form, args.teams, api, core, copied)
            print(result.line(), flush=True)
            results.append(result)
    await db.dispose()
    return results


def run(settings: Settings, backend: str, args: argparse.Namespace) -> list[Result]:
    upgrade(settings)  # Alembic runs its own event loop: outside ours
    return asyncio.run(measure(settings, backend, args))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teams", type=int, default=10_000)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    print(f"{args.teams} teams x {args.members} members, best of {args.repeat}")
    print(HEADER)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="questline-bench-") as tmp:
        base = {
            "jwt_secret": "b" * 48,
            "max_bulk_teams": max(args.teams, 10_000),
            "_env_file": None,
        }
        if "sqlite" in backends:
            settings = Settings(data_dir=Path(tmp) / "sqlite", **base)  # type: ignore[arg-type]
            results += run(settings, "sqlite", args)
        if "postgresql" in backends:
            server = PostgresServer().start()
            try:
                url = server.create_database("bench")
                settings = Settings(
                    data_dir=Path(tmp) / "pg", database_url=url, database_row_security=False, **base
                )  # type: ignore[arg-type]
                results += run(settings, "postgresql", args)
            finally:
                server.cleanup()
    worst = min(r.paired_ratio for r in results)
    print(f"lowest paired ratio endpoint/Core: {worst:.2f} (goal >= 0.5)")
    copies = [r.copy_ratio for r in results if r.copy_ratio is not None]
    if copies:
        print(f"lowest paired ratio endpoint/COPY: {min(copies):.2f} (goal >= 0.5)")
    return 0 if worst >= 0.5 and all(c >= 0.5 for c in copies) else 1


if __name__ == "__main__":
    sys.exit(main())
