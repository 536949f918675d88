"""Nothing slow on the event loop: while the same worker (one process, live) serves
each heavy request of the report, its loop does a bounded amount of work per stretch
and keeps answering ``/healthz`` in between.

What is asserted is what the loop does, not how long anything took (a loaded machine
stretches every latency, whatever the code does): the loop-slice probe
(``tests/web/loop_probe``) measures the CPU time of the loop's thread between two of
its ticks, and no stretch while the heavy request runs may exceed ``SLICE_BOUND``;
work moved to a worker thread is not counted, work left on the loop is, however busy
the machine. ``/healthz`` probes run meanwhile and must all answer. The latencies
themselves belong to the benchmarks.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade
from questline.web.identity import Role
from tests.support.live import LiveServer
from tests.web import loop_probe

pytestmark = pytest.mark.slow


class Deployment:
    def __init__(self, root: Path) -> None:
        self.secret = secrets.token_urlsafe(32)
        settings = Settings(
            data_dir=root / "data",
            jwt_secret=self.secret,
            _env_file=None,  # type: ignore[call-arg]
        )
        upgrade(settings)
        self.tokens = TokenService(settings)
        self.org = uuid.uuid4()
        self.big_discipline: dict[str, Any] = {}
        self.probe = root / "loop.txt"
        env = {
            "QUESTLINE_DATA_DIR": str(root / "data"),
            "QUESTLINE_JWT_SECRET": self.secret,
            "QUESTLINE_RATE_LIMIT_ENABLED": "false",
            "QUESTLINE_LOG_LEVEL": "WARNING",
            **loop_probe.env(self.probe),
        }
        self.server = LiveServer(env=env, log_path=root / "server.log").start()
        assert loop_probe.loaded(self.probe), "the server did not load the loop probe"

    def headers(self, role: Role) -> dict[str, str]:
        token = self.tokens.mint(role=role, org_id=self.org, subject=role.value)
        return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    made = Deployment(tmp_path_factory.mktemp("loop"))
    try:
        # An organization with a few thousand members, for the member lists.
        rows = "".join(f"Crew {i // 50},m{i}@example.org,M{i},\r\n" for i in range(3000))
        created = httpx.post(
            f"{made.server.url}/team/bulk",
            content=("team,email,givenName,tags\r\n" + rows).encode(),
            headers={**made.headers(Role.ADMIN), "content-type": "text/csv"},
            timeout=120,
        )
        assert created.status_code == 201, created.text[:500]
        # A large discipline to replace (every task renamed, ids kept).
        posted = httpx.post(
            f"{made.server.url}/discipline",
            content=_discipline_document(points=5, repeats=7),
            headers={**made.headers(Role.ADMIN), "content-type": "application/json"},
            timeout=120,
        )
        assert posted.status_code == 201, posted.text[:500]
        assert 4 * 1024 * 1024 < len(posted.content) < 5 * 1024 * 1024
        made.big_discipline = posted.json()
        for level in made.big_discipline["Levels"]:
            for quest in level["Quests"]:
                for task in quest["Tasks"]:
                    task["Title"] += " (renamed)"
                    # Their defaults, left out: the document read back stays under 5 MiB.
                    task.pop("Check", None)
                    task.pop("Hints", None)
        yield made
    finally:
        made.server.stop()


def probe_while(
    server: LiveServer, heavy: Callable[[], httpx.Response]
) -> tuple[list[int], httpx.Response]:
    """Run ``heavy`` in a thread and ``GET /healthz`` on the same server until it is
    done: the probes' statuses and the heavy response."""
    statuses: list[int] = []
    result: list[httpx.Response] = []
    done = threading.Event()

    def run() -> None:
        try:
            result.append(heavy())
        finally:
            done.set()

    worker = threading.Thread(target=run)
    with httpx.Client(base_url=server.url, timeout=30) as probe:
        worker.start()
        time.sleep(0.05)
        while not done.is_set():
            statuses.append(probe.get("/healthz").status_code)
            time.sleep(0.01)
    worker.join()
    return statuses, result[0]


def _bad_rows_csv(size: int) -> bytes:
    row = "Rockets,not-an-address-{i},Ada,\r\n"  # one team: every row is a problem
    lines = ["team,email,givenName,tags\r\n"]
    total, i = 0, 0
    while total < size:
        line = row.format(i=i)
        lines.append(line)
        total += len(line)
        i += 1
    return "".join(lines).encode()


def _discipline_document(*, points: int, repeats: int = 9, tasks: int = 10) -> bytes:
    """A discipline within every limit but the body's: 100 levels of 10 quests of
    ``tasks`` tasks (11,100 nodes by default), about 4.5 MiB. With negative points every
    task is a problem."""
    description = "Practise the move until it is second nature. " * repeats
    task = {"Description": description, "Points": points}
    return json.dumps(
        {
            "Title": "Everything",
            "Description": "A large document.",
            "Levels": [
                {
                    "Title": f"Level {level}",
                    "Quests": [
                        {
                            "Title": f"Quest {quest}",
                            "Tasks": [{"Title": f"Task {n}", **task} for n in range(tasks)],
                        }
                        for quest in range(10)
                    ],
                }
                for level in range(100)
            ],
        }
    ).encode()


