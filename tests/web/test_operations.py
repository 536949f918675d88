"""Operations: idempotency records purged, ``/metrics`` closed unless opened, allowed hosts, private
SQLite files, short secrets refused, no SQL parameters in errors, ``/readyz`` wants a
write, 405 lists every method, a bulk request whose only problem is taken names is 409."""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import stat
import uuid
from pathlib import Path

import anyio
import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError

from questline.app import create_app
from questline.auth.tokens import WeakSecret
from questline.config import Settings
from questline.storage import tenancy
from questline.storage.db import utcnow
from questline.storage.migrate import upgrade
from questline.web.idempotency import IdempotencyRecord
from tests.factories import World, bearer
from tests.support.routes import route_table
from tests.web.conftest import AppFactory, client_for

pytestmark = pytest.mark.anyio


async def test_expired_idempotency_records_are_purged_periodically(
    make_app: AppFactory, world: World
) -> None:
    org = world.org()
    await org.create_team("Seed")  # the organization row exists
    app = make_app(idempotency_purge_interval_seconds=0.05, idempotency_ttl_hours=1)
    db = app.state.questline.db
    with tenancy.acting_for(org.id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with db.session() as session:
            for key, age in (("old", dt.timedelta(hours=2)), ("new", dt.timedelta(minutes=1))):
                session.add(
                    IdempotencyRecord(
                        organization_id=org.id,
                        key=key,
                        request_hash="0" * 64,
                        status_code=201,
                        headers={},
                        body=b"{}",
                        created_at=utcnow() - age,
                    )
                )
    async with app.router.lifespan_context(app):
        for _ in range(100):
            with tenancy.acting_for(org.id):
                async with db.session(write=False) as session:
                    keys = set((await session.scalars(select(IdempotencyRecord.key))).all())
            if keys == {"new"}:
                break
            await asyncio.sleep(0.05)
    assert keys == {"new"}


async def test_idempotency_records_keep_a_hash_of_the_request_not_the_request(
    world: World,
) -> None:
    org = world.org()
    member = await org.create_member()
    response = await world.client.post(
        "/team",
        json={"name": "Hashed", "members": [member["Id"]]},
        headers={**org.admin, "Idempotency-Key": "hash-me"},
    )
    assert response.status_code == 201
    with tenancy.acting_for(org.id):  # row-level security (QUESTLINE_TEST_ROW_SECURITY)
        async with world.db.session(write=False) as session:
            record = await session.scalar(
                select(IdempotencyRecord).where(IdempotencyRecord.key == "hash-me")
            )
    assert record is not None
    assert re.fullmatch("[0-9a-f]{64}", record.request_hash)
    stored = record.body.decode() + repr(record.headers) + record.request_hash
    assert member["Id"] not in stored  # in the request only, not in the response
    assert record.body == response.content


async def test_metrics_are_closed_unless_opened(make_app: AppFactory, world: World) -> None:
    """Closed by default, to loopback clients too (behind a proxy on the same host every
    client is one): open to an operator token, the static metrics token, or anyone
    with ``QUESTLINE_METRICS_PUBLIC``."""
    org = world.org()
    operator = bearer(world.operator_token())
    closed = make_app()
    async with client_for(closed, "127.0.0.1") as local:
        anonymous = await local.get("/metrics")
        assert anonymous.status_code == 401
        assert anonymous.headers["content-type"] == "application/problem+json"
        assert anonymous.headers["WWW-Authenticate"].startswith("Bearer")
        assert "questline_" not in anonymous.text
        assert (await local.head("/metrics")).status_code == 401
        assert (await local.get("/metrics", headers=bearer("x" * 40))).status_code == 401
        assert (await local.get("/metrics", headers=org.admin)).status_code == 403
        assert (await local.get("/metrics", headers=org.member)).status_code == 403
        scraped = await local.get("/metrics", headers=operator)
        assert scraped.status_code == 200
        assert "questline_db_pool_size" in scraped.text
    gated = make_app(metrics_token="s" * 40)
    async with client_for(gated, "203.0.113.9") as remote:
        assert (await remote.get("/metrics")).status_code == 401
        assert (await remote.get("/metrics", headers=bearer("x" * 40))).status_code == 401
        assert (await remote.get("/metrics", headers=bearer("s" * 40))).status_code == 200
        assert (await remote.get("/metrics", headers=operator)).status_code == 200
    opened = make_app(metrics_public=True)
    async with client_for(opened, "203.0.113.9") as remote:
        assert (await remote.get("/metrics")).status_code == 200


async def test_metrics_render_at_most_once_per_cache_age(make_app: AppFactory) -> None:
    """Scrapes within ``QUESTLINE_METRICS_CACHE_SECONDS`` get the same bytes (one render
    however often ``/metrics`` is called); without ``*_created`` series."""
    cached = make_app(metrics_cache_seconds=3600, metrics_public=True)
    fresh = make_app(metrics_cache_seconds=0, metrics_public=True)
    async with client_for(cached) as a, client_for(fresh) as b:
        first = await a.get("/metrics")
        first_fresh = await b.get("/metrics")
        for _ in range(5):
            await a.get("/healthz")  # counted: the next render would differ
        assert (await a.get("/metrics")).content == first.content
        assert (await b.get("/metrics")).content != first_fresh.content
    assert "_created" not in "\n".join(
        line for line in first.text.splitlines() if not line.startswith("#")
    ).replace("questline_teams_created_total", "")


async def test_only_allowed_hosts_are_served_when_configured(make_app: AppFactory) -> None:
    app = make_app(allowed_hosts="api.example.org, localhost:8000")
    async with client_for(app) as client:
        evil = await client.get("/openapi.json", headers={"Host": "evil.example"})
        assert evil.status_code == 400
        assert evil.headers["content-type"] == "application/problem+json"
        good = await client.get("/openapi.json", headers={"Host": "api.example.org"})
        assert good.status_code == 200
        assert (await client.get("/healthz", headers={"Host": "evil.example"})).status_code == 200


def test_sqlite_files_and_data_directory_are_private(tmp_path: Path) -> None:
    data = tmp_path / "fresh"
    settings = Settings(data_dir=data, _env_file=None, rate_limit_enabled=False)  # type: ignore[call-arg]
    upgrade(settings)

    async def serve_one() -> None:
        app = create_app(settings)
        try:
            async with client_for(app) as client:
                assert (await client.get("/readyz")).status_code == 200
        finally:
            await app.state.questline.db.dispose()

    anyio.run(serve_one)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / "questline.db").stat().st_mode) == 0o600
    assert stat.S_IMODE((data / "jwt-secret").stat().st_mode) & 0o077 == 0


