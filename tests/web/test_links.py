"""Links follow the address the service is reached at.

A live ``questline serve`` on a random port, without ``QUESTLINE_PUBLIC_URL``: every
``Location`` and ``Link`` it sends is a relative reference that, resolved against the
request's URL as a client does, reaches the same server (creating and reading back,
paging to the end of a list), whatever ``Host`` the client sent. Problem types have
one base everywhere: the application's answers, the server's own refusals (414, 431)
and the API document; absolute on ``QUESTLINE_PUBLIC_URL`` when that is set.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.web.identity import Role
from questline.web.server_limits import ServerLimits
from questline.web.server_protocol import plain_problem
from tests.factories import Org, World, unique
from tests.support.harness import AppHarness
from tests.support.live import LiveServer, database_env
from tests.web.conftest import AppFactory, client_for

# Links are made from the request and the settings, not the database: one backend.
pytestmark = [pytest.mark.anyio, pytest.mark.one_backend]


@pytest.fixture(scope="module")
def live(
    migrated_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """A server on a free port over the backend's database, with the tests' signing
    secret and no public URL; the module's tests share it, each in an organization of
    its own."""
    # The signing secret exists (in the data directory) before the server reads it.
    TokenService(migrated_settings).mint(role=Role.OPERATOR, org_id=None, subject="secret-made")
    env = {
        "QUESTLINE_DATA_DIR": str(migrated_settings.data_dir),
        "QUESTLINE_RATE_LIMIT_ENABLED": "false",
        "QUESTLINE_WEBHOOKS_DISPATCHER_ENABLED": "false",
        "QUESTLINE_WEBHOOKS_ALLOW_PRIVATE_URLS": "true",
        "QUESTLINE_SERVER_MAX_QUERY_BYTES": "1024",
    }
    env.update(database_env(migrated_settings))  # the URL, and row security's settings if on
    log_path = tmp_path_factory.mktemp("links") / "serve.log"
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("QUESTLINE_PUBLIC_URL", raising=False)
        server = LiveServer(env=env, log_path=log_path).start()
    try:
        yield server
    finally:
        server.stop()


def followed(response: httpx.Response, reference: str) -> httpx.URL:
    """Where a client goes: ``reference`` resolved against the request's URL."""
    return response.request.url.join(reference)


def assert_relative(reference: str) -> None:
    parts = urlsplit(reference)
    assert (parts.scheme, parts.netloc) == ("", ""), reference
    assert reference.startswith("/"), reference


async def _created_and_read_back(
    client: httpx.AsyncClient, org: Org, path: str, body: dict[str, Any]
) -> dict[str, Any]:
    """POST, then GET what ``Location`` names: the same resource."""
    created = await client.post(path, json=body, headers={**org.admin, "Host": "evil.example"})
    assert created.status_code == 201, created.text
    location = created.headers["Location"]
    assert_relative(location)
    read = await client.get(followed(created, location), headers=org.admin)
    assert read.status_code == 200, (location, read.text)
    assert read.json()["Id"] == created.json().get("Id", read.json()["Id"])
    return dict(created.json())


async def _every_page(client: httpx.AsyncClient, org: Org, first: str) -> list[dict[str, Any]]:
    """The items of ``first`` and of every page its ``Link: rel=next`` chain leads to."""
    items: list[dict[str, Any]] = []
    url: httpx.URL | str = first
    pages = 0
    while True:
        page = await client.get(url, headers=org.member)
        assert page.status_code == 200, page.text
        items.extend(page.json())
        pages += 1
        assert pages < 100, "the Link chain does not end"
        following = page.links.get("next", {}).get("url")
        if following is None:
            return items
        assert_relative(following)
        url = followed(page, following)


