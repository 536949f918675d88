"""The fast lane answers exactly as the route does.

For every route that declares an early answer (read from the application's routes, so a
new one is covered without touching this test), generated requests — every role, and
another organization's; existing, missing, foreign and malformed ids; ``If-None-Match``,
``HEAD``, odd ``Accept`` values; the writes' bodies, good and bad — are sent once to an
application with the fast lane and once to one without it, on the same database. Status,
body, headers (all but ``date`` and ``x-request-id``), the access log's route label and
the route counted on ``/metrics`` must be the same.
"""

from __future__ import annotations

import itertools
import logging
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI

from questline.web.fastlane import ANSWERED, lanes_of
from questline.web.identity import Role
from questline.web.middleware import REQUESTS
from tests.factories import Org, World, bearer
from tests.learners.factories import ANSWER, Game, learners_game
from tests.progress.factories import at, make_discipline
from tests.web.conftest import AppFactory, client_for

pytestmark = pytest.mark.anyio

IGNORED_HEADERS = {"date", "x-request-id"}
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


@dataclass(frozen=True)
class Seen:
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    logged_routes: tuple[str, ...]
    counted: tuple[tuple[str, str, str], ...]


def _samples(counter: Any) -> dict[tuple[str, ...], float]:
    return {
        tuple(sample.labels.values()): sample.value
        for metric in counter.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
    }


def _grown(before: dict[tuple[str, ...], float], after: dict[tuple[str, ...], float]) -> Any:
    return tuple(
        sorted(key for key, value in after.items() if value > before.get(key, 0))  # type: ignore[misc]
    )


class AccessLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.routes: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.routes.append(str(getattr(record, "route", "?")))


@pytest.fixture
def access_log() -> Iterator[AccessLog]:
    handler = AccessLog()
    logger = logging.getLogger("questline.access")
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


async def _send(
    client: httpx.AsyncClient, log: AccessLog, request: Request, *, rename: dict[str, str]
) -> Seen:
    before = _samples(REQUESTS)
    log.routes.clear()
    response = await client.request(
        request.method,
        request.path,
        headers=request.headers,
        content=request.body,
    )
    request_id = response.headers.get("x-request-id")
    if request_id:  # problem documents repeat it
        rename = {**rename, request_id: "<request-id>"}
    headers = tuple(
        sorted(
            (name, _normalized(value, rename))
            for name, value in response.headers.items()
            if name not in IGNORED_HEADERS
        )
    )
    return Seen(
        status=response.status_code,
        headers=headers,
        body=_normalized(response.content.decode(), rename).encode(),
        logged_routes=tuple(log.routes),
        counted=_grown(before, _samples(REQUESTS)),
    )


def _normalized(text: str, rename: dict[str, str]) -> str:
    """Names of the twin resources a write made made equal; times of a write's own
    clock removed (two writes are never at the same instant)."""
    for old, new in rename.items():
        text = text.replace(old, new)
    return TIMESTAMP.sub("<time>", text)


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes | None = None


@dataclass
class Scene:
    """An organization with teams, members, a discipline and progress, and another
    organization beside it."""

    org: Org
    other: Org
    teams: list[str]
    foreign_team: str
    discipline: str
    foreign_discipline: str
    tasks: list[str]
    operator: str


async def _scene(world: World) -> Scene:
    org, other = world.org(), world.org()
    member = await org.create_member("ada@example.org")
    teams = [(await org.create_team(members=[member["Id"]]))["Id"] for _ in range(3)]
    foreign_team = (await other.create_team())["Id"]
    tree = await make_discipline(world.db, org_id=org.id, shape=[[[10, 20], [5]], [[40]]])
    foreign = await make_discipline(world.db, org_id=other.id, shape=[[[1]]])
    tasks = [str(task) for task in tree.points]
    for position, (team, task) in enumerate(zip(teams, tasks, strict=False)):
        answer = await org.client.post(
            f"/team/{team}/progress",
            json={"TaskId": task, "CompletedAt": at(position)},
            headers=org.admin,
        )
        assert answer.status_code == 201, answer.text
    return Scene(
        org=org,
        other=other,
        teams=teams,
        foreign_team=foreign_team,
        discipline=str(tree.id),
        foreign_discipline=str(foreign.id),
        tasks=tasks,
        operator=world.operator_token(),
    )