@pytest.mark.parametrize("secret", ["", "short", "x" * 31])
def test_signing_secrets_shorter_than_32_bytes_are_refused_at_start(
    tmp_path: Path, secret: str
) -> None:
    settings = Settings(data_dir=tmp_path, jwt_secret=secret, _env_file=None)  # type: ignore[call-arg]
    with pytest.raises(WeakSecret):
        create_app(settings)


async def test_database_errors_carry_no_sql_parameters(world: World) -> None:
    marker = f"secret-{uuid.uuid4().hex}"
    with pytest.raises(DBAPIError) as caught:
        async with world.db.session() as session:
            await session.execute(text("INSERT INTO no_such_table (x) VALUES (:v)"), {"v": marker})
    assert marker not in str(caught.value)


def test_readyz_wants_a_write(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, _env_file=None, rate_limit_enabled=False)  # type: ignore[call-arg]
    upgrade(settings)
    path = (tmp_path / "questline.db").resolve()
    read_only = settings.model_copy(
        update={"database_url": f"sqlite+aiosqlite:///file:{path}?mode=ro&uri=true"}
    )

    async def probe() -> tuple[int, httpx.Response]:
        app = create_app(read_only)
        try:
            async with client_for(app) as client:
                return (await client.get("/healthz")).status_code, await client.get("/readyz")
        finally:
            await app.state.questline.db.dispose()

    health, ready = anyio.run(probe)
    assert health == 200
    assert ready.status_code == 503
    assert ready.headers["retry-after"]


async def test_405_lists_every_method_of_the_path(world: World) -> None:
    org = world.org()
    team = await org.create_team()
    cases = {
        "/team": {"GET", "HEAD", "POST"},
        f"/team/{team['Id']}": {"GET", "HEAD", "PATCH", "DELETE"},
        f"/team/{team['Id']}/members": {"GET", "HEAD", "POST"},
    }
    for path, methods in cases.items():
        response = await world.client.put(path, json={}, headers=org.admin)
        assert response.status_code == 405, path
        assert set(response.headers["allow"].replace(" ", "").split(",")) == methods, path


