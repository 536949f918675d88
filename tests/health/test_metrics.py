"""``/metrics``: the business counters and the database pool, read as Prometheus reads
them, after driving the real API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
import sqlalchemy.exc
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from questline.app import create_app
from questline.config import Settings
from questline.storage.pool import MeteredQueuePool
from tests.bulk.factories import post_csv
from tests.factories import World, bearer
from tests.progress.factories import complete, make_discipline

pytestmark = pytest.mark.anyio

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(client: httpx.AsyncClient, world: World) -> Samples:
    """``/metrics`` as a Prometheus with an operator token reads it (closed otherwise)."""
    response = await client.get("/metrics", headers=bearer(world.operator_token()))
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


async def test_business_counters_follow_what_the_api_did(world: World) -> None:
    org = world.org()
    before = await scrape(world.client, world)

    team = await org.create_team("Counted")
    duplicate = await world.client.post("/team", json={"name": "Counted"}, headers=org.admin)
    assert duplicate.status_code == 409  # rolled back: not counted
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[5, 3]]])
    first, second = tree.task(0, 0, 0), tree.task(0, 0, 1)
    assert (await complete(org, team["Id"], first)).status_code == 201
    assert (await complete(org, team["Id"], first)).status_code == 200  # a repeat
    assert (await complete(org, team["Id"], second)).status_code == 201
    withdrawn = await world.client.delete(f"/team/{team['Id']}/progress/{first}", headers=org.admin)
    assert withdrawn.status_code == 204

    csv = "team,email,givenName,tags\r\nA,a@example.org,Ada,\r\nA,b@example.org,Bo,\r\nB,,,\r\n"
    assert (await post_csv(org, csv.encode())).status_code == 201
    key = {"Idempotency-Key": "metrics-json-1"}
    body = [{"name": "J1"}, {"name": "J2"}, {"name": "J3"}]
    created = await world.client.post("/team/bulk", json=body, headers={**org.admin, **key})
    assert created.status_code == 201
    replayed = await world.client.post("/team/bulk", json=body, headers={**org.admin, **key})
    assert replayed.headers["Idempotent-Replayed"] == "true"

    after = await scrape(world.client, world)
    assert delta(before, after, "questline_teams_created_total") == 1 + 2 + 3
    assert delta(before, after, "questline_tasks_completed_total") == 2
    assert delta(before, after, "questline_tasks_withdrawn_total") == 1
    assert delta(before, after, "questline_bulk_rows_imported_total", format="csv") == 3
    assert delta(before, after, "questline_bulk_rows_imported_total", format="json") == 3
    assert delta(before, after, "questline_idempotent_replays_total") == 1


async def test_rate_limited_requests_are_counted_by_route_class(
    world: World, settings: Settings
) -> None:
    limited = create_app(
        settings.model_copy(update={"rate_limit_enabled": True, "rate_limit_reads": "2/minute"})
    )
    org = world.org()
    await org.create_team()
    try:
        transport = httpx.ASGITransport(app=limited)
        async with httpx.AsyncClient(transport=transport, base_url="http://q.test") as client:
            before = await scrape(client, world)
            statuses = [(await client.get("/team", headers=org.member)).status_code for _ in "abcd"]
            after = await scrape(client, world)
    finally:
        await limited.state.questline.db.dispose()
    assert statuses == [200, 200, 429, 429]
    assert delta(before, after, "questline_rate_limited_requests_total", route_class="reads") == 2


async def test_pool_gauges_show_connections_in_use(app: FastAPI, world: World) -> None:
    db = app.state.questline.db
    backend = "sqlite" if db.is_sqlite else "postgresql"
    async with db.engine.connect() as held:
        await held.execute(text("SELECT 1"))
        during = await scrape(world.client, world)
    after = await scrape(world.client, world)
    settings: Settings = app.state.questline.settings
    if backend == "postgresql":
        assert value(during, "questline_db_pool_size", backend=backend) == (
            settings.database_pool_size
        )
    assert value(during, "questline_db_pool_size", backend=backend) >= 1
    # The held connection, and the one the /metrics request itself does not take.
    assert value(during, "questline_db_pool_in_use", backend=backend) >= 1
    assert value(after, "questline_db_pool_in_use", backend=backend) == (
        value(during, "questline_db_pool_in_use", backend=backend) - 1
    )
    assert value(after, "questline_db_pool_idle", backend=backend) >= 1


@pytest.fixture
async def tiny_pool(settings: Settings) -> AsyncIterator[AsyncEngine]:
    """One connection, no overflow, a short checkout timeout: the second checkout waits."""
    engine = create_async_engine(
        settings.resolved_database_url,
        poolclass=MeteredQueuePool,
        pool_size=1,
        max_overflow=0,
        pool_timeout=0.2,
    )
    try:
        yield engine
    finally:
        await engine.dispose()


async def test_a_checkout_that_finds_the_pool_exhausted_is_counted_as_a_wait(
    world: World, tiny_pool: AsyncEngine
) -> None:
    engine = tiny_pool
    before = await scrape(world.client, world)
    async with engine.connect() as held:
        await held.execute(text("SELECT 1"))
        with pytest.raises(sqlalchemy.exc.TimeoutError):
            async with engine.connect():
                pass
    async with engine.connect() as again:  # free again: no wait
        await again.execute(text("SELECT 1"))
    after = await scrape(world.client, world)
    assert delta(before, after, "questline_db_pool_waits_total") == 1
    assert delta(before, after, "questline_db_pool_wait_seconds_total") >= 0.2


async def test_counting_costs_nothing_when_the_transaction_rolls_back(world: World) -> None:
    """Parallel creations of one name: one wins, the others roll back and count nothing."""
    org = world.org()
    before = await scrape(world.client, world)
    responses = await asyncio.gather(
        *(world.client.post("/team", json={"name": "Race"}, headers=org.admin) for _ in range(5))
    )
    after = await scrape(world.client, world)
    assert sorted(r.status_code for r in responses).count(201) == 1
    assert delta(before, after, "questline_teams_created_total") == 1