def _roles(scene: Scene) -> dict[str, dict[str, str]]:
    return {
        "admin": scene.org.admin,
        "member": scene.org.member,
        "operator": bearer(scene.operator),
        "none": {},
        "foreign-admin": scene.other.admin,
        "foreign-member": scene.other.member,
        "garbage": {"Authorization": "Bearer not.a.token"},
    }


def _ids(scene: Scene, name: str) -> list[str]:
    """Existing, missing, foreign and malformed values of a path parameter."""
    existing = {"team_id": scene.teams[0], "discipline_id": scene.discipline}[name]
    foreign = {"team_id": scene.foreign_team, "discipline_id": scene.foreign_discipline}[name]
    return [existing, str(uuid.uuid4()), foreign, existing.upper(), "not-an-id", "%E2%80%AE1"]


QUERIES = {
    "/team": ["", "?limit=2", "?limt=2"],
    "/discipline": ["", "?limit=1"],
    "/leaderboard": ["", "?limit=2", "?offset=1&limit=1", "?limit=abc"],
    "/leaderboard/graph": ["", "?top=2", "?top=0"],
}
ACCEPTS = [None, "text/csv", "application/xml", "*/*"]


def _read_requests(scene: Scene, path: str) -> Iterator[Request]:
    """Every role with the existing ids; the organization's own roles with every kind
    of id, query string, ``Accept`` and ``HEAD`` (access is decided before the rest)."""
    params = re.findall(r"{(\w+)}", path)
    kinds = list(itertools.product(*(_ids(scene, name) for name in params))) or [()]
    for role, headers in _roles(scene).items():
        own = role in ("admin", "member")
        for position, chosen in enumerate(kinds if own else kinds[:1]):
            concrete = path
            for name, value in zip(params, chosen, strict=True):
                concrete = concrete.replace("{" + name + "}", value)
            for query in QUERIES.get(path, [""]) if own and position == 0 else [""]:
                accepts = ACCEPTS if role == "member" and position == 0 else [None]
                for accept in accepts:
                    extra = {"Accept": accept} if accept else {}
                    for method in ("GET", "HEAD") if role == "admin" else ("GET",):
                        yield Request(method, concrete + query, {**headers, **extra})


async def _compare_reads(
    fast: httpx.AsyncClient, slow: httpx.AsyncClient, log: AccessLog, requests: list[Request]
) -> int:
    compared = 0
    for request in requests:
        for _ in range(2):  # the second: a hit of what the first kept
            by_lane = await _send(fast, log, request, rename={})
            by_route = await _send(slow, log, request, rename={})
            assert by_lane == by_route, request
            compared += 1
        etag = dict(by_route.headers).get("etag")
        if by_route.status == 200 and etag is not None:
            for validator in (etag, f"W/{etag}", '"stale"', "*", f'"x", {etag}'):
                conditional = Request(
                    request.method, request.path, {**request.headers, "If-None-Match": validator}
                )
                by_lane = await _send(fast, log, conditional, rename={})
                by_route = await _send(slow, log, conditional, rename={})
                assert by_lane == by_route, conditional
                compared += 1
    return compared


def _write_bodies(scene: Scene) -> dict[str, tuple[bytes | None, dict[str, str]]]:
    task = scene.tasks[-1]
    json = {"Content-Type": "application/json"}
    return {
        "plain": (f'{{"TaskId": "{task}"}}'.encode(), json),
        "dated": (f'{{"TaskId": "{task}", "CompletedAt": "{at(5)}"}}'.encode(), json),
        "missing task": (f'{{"TaskId": "{uuid.uuid4()}"}}'.encode(), json),
        "wrong type": (b'{"TaskId": 5}', json),
        "unknown field": (f'{{"TaskId": "{task}", "Bonus": 1}}'.encode(), json),
        "not json": (b'{"TaskId": ', json),
        "deep": (b"[" * 200 + b"]" * 200, json),
        "text": (f'{{"TaskId": "{task}"}}'.encode(), {"Content-Type": "text/plain"}),
        "keyed": (f'{{"TaskId": "{task}"}}'.encode(), {**json, "Idempotency-Key": "k"}),
        "empty": (None, json),
    }