def _heavy_requests(deployment: Deployment) -> dict[str, Callable[[], httpx.Response]]:
    url = deployment.server.url
    admin = deployment.headers(Role.ADMIN)
    member = deployment.headers(Role.MEMBER)
    bad_csv = _bad_rows_csv(8 * 1024 * 1024)
    bad_json = json.dumps([{"name": "", "tags": [1, 2, 3]}] * 9_000).encode()
    description = "x" * 19_000
    big_discipline = json.dumps(
        {
            "Title": "Big",
            "Description": "d",
            "Levels": [
                {"Title": f"L{i}", "Description": description, "Quests": []} for i in range(260)
            ],
        }
    ).encode()

    valid_discipline = _discipline_document(points=5)
    # Every bracket pair but the last nested 32 deep: the depth scan's 32 passes over
    # 5 MiB (each a C call) ran on the loop before.
    deep_json = b"[" + b"[" * 31 + b"]" * 31 + (b"," + b"[" * 31 + b"]" * 31) * 80_000
    deep_json += b"," + b"[" * 40 + b"]" * 40 + b"]"
    invalid_discipline = _discipline_document(points=-1)
    assert 4 * 1024 * 1024 < len(valid_discipline) < 5 * 1024 * 1024

    return {
        "5 MiB discipline from an admin": lambda: httpx.post(
            f"{url}/discipline",
            content=valid_discipline,
            headers={**admin, "content-type": "application/json"},
            timeout=120,
        ),
        "5 MiB discipline replaced by an admin": lambda: httpx.put(
            f"{url}/discipline/{deployment.big_discipline['Id']}",
            content=json.dumps(deployment.big_discipline).encode(),
            headers={**admin, "content-type": "application/json"},
            timeout=120,
        ),
        "5 MiB invalid discipline from an admin": lambda: httpx.post(
            f"{url}/discipline",
            content=invalid_discipline,
            headers={**admin, "content-type": "application/json"},
            timeout=120,
        ),
        "5 MiB of JSON nested too deep from an admin": lambda: httpx.post(
            f"{url}/discipline",
            content=deep_json,
            headers={**admin, "content-type": "application/json"},
            timeout=120,
        ),
        "bulk csv of bad rows": lambda: httpx.post(
            f"{url}/team/bulk",
            content=bad_csv,
            headers={**admin, "content-type": "text/csv"},
            timeout=120,
        ),
        "bulk json of bad items": lambda: httpx.post(
            f"{url}/team/bulk",
            content=bad_json,
            headers={**admin, "content-type": "application/json"},
            timeout=120,
        ),
        "member list without paging": lambda: httpx.get(
            f"{url}/member", headers=member, timeout=120
        ),
        "5 MiB discipline from a member": lambda: httpx.post(
            f"{url}/discipline",
            content=big_discipline,
            headers={**member, "content-type": "application/json"},
            timeout=120,
        ),
    }


EXPECTED = {
    "5 MiB discipline from an admin": 201,
    "5 MiB discipline replaced by an admin": 200,
    "5 MiB invalid discipline from an admin": 422,
    "bulk csv of bad rows": 422,
    "bulk json of bad items": 422,
    "member list without paging": 200,
    "5 MiB discipline from a member": 403,
    "5 MiB of JSON nested too deep from an admin": 400,
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_loop_does_bounded_slices_while_a_heavy_request_runs(
    deployment: Deployment, name: str
) -> None:
    """Writing a 10,000-node tree, for one: parsing, validating, flattening and
    serializing run in a thread, the database work in statements of a thousand rows;
    what is left on the loop (each statement's parameters, the event's payload) comes
    in stretches of tens of milliseconds of CPU. A loop blocked by the document
    (validating it alone is a second of CPU) is far past the bound."""
    heavy = _heavy_requests(deployment)[name]
    with loop_probe.watching(deployment.probe) as window:
        statuses, response = probe_while(deployment.server, heavy)
    assert response.status_code == EXPECTED[name], response.text[:300]
    if response.status_code not in (200, 201) or name.startswith("member"):
        assert len(response.content) < 256 * 1024, "the answer is bounded"
    if response.status_code == 422:
        problem = response.json()
        assert len(problem["errors"]) == 100
        assert problem["errorCount"] > 100
    if name == "5 MiB discipline replaced by an admin":
        titles = [
            t["Title"] for lv in response.json()["Levels"] for q in lv["Quests"] for t in q["Tasks"]
        ]
        assert len(titles) == 10_000
        assert all(title.endswith(" (renamed)") for title in titles)
    if name == "member list without paging":
        assert len(response.json()) == 100
        assert "Link" in response.headers
        assert all(m["Email"] is None for m in response.json())
    assert set(statuses) <= {200}, statuses
    assert window.longest < loop_probe.SLICE_BOUND, (
        f"the loop ran {window.longest * 1000:.0f} ms of CPU in one stretch while {name} "
        f"(stretches of 2 ms or more: {sorted(window.slices)[-10:]})"
    )
