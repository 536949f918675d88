"""The scale-out topology of docs/deploy.md, live: three ``questline serve`` processes
on a primary behind pgbouncer (transaction pooling), a streaming hot-standby replica,
and one Redis for the rate limits.

* Writes through one process are read through the others: the writer (one cookie jar
  across the processes, as a browser behind a balancer) always reads its own writes;
  other readers catch up within the lag bound; the replica serves reads.
* The rate limits are counted once across the processes (Redis).
* Killing a server process mid-traffic loses no acknowledged write and duplicates none
  (clients retry on another process with the same ``Idempotency-Key``); the others go on.
* Killing the replica mid-traffic fails no read and loses nothing; when it comes back
  it serves reads again.
* The primary stops, the replica is promoted and pgbouncer repointed (the procedure of
  docs/deploy.md): the same processes serve every acknowledged write and take new ones.
"""

from __future__ import annotations

import os
import re
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from questline.web.readafter import HEADER
from tests.factories import bearer
from tests.scale.conftest import needs_postgres
from tests.support.live import LiveServer
from tests.support.pgbouncer import Target
from tests.support.postgres import row_security_requested
from tests.support.topology import DATABASE, Cluster, Topology

pytestmark = [pytest.mark.slow, needs_postgres]

READ_LIMIT = 150
ENV = {"QUESTLINE_RATE_LIMIT_READS": f"{READ_LIMIT}/hour"}


@pytest.fixture(scope="module")
def topology() -> Iterator[Topology]:
    cluster = Cluster(server_pool_size=6, row_security=row_security_requested()).start()
    made = Topology(cluster)
    try:
        made.start(3, **ENV)
        yield made
    finally:
        made.close()
        cluster.close()