async def _compare_writes(
    fast: httpx.AsyncClient, slow: httpx.AsyncClient, log: AccessLog, scene: Scene
) -> int:
    """Each write to a team of its own (one per application), on twin teams whose names
    and times are normalized; the same order of writes on each."""
    compared = 0
    roles = _roles(scene)
    for role in ("admin", "member", "operator", "none", "foreign-admin"):
        for name, (body, content_headers) in _write_bodies(scene).items():
            if role != "admin" and name != "plain":
                continue
            kinds = (
                ("own", "missing", "foreign", "upper", "malformed") if name == "plain" else ("own",)
            )
            for team_kind in kinds if role == "admin" else ("own",):
                for query in ("", "?dryRun=1") if team_kind == "own" else ("",):
                    compared += await _compare_write_pair(
                        fast, slow, log, scene, roles[role], body, content_headers, team_kind, query
                    )
    return compared


async def _compare_write_pair(
    fast: httpx.AsyncClient,
    slow: httpx.AsyncClient,
    log: AccessLog,
    scene: Scene,
    headers: dict[str, str],
    body: bytes | None,
    content_headers: dict[str, str],
    team_kind: str,
    query: str,
) -> int:
    org = scene.org
    twins = [(await org.create_team())["Id"], (await org.create_team())["Id"]]
    seen: list[list[Seen]] = []
    for client, team in zip((fast, slow), twins, strict=True):
        path_team = {
            "own": team,
            "missing": str(uuid.uuid4()),
            "foreign": scene.foreign_team,
            "upper": team.upper(),
            "malformed": "x" * 40,
        }[team_kind]
        task = scene.tasks[-1]
        rename = {team: "<team>", team.upper(): "<TEAM>", path_team: "<path-team>"}
        posted = {**headers, **content_headers}
        if "Idempotency-Key" in posted:  # each side a key of its own: keys are per organization
            posted["Idempotency-Key"] = f"key-{team}"
        requests = [
            Request("POST", f"/team/{path_team}/progress{query}", posted, body),
            Request("POST", f"/team/{path_team}/progress{query}", posted, body),
            Request("DELETE", f"/team/{path_team}/progress/{task}{query}", headers),
            Request("DELETE", f"/team/{path_team}/progress/{task}{query}", headers),
            Request("DELETE", f"/team/{path_team}/progress/{task.upper()}", headers),
        ]
        seen.append([await _send(client, log, r, rename=rename) for r in requests])
    for request, by_lane, by_route in zip(requests, *seen, strict=True):
        assert by_lane == by_route, (team_kind, request)
    return len(seen[0])


async def _compare_answers(
    fast: httpx.AsyncClient, slow: httpx.AsyncClient, log: AccessLog, world: World
) -> int:
    """A learner's answers and their refusals, each application on a game of its own
    (twin disciplines, teams and members), in the same order: wrong, wrong again, right
    with no attempts left, already completed, another team's member, another
    organization's, a task of another kind, a locked level, bad bodies, odd ids."""
    foreign = world.org()
    foreign_member = await foreign.create_member("eve@example.org")
    foreign_token = bearer(
        world.tokens.mint(role=Role.MEMBER, org_id=foreign.id, subject="e", email="eve@example.org")
    )
    assert foreign_member["Id"]
    seen: list[list[Seen]] = []
    for client in (fast, slow):
        game = await learners_game(world, sequential=True, max_attempts=2)
        rename = {
            **{game.task(title): f"<{title}>" for title in ("Answer task", "Later answer")},
            game.team_id: "<team>",
            game.team_id.upper(): "<TEAM>",
            game.alice_id: "<alice>",
            game.bob_id: "<bob>",
            game.discipline["Id"]: "<discipline>",
        }
        url = f"/team/{game.team_id}/attempts"
        json = {"Content-Type": "application/json"}

        def answer(title: str, value: str, game: Game = game) -> bytes:
            return orjson.dumps({"TaskId": game.task(title), "Answer": value})

        requests = [
            Request("POST", url, {**game.alice, **json}, answer("Answer task", "nope")),
            Request("POST", url, {**game.outsider, **json}, answer("Answer task", "nope")),
            Request("POST", url, {**foreign_token, **json}, answer("Answer task", "nope")),
            Request("POST", url, {**game.alice, **json}, answer("Self task", "nope")),
            Request("POST", url, {**game.alice, **json}, answer("Later answer", "later")),
            Request("POST", url, {**game.alice, **json}, b'{"TaskId": 5, "Answer": "x"}'),
            Request("POST", url, {**game.alice, **json}, b'{"TaskId": '),
            Request("POST", url, {**game.bob, **json}, answer("Answer task", ANSWER.lower())),
            Request("POST", url, {**game.alice, **json}, answer("Answer task", ANSWER)),
            Request("POST", f"/team/{game.team_id.upper()}/attempts", game.alice, None),
            Request("POST", "/team/not-a-team/attempts", {**game.alice, **json}, b"{}"),
            Request("POST", url, {"Authorization": "Bearer x", **json}, b"{}"),
        ]
        answers = [await _send(client, log, r, rename=rename) for r in requests]
        completed = await game.complete(game.org.admin, "Answer task")
        assert completed.status_code == 201, completed.text
        done = Request("POST", url, {**game.bob, **json}, answer("Answer task", ANSWER))
        answers.append(await _send(client, log, done, rename=rename))
        requests.append(done)
        seen.append(answers)
    statuses = [answer.status for answer in seen[0]]
    assert statuses == [200, 403, 404, 422, 409, 422, 400, 200, 409, 422, 404, 401, 409]
    for request, by_lane, by_route in zip(requests, *seen, strict=True):
        assert by_lane == by_route, request
    return len(seen[0])


