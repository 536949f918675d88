"""Rate limits: per token (sub+org) or client address, per class of route, in memory or
shared through Redis by several app instances."""

from __future__ import annotations

import logging

import pytest

from questline.web.identity import Role
from questline.web.ratelimit import LocalCounters
from tests.factories import World, bearer
from tests.scim.conftest import issue_token
from tests.support.postgres import free_port
from tests.support.redis import RedisServer
from tests.web.conftest import AppFactory, client_for

pytestmark = pytest.mark.anyio

LIMITED = {"rate_limit_enabled": True, "rate_limit_reads": "3/minute"}


async def test_the_fourth_read_in_a_minute_is_refused_with_429_and_headers(
    make_app: AppFactory, world: World
) -> None:
    org = world.org()
    async with client_for(make_app(**LIMITED)) as client:
        remaining = []
        for _ in range(3):
            response = await client.get("/team", headers=org.member)
            assert response.status_code == 200
            assert response.headers["RateLimit-Limit"] == "3"
            assert 1 <= int(response.headers["RateLimit-Reset"]) <= 60
            remaining.append(int(response.headers["RateLimit-Remaining"]))
        refused = await client.get("/team", headers=org.member)
    assert remaining == [2, 1, 0]
    assert refused.status_code == 429
    assert refused.headers["content-type"] == "application/problem+json"
    body = refused.json()
    assert body["status"] == 429
    assert body["type"].endswith("/rate-limited")
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert refused.headers["RateLimit-Remaining"] == "0"
    assert refused.headers["X-Content-Type-Options"] == "nosniff"


async def test_the_key_is_the_token_subject_and_organization(
    make_app: AppFactory, world: World
) -> None:
    org, other = world.org(), world.org()
    same_caller_again = world.tokens.mint(role=Role.MEMBER, org_id=org.id, subject="member")
    async with client_for(make_app(**LIMITED)) as client:
        for _ in range(2):
            assert (await client.get("/team", headers=org.member)).status_code == 200
        # Another token of the same sub and org shares the bucket …
        assert (await client.get("/team", headers=bearer(same_caller_again))).status_code == 200
        assert (await client.get("/team", headers=org.member)).status_code == 429
        # … another organization's caller, from the same address, has its own.
        assert (await client.get("/team", headers=other.member)).status_code == 200
        # The admin of the first organization is another subject.
        assert (await client.get("/team", headers=org.admin)).status_code == 200


async def test_without_a_valid_token_the_key_is_the_client_address(
    make_app: AppFactory, world: World
) -> None:
    org = world.org()
    app = make_app(**LIMITED)
    async with client_for(app, "10.0.0.1") as first, client_for(app, "10.0.0.2") as second:
        for index in range(3):
            forged = bearer(f"not.a-valid.token{index}")  # every one different
            assert (await first.get("/team", headers=forged)).status_code == 401
        assert (await first.get("/team")).status_code == 429
        assert (await second.get("/team")).status_code == 401
        # A valid token from the refused address still has its own bucket.
        assert (await first.get("/team", headers=org.member)).status_code == 200


async def test_reads_writes_and_bulk_are_counted_apart(make_app: AppFactory, world: World) -> None:
    org = world.org()
    app = make_app(
        rate_limit_enabled=True,
        rate_limit_reads="2/minute",
        rate_limit_writes="1/minute",
        rate_limit_bulk="1/minute",
    )
    async with client_for(app) as client:
        created = await client.post("/team", json={"name": "One"}, headers=org.admin)
        assert created.status_code == 201
        assert created.headers["RateLimit-Limit"] == "1"
        again = await client.post("/team", json={"name": "Two"}, headers=org.admin)
        assert again.status_code == 429
        assert (await client.get("/team", headers=org.admin)).status_code == 200
        bulk = await client.post("/team/bulk", json=[], headers=org.admin)
        assert bulk.status_code != 429  # its own bucket (404 until the bulk route lands)
        assert bulk.headers["RateLimit-Limit"] == "1"
    names = [t["Name"] for t in await org.teams()]
    assert names == ["One"]  # the refused write wrote nothing


async def test_health_probes_are_never_limited(make_app: AppFactory) -> None:
    async with client_for(make_app(rate_limit_enabled=True, rate_limit_reads="1/minute")) as c:
        statuses = [(await c.get("/healthz")).status_code for _ in range(5)]
        statuses += [(await c.get("/readyz")).status_code for _ in range(5)]
    assert statuses == [200] * 10