async def test_links_lead_back_to_a_server_on_any_port(
    live: LiveServer, app_state: AppHarness
) -> None:
    async with httpx.AsyncClient(base_url=live.url, timeout=60) as client:
        world = World(client=client, tokens=app_state.tokens, db=app_state.db)
        org = world.org()
        team = await _created_and_read_back(client, org, "/team", {"name": "Followed"})
        names = ["Followed"] + [unique("Paged") for _ in range(7)]
        for name in names[1:]:
            await org.create_team(name)

        # Every Location: a team's member, a discipline, a progress write (the fast
        # lane's answer), a webhook.
        joined = await client.post(
            f"/team/{team['Id']}/members",
            json={"email": "ada@example.org", "givenName": "Ada"},
            headers=org.admin,
        )
        assert joined.status_code == 201, joined.text
        assert_relative(joined.headers["Location"])
        member = await client.get(followed(joined, joined.headers["Location"]), headers=org.admin)
        assert member.status_code == 200, member.text
        tree = {
            "Title": "Linked",
            "Description": "D",
            "Levels": [
                {
                    "Title": "L",
                    "Description": "D",
                    "Quests": [
                        {
                            "Title": "Q",
                            "Description": "D",
                            "Tasks": [{"Title": "T", "Description": "D", "Points": 3}],
                        }
                    ],
                }
            ],
        }
        discipline = await _created_and_read_back(client, org, "/discipline", tree)
        task = discipline["Levels"][0]["Quests"][0]["Tasks"][0]["Id"]
        done = await client.post(
            f"/team/{team['Id']}/progress", json={"TaskId": task}, headers=org.admin
        )
        assert done.status_code == 201, done.text
        assert_relative(done.headers["Location"])
        progress = await client.get(followed(done, done.headers["Location"]), headers=org.admin)
        assert progress.status_code == 200, progress.text
        assert progress.json()["TaskId"] == task
        await _created_and_read_back(
            client, org, "/webhook", {"url": "http://127.0.0.1:9/hook", "events": ["team.created"]}
        )

        # Paging by Link to the end: every team once, the leaderboard's every entry once.
        teams = await _every_page(client, org, "/team?limit=3")
        assert sorted(t["Name"] for t in teams) == sorted(names)
        board = await _every_page(client, org, "/leaderboard?limit=3")
        assert sorted(e["TeamId"] for e in board) == sorted(t["Id"] for t in teams)
    # The server said it does not guess its address.
    assert "QUESTLINE_PUBLIC_URL is not set" in live.logs()


def _raw_exchange(server: LiveServer, request: bytes) -> tuple[int, dict[str, Any]]:
    """A request the server refuses before the application: its status and problem."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(request)
        chunks: list[bytes] = []
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                chunks.append(chunk)
    raw = b"".join(chunks)
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


async def test_every_problem_type_has_one_base_and_resolves_on_the_server(
    live: LiveServer, app_state: AppHarness
) -> None:
    long_query = b"GET /team?q=" + b"a" * 2000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    big_header = b"GET /team HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n"
    refusals = [_raw_exchange(live, long_query), _raw_exchange(live, big_header)]
    assert [status for status, _ in refusals] == [414, 431]
    async with httpx.AsyncClient(base_url=live.url, timeout=60) as client:
        org = World(client=client, tokens=app_state.tokens, db=app_state.db).org()
        invalid = await client.post("/team", json={"name": ""}, headers=org.admin)
        unknown = await client.get("/no/such/route")
        answers = [invalid.json(), unknown.json(), *(problem for _, problem in refusals)]
        document = (await client.get("/openapi.json")).json()
        examples = [
            response["content"]["application/problem+json"]["example"]
            for item in document["paths"].values()
            for operation in item.values()
            for status, response in operation.get("responses", {}).items()
            if status.isdigit()
            and int(status) >= 400
            and "example" in response.get("content", {}).get("application/problem+json", {})
        ]
        types = {problem["type"] for problem in [*answers, *examples]}
        assert {t.rsplit("/", 1)[0] for t in types} == {"/problems"}
        for problem_type in types:
            page = await client.get(followed(unknown, problem_type))
            assert page.status_code == 200, problem_type
            assert page.headers["content-type"].startswith("text/html")


async def test_a_public_url_makes_every_link_absolute_on_it(
    make_app: AppFactory, world: World, settings: Settings
) -> None:
    public = "https://questline.example.org"
    app = make_app(public_url=public)
    org = world.org()
    async with client_for(app) as client:
        created = await client.post(
            "/team", json={"name": "Abs"}, headers={**org.admin, "Host": "evil.example"}
        )
        assert created.headers["Location"] == f"{public}/team/{created.json()['Id']}"
        await client.post("/team", json={"name": "Abs2"}, headers=org.admin)
        page = await client.get("/team?limit=1", headers={**org.member, "Host": "evil.example"})
        assert page.links["next"]["url"].startswith(f"{public}/team?limit=1&after=")
        invalid = await client.post("/team", json={"name": ""}, headers=org.admin)
        assert invalid.json()["type"] == f"{public}/problems/validation-error"
        example = app.openapi()["paths"]["/team"]["post"]["responses"]["422"]
        assert example["content"]["application/problem+json"]["example"]["type"].startswith(
            f"{public}/problems/"
        )
    limits = ServerLimits.from_settings(
        Settings(public_url=public + "/", _env_file=None)  # type: ignore[call-arg]
    )
    refusal = plain_problem(414, "URI Too Long", "Too long.", limits.problem_type_base)
    assert f'"type": "{public}/problems/http-414"'.encode() in refusal
    unset = ServerLimits.from_settings(settings)
    assert unset.problem_type_base == "/problems/"