async def test_every_405_lists_every_method_of_its_path(app: FastAPI, world: World) -> None:
    """Walk the route table: for every path, a method it does not take is 405 and
    ``Allow`` names exactly the methods its routes take (HEAD wherever GET is)."""
    org = world.org()
    methods: dict[str, set[str]] = {}
    for entry in route_table(app):
        if entry.method != "*":
            methods.setdefault(entry.path, set()).add(entry.method)
    assert len(methods) > 15
    probes = ("PUT", "PATCH", "DELETE", "POST")
    checked = 0
    patterns = {
        path: re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "$")
        for path in methods
    }
    for path in methods:
        concrete = re.sub(r"\{[^}]+\}", str(uuid.uuid4()), path)
        # A path without parameters is its own (``/team/bulk`` is no team id, so its
        # ``Allow`` is POST alone); a URL with ids gathers every template it matches.
        if concrete in methods:
            taken = methods[concrete]
        else:
            taken = set().union(*(methods[p] for p, rx in patterns.items() if rx.match(concrete)))
        allowed = taken | ({"HEAD"} if "GET" in taken else set())
        unused = next((m for m in probes if m not in allowed), None)
        if unused is None:
            continue
        response = await world.client.request(unused, concrete, headers=org.admin)
        assert response.status_code == 405, (unused, path, response.text[:200])
        listed = set(response.headers["allow"].replace(" ", "").split(","))
        assert listed == allowed, (path, listed, allowed)
        # SCIM's routes answer SCIM error documents (RFC 7644 §3.12).
        media = "application/scim+json" if path.startswith("/scim/") else "application/problem+json"
        assert response.headers["content-type"].startswith(media), path
        checked += 1
    assert checked > 15


async def test_a_bulk_request_whose_only_problem_is_taken_names_is_409(world: World) -> None:
    org = world.org()
    await org.create_team("Voyagers")
    body = "team,email,givenName,tags\r\nVoyagers,,,\r\nNew ones,,,\r\n"
    response = await world.client.post(
        "/team/bulk", content=body.encode(), headers={**org.admin, "content-type": "text/csv"}
    )
    assert response.status_code == 409, response.text
    assert [e["field"] for e in response.json()["errors"]] == ["line 2: team"]
    assert sorted(t["Name"] for t in await org.teams()) == ["Voyagers"]


NOT_LIMITS = frozenset(
    {
        "data_dir",
        "database_url",
        "database_echo",
        "database_transaction_pooler",
        "database_replica_transaction_pooler",
        "database_listen_url",
        "database_replica_urls",
        "database_replica_max_lag_seconds",
        "database_replica_check_seconds",
        "jwt_algorithms",
        "jwt_public_key",
        "jwt_jwks_url",
        "jwt_issuer",
        "jwt_audience",
        "jwt_org_claim",
        "jwt_role_claim",
        "rate_limit_enabled",
        "rate_limit_storage",
        "metrics_token",
        "metrics_public",
        "opentelemetry",
        "trusted_proxies",
        "allowed_hosts",
        "webhooks_allow_private_urls",
        "webhooks_dispatcher_enabled",
        "xapi_allow_private_urls",
        "xapi_dispatcher_enabled",
        "fast_lane_enabled",
        "progress_fast_path_enabled",
        "log_level",
        "log_format",
        "public_url",
        "smtp_url",
        "smtp_username",
        "smtp_password",
        "smtp_ca_file",
        "mail_from",
        "mail_dispatcher_enabled",
        "oidc_allow_http",
        "oidc_allow_private_issuers",
        "lti_allow_http",
        "lti_allow_private_urls",
        "lti_grades_dispatcher_enabled",
    }
)
"""Settings that choose *what* (a URL, a key, a switch), not *how much*; every other
setting is a limit and docs/reliability.md lists it with its default."""


def test_reliability_lists_every_limit_setting() -> None:
    page = (Path(__file__).parents[2] / "docs" / "reliability.md").read_text()
    table = page.split("## Every limit, its setting and default", 1)[1].split("\n## ", 1)[0]
    fields = set(Settings.model_fields)
    assert fields >= NOT_LIMITS, NOT_LIMITS - fields

    def listed(name: str) -> bool:
        # Whole (`QUESTLINE_RATE_LIMIT_READS`) or as a sibling's suffix (`_WRITES`).
        stem, _, last = name.upper().rpartition("_")
        whole = f"QUESTLINE_{name.upper()}" in table
        return whole or (f"QUESTLINE_{stem}_" in table and f"`_{last}`" in table)

    missing = [name for name in sorted(fields - NOT_LIMITS) if not listed(name)]
    assert missing == [], f"limits missing from docs/reliability.md: {missing}"
