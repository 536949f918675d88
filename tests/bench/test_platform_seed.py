"""The set-based seed of many organizations (bench.dataset.seed with ``tenants``), on both
backends: every team, member and completion belongs to its organization."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.dataset.seed import seed, seeding_engine
from bench.dataset.tenants import tenants
from bench.harness.service import settings_for
from sqlalchemy import text

from questline.storage.migrate import upgrade
from tests.support.postgres import PostgresServer, unique_database_name

pytestmark = pytest.mark.anyio


@pytest.fixture
def empty_database(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    url = None
    if backend == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        url = server.create_database(unique_database_name())
    settings = settings_for(tmp_path, url)
    upgrade(settings)
    return settings.resolved_database_url


async def test_each_organization_gets_its_teams(empty_database: str) -> None:
    found = tenants(12, 300, seed=5)
    engine = seeding_engine(empty_database)
    try:
        seeded = await seed(engine, 0, tenants=found, pairs=5)
        async with engine.connect() as conn:
            teams = dict(
                (await conn.execute(
                    text("SELECT organization_id, count(*) FROM teams GROUP BY organization_id")
                )).all()
            )  # fmt: skip
            strays = await conn.scalar(
                text(
                    "SELECT count(*) FROM team_members tm JOIN teams t ON t.id = tm.team_id "
                    "WHERE t.organization_id <> tm.organization_id"
                )
            )
            completions_astray = await conn.scalar(
                text(
                    "SELECT count(*) FROM task_completions c JOIN teams t ON t.id = c.team_id "
                    "WHERE t.organization_id <> c.organization_id"
                )
            )
            global_disciplines = await conn.scalar(
                text("SELECT count(*) FROM disciplines WHERE organization_id IS NULL")
            )
            organizations = await conn.scalar(text("SELECT count(*) FROM organizations"))
    finally:
        await engine.dispose()
    by_org = {str(k).replace("-", ""): v for k, v in teams.items()}
    assert by_org == {org.hex: size for org, size in zip(found.org_ids, found.sizes, strict=True)}
    assert strays == 0
    assert completions_astray == 0
    assert global_disciplines == 3
    assert organizations == 12
    assert seeded.rows["teams"] == 300
    assert seeded.rows["task_completions"] == 300 * 20