async def test_the_fast_lane_answers_as_every_route_does(
    app: FastAPI, make_app: AppFactory, world: World, access_log: AccessLog
) -> None:
    slow_app = make_app(fast_lane_enabled=False)
    lanes = lanes_of(app.routes)
    declared = {(method, lane.route.path) for method, found in lanes.items() for lane in found}
    writes = {
        ("POST", "/team/{team_id}/progress"),
        ("DELETE", "/team/{team_id}/progress/{task_id}"),
        ("POST", "/team/{team_id}/attempts"),
    }
    reads = {path for method, path in declared if method == "GET"}
    assert declared == {("GET", path) for path in reads} | writes, declared
    assert reads, "no route declares an early answer"

    scene = await _scene(world)
    answered_before = _samples(ANSWERED)
    compared = 0
    async with client_for(app) as fast, client_for(slow_app) as slow:
        for path in sorted(reads):
            compared += await _compare_reads(
                fast, slow, access_log, list(_read_requests(scene, path))
            )
        compared += await _compare_writes(fast, slow, access_log, scene)
        compared += await _compare_answers(fast, slow, access_log, world)
    answered = _grown(answered_before, _samples(ANSWERED))
    # Not vacuous: the fast lane answered something of every route that declares it.
    assert {(method, route) for method, route in answered} == declared, answered
    assert compared > 300


def test_a_route_declared_earlier_wins_its_paths() -> None:
    """As in routing: a path that an earlier route matches is never answered early by a
    later one, whatever the shapes (a literal segment, a mount, a longer path)."""
    from fastapi import APIRouter
    from starlette.staticfiles import StaticFiles

    from questline.web.routing import TransactionalRoute, answers_early

    class Never:
        async def __call__(self, *_: Any) -> None:
            return None

    router = APIRouter(route_class=TransactionalRoute)

    @router.get("/x/special")
    async def special() -> None: ...

    @router.get("/x/{item}")
    @answers_early(Never())
    async def item(item: str) -> None: ...

    @router.get("/y/{item}/z")
    @answers_early(Never())
    async def deeper(item: str) -> None: ...

    app = FastAPI()
    app.include_router(router)
    app.mount("/y/files", StaticFiles(directory=".", check_dir=False))
    lanes = {lane.route.path: lane for lane in lanes_of(app.routes)["GET"]}
    assert [getattr(r, "path", None) for r in lanes["/x/{item}"].earlier] == ["/x/special"]
    assert lanes["/y/{item}/z"].earlier == ()  # the mount comes after it
    app2 = FastAPI()
    app2.mount("/y/files", StaticFiles(directory=".", check_dir=False))
    app2.include_router(router)
    lanes2 = {lane.route.path: lane for lane in lanes_of(app2.routes)["GET"]}
    assert [getattr(r, "path", None) for r in lanes2["/y/{item}/z"].earlier] == ["/y/files"]
    assert [getattr(r, "path", None) for r in lanes2["/x/{item}"].earlier] == ["/x/special"]