async def test_disabled_limits_send_no_headers_and_refuse_nothing(
    make_app: AppFactory, world: World
) -> None:
    org = world.org()
    app = make_app(rate_limit_enabled=False, rate_limit_reads="1/minute")
    async with client_for(app) as client:
        responses = [await client.get("/team", headers=org.member) for _ in range(4)]
    assert [r.status_code for r in responses] == [200] * 4
    assert "RateLimit-Limit" not in responses[-1].headers


async def test_two_instances_share_one_limit_through_redis(
    make_app: AppFactory, world: World, redis_server: RedisServer
) -> None:
    redis_server.flush()
    org = world.org()
    shared = {**LIMITED, "rate_limit_storage": redis_server.url}
    first, second = make_app(**shared), make_app(**shared)
    async with client_for(first) as a, client_for(second) as b:
        statuses = [
            (await a.get("/team", headers=org.member)).status_code,
            (await b.get("/team", headers=org.member)).status_code,
            (await a.get("/team", headers=org.member)).status_code,
            (await b.get("/team", headers=org.member)).status_code,
            (await a.get("/team", headers=org.member)).status_code,
        ]
        other_org = world.org()
        other = await b.get("/team", headers=other_org.member)
    assert statuses == [200, 200, 200, 429, 429]
    assert other.status_code == 200
    assert other.headers["RateLimit-Remaining"] == "2"


async def test_raw_tokens_never_reach_redis(
    make_app: AppFactory, world: World, redis_server: RedisServer
) -> None:
    import redis

    redis_server.flush()
    org = world.org()
    async with client_for(make_app(**LIMITED, rate_limit_storage=redis_server.url)) as client:
        assert (await client.get("/team", headers=org.member)).status_code == 200
    keys = redis.Redis(host="127.0.0.1", port=redis_server.port).keys("*")
    assert keys, "the limit was not counted in Redis"
    joined = b" ".join(keys).decode()
    assert org.member_token not in joined
    assert "member" not in joined
    assert str(org.id) not in joined


async def test_an_unreachable_redis_lets_requests_pass_and_says_so(
    make_app: AppFactory, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    org = world.org()
    nowhere = f"redis://127.0.0.1:{free_port()}/0"
    caplog.set_level(logging.WARNING, logger="questline.web.ratelimit")
    async with client_for(make_app(**LIMITED, rate_limit_storage=nowhere)) as client:
        statuses = [(await client.get("/team", headers=org.member)).status_code for _ in range(5)]
    assert statuses == [200] * 5
    assert any("rate limit store failed" in r.getMessage() for r in caplog.records)


async def test_a_malformed_limit_fails_at_start(make_app: AppFactory) -> None:
    with pytest.raises(ValueError, match="lots"):
        make_app(rate_limit_enabled=True, rate_limit_reads="lots")


async def test_scim_has_its_own_limit_and_answers_429_as_a_scim_error(
    make_app: AppFactory, world: World
) -> None:
    org = world.org()
    scim = bearer((await issue_token(world.db, org.id)).token)
    app = make_app(rate_limit_enabled=True, rate_limit_scim="2/minute", rate_limit_reads="5/minute")
    async with client_for(app) as client:
        for _ in range(2):
            assert (await client.get("/scim/v2/Users", headers=scim)).status_code == 200
        refused = await client.post(
            "/scim/v2/Users", json={"userName": "a@example.org"}, headers=scim
        )
        assert (await client.get("/team", headers=org.member)).status_code == 200  # apart
    assert refused.status_code == 429
    assert refused.headers["content-type"].startswith("application/scim+json")
    assert refused.json()["status"] == "429"
    assert 1 <= int(refused.headers["Retry-After"]) <= 60


async def test_local_counters_forget_a_window_once_it_ends_and_sweep_what_ended() -> None:
    """The in-memory store: a count lives for its window; every expired counter is gone
    after the next sweep (memory stays bounded however many callers came and went)."""
    now = [1_000.0]
    counters = LocalCounters(clock=lambda: now[0])
    assert [await counters.incr("a", 60) for _ in range(3)] == [1, 2, 3]
    assert await counters.get_expiry("a") == 1_060.0
    for caller in range(500):
        await counters.incr(f"caller-{caller}", 10)
    assert len(counters.counts) == 501
    now[0] += 30  # the callers' 10 s windows ended; "a"'s has not
    assert await counters.get("caller-7") == 0
    assert await counters.incr("a", 60) == 4
    assert set(counters.counts) == {"a"}  # swept on the way
    now[0] += 31
    assert await counters.incr("a", 60) == 1  # a new window
    assert await counters.get_expiry("a") == 1_121.0
    await counters.clear("a")
    assert await counters.get("a") == 0