def wait_for(check: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


def discipline_document(tasks: int) -> dict[str, Any]:
    quest = {
        "Title": "Quest",
        "Description": "Tasks.",
        "Tasks": [
            {"Title": f"Task {i}", "Description": "Do it.", "Points": i + 1} for i in range(tasks)
        ],
    }
    level = {"Title": "Level", "Description": "One level.", "Quests": [quest]}
    return {"Title": "Scale", "Description": "Scale-out.", "Color": "Green", "Levels": [level]}


def replica_reads(server: LiveServer, scraper: dict[str, str]) -> float:
    """``scraper``: an operator's bearer header (``/metrics`` is closed to anyone else)."""
    metrics = httpx.get(f"{server.url}/metrics", headers=scraper, timeout=10)
    assert metrics.status_code == 200, metrics.text
    found = re.search(
        r'^questline_database_reads_total\{target="replica"\} (\S+)$', metrics.text, re.M
    )
    return float(found.group(1)) if found else 0.0


def team_names(url: str, headers: dict[str, str]) -> list[str]:
    response = httpx.get(f"{url}/team", headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return [t["Name"] for t in response.json()]


def test_writes_through_one_process_are_read_through_the_others(topology: Topology) -> None:
    cluster, servers = topology.cluster, topology.servers
    org = uuid.uuid4()
    admin = bearer(cluster.admin_token(org))
    member = bearer(cluster.member_token(org))
    with httpx.Client(timeout=30) as writer:
        made = writer.post(
            f"{servers[0].url}/discipline", json=discipline_document(6), headers=admin
        )
        assert made.status_code == 201, made.text
        tasks = [(t["Id"], t["Points"]) for t in made.json()["Levels"][0]["Quests"][0]["Tasks"]]
        team = writer.post(f"{servers[1].url}/team", json={"name": "Climbers"}, headers=admin)
        assert team.status_code == 201, team.text
        team_id = team.json()["Id"]
        score = 0
        for index, (task_id, points) in enumerate(tasks):
            via, then, last = (servers[(index + k) % 3] for k in range(3))
            done = writer.post(
                f"{via.url}/team/{team_id}/progress", json={"TaskId": task_id}, headers=admin
            )
            assert done.status_code == 201, done.text
            assert HEADER in done.headers
            score += points
            board = writer.get(f"{then.url}/leaderboard", headers=admin)
            assert board.status_code == 200, board.text
            assert [(t["TeamId"], t["Score"]) for t in board.json()] == [(team_id, score)]
            read = writer.get(f"{last.url}/team/{team_id}", headers=admin)
            assert read.json()["Score"] == score

    # Another reader, without the writer's cookie: every process catches up.
    def everyone_sees_it() -> bool:
        for server in servers:
            response = httpx.get(f"{server.url}/team/{team_id}", headers=member, timeout=30)
            assert response.status_code == 200, response.text
            if response.json()["Score"] != score:
                return False
        return True

    wait_for(everyone_sees_it)

    # The replica serves reads (once each process knows it has replayed the writes).
    scraper = bearer(cluster.operator_token())
    before = sum(replica_reads(s, scraper) for s in servers)

    def replica_served() -> bool:
        for server in servers:
            assert team_names(server.url, member) == ["Climbers"]
        return sum(replica_reads(s, scraper) for s in servers) > before

    wait_for(replica_served)


def test_rate_limits_are_counted_once_across_the_processes(topology: Topology) -> None:
    org = uuid.uuid4()
    member = bearer(topology.cluster.member_token(org, subject="counted"))
    statuses: list[int] = []
    per_process = READ_LIMIT * 2 // 5  # each alone stays under the limit
    for server in topology.servers:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            statuses += [
                client.get("/team", headers=member).status_code for _ in range(per_process)
            ]
    assert set(statuses) == {200, 429}
    assert statuses.count(200) <= READ_LIMIT


def test_killing_a_server_process_loses_nothing_and_the_others_go_on(
    topology: Topology,
) -> None:
    cluster, servers = topology.cluster, topology.servers
    org = uuid.uuid4()
    admin = bearer(cluster.admin_token(org))
    victim = servers[1]
    count = 45

    def create(index: int) -> str:
        """A client that retries on the next process, with the same key, until one answers."""
        headers = {**admin, "Idempotency-Key": f"team-{index}"}
        for attempt in range(9):
            server = servers[(index + attempt) % 3]
            try:
                response = httpx.post(
                    f"{server.url}/team", json={"name": f"K{index:02}"}, headers=headers, timeout=30
                )
            except httpx.TransportError:
                continue
            if response.status_code == 503:
                continue
            assert response.status_code == 201, response.text
            return str(response.json()["Id"])
        raise AssertionError(f"no process created team {index}")

    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = [pool.submit(create, i) for i in range(count)]
        futures[count // 3].result()
        assert victim.process is not None
        os.killpg(victim.process.pid, signal.SIGKILL)
        ids = [f.result() for f in futures]
    assert not victim.alive

    assert len(set(ids)) == count
    for server in (servers[0], servers[2]):
        listed = httpx.get(f"{server.url}/team?limit=1000", headers=admin, timeout=30).json()
        assert sorted(t["Id"] for t in listed) == sorted(ids)
        assert [t["Name"] for t in listed] == [f"K{i:02}" for i in range(count)]
    for server in (servers[0], servers[2]):
        after = httpx.post(
            f"{server.url}/team", json={"name": f"After {server.port}"}, headers=admin, timeout=30
        )
        assert after.status_code == 201, after.text

    victim.stop()
    servers[1] = topology.add_server(**ENV)
    topology.servers.pop()  # add_server appended it; it replaces the victim in place


def test_killing_the_replica_fails_no_read_and_it_serves_again_when_back(
    topology: Topology,
) -> None:
    cluster, servers = topology.cluster, topology.servers
    assert cluster.standby is not None
    org = uuid.uuid4()
    admin = bearer(cluster.admin_token(org))
    member = bearer(cluster.member_token(org))
    names: list[str] = []
    for index in range(6):
        created = httpx.post(
            f"{servers[index % 3].url}/team", json={"name": f"R{index}"}, headers=admin, timeout=30
        )
        assert created.status_code == 201, created.text
        names.append(f"R{index}")
    wait_for(lambda: all(team_names(s.url, member) == names for s in servers))

    cluster.standby.stop("immediate")
    for round_ in range(10):
        for server in servers:
            assert team_names(server.url, member) == names
        created = httpx.post(
            f"{servers[round_ % 3].url}/team",
            json={"name": f"S{round_}"},
            headers=admin,
            timeout=30,
        )
        assert created.status_code == 201, created.text
        names.append(f"S{round_}")

    cluster.standby.start_server()
    cluster.standby.wait_streaming()
    scraper = bearer(cluster.operator_token())
    before = sum(replica_reads(s, scraper) for s in servers)

    def replica_back() -> bool:
        for server in servers:
            assert team_names(server.url, member) == names
        return sum(replica_reads(s, scraper) for s in servers) > before

    wait_for(replica_back)


def test_the_promoted_replica_takes_over_after_the_primary_stops(topology: Topology) -> None:
    """Last in the module: it stops the primary the tests above share (a cluster of its
    own cost as much again to start)."""
    cluster, servers = topology.cluster, topology.servers
    servers.pop().stop()  # two processes are enough to fail over (each one restarts)
    assert cluster.primary is not None
    assert cluster.standby is not None
    assert cluster.bouncer is not None
    org = uuid.uuid4()
    admin = bearer(cluster.admin_token(org))
    names = []
    for index in range(10):
        created = httpx.post(
            f"{servers[index % len(servers)].url}/team",
            json={"name": f"P{index}"},
            headers=admin,
            timeout=30,
        )
        assert created.status_code == 201, created.text
        names.append(f"P{index}")

    # The procedure of docs/deploy.md: stop (or lose) the primary, promote the replica,
    # point pgbouncer's database at it and reload pgbouncer.
    cluster.primary.stop("fast")
    refused = httpx.post(f"{servers[0].url}/team", json={"name": "Lost"}, headers=admin, timeout=30)
    assert refused.status_code == 503, refused.text
    cluster.standby.promote()
    cluster.bouncer.repoint(DATABASE, Target(cluster.standby.port, DATABASE))

    def writes_again() -> bool:
        response = httpx.post(
            f"{servers[1].url}/team", json={"name": "Promoted"}, headers=admin, timeout=30
        )
        assert response.status_code in (201, 503), response.text
        return response.status_code == 201

    wait_for(writes_again)
    names.append("Promoted")
    for server in servers:
        assert server.alive
        assert team_names(server.url, admin) == sorted(names)
        made = httpx.post(f"{server.url}/team", json={"name": f"N{server.port}"}, headers=admin)
        assert made.status_code == 201, made.text
        names.append(f"N{server.port}")
    for server in servers:
        assert team_names(server.url, admin) == sorted(names)

    # Last step of the procedure: a rolling restart onto the new primary's direct URL
    # for LISTEN (the old one is gone; meanwhile versions are read through the pool).
    for index, server in enumerate(servers):
        server.stop()
        env = {**server.env, "QUESTLINE_DATABASE_LISTEN_URL": cluster.url_on(cluster.standby)}
        servers[index] = LiveServer(env=env, log_path=server.log_path).start()
        assert team_names(servers[index].url, admin) == sorted(names)
