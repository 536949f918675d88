"""Authorization first: token, organization and role are checked before the body is
read, parsed or looked up for idempotency, and before query parameters are echoed."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.factories import World

pytestmark = pytest.mark.anyio

CHUNK = 1024 * 1024


class CountingBody:
    """A streamed request body that records how much of it the server pulled."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.pulled += 1
            yield chunk


def _big_discipline_chunks() -> list[bytes]:
    """A 5 MiB (less a little) discipline document in 1 MiB pieces."""
    head = b'{"Title": "Big", "Description": "'
    tail = b'"}'
    filler = b"x" * (5 * CHUNK - len(head) - len(tail) - 1024)
    document = head + filler + tail
    return [document[i : i + CHUNK] for i in range(0, len(document), CHUNK)]


async def test_a_member_posting_a_large_document_gets_403_before_it_is_read(
    world: World,
) -> None:
    org = world.org()
    body = CountingBody(_big_discipline_chunks())
    response = await world.client.post(
        "/discipline",
        content=body,
        headers={**org.member, "content-type": "application/json"},
    )
    assert response.status_code == 403, response.text
    assert body.pulled <= 1, f"{body.pulled} MiB read before the role check"
    assert "errors" not in response.json()


async def test_a_member_gets_403_for_invalid_and_too_deep_bodies(world: World) -> None:
    org = world.org()
    json_headers = {**org.member, "content-type": "application/json"}
    for path, content in (
        ("/team", b"{not json"),
        ("/team", b"[" * 100 + b"]" * 100),
        ("/team/bulk", b'[{"name": 1}]'),
    ):  # POST /team/{id}/progress takes members' Self completions: its body is read
        response = await world.client.post(path, content=content, headers=json_headers)
        assert response.status_code == 403, (path, response.text)


async def test_the_idempotency_key_is_looked_at_only_after_the_role_check(
    world: World,
) -> None:
    org = world.org()
    bad_key = {"Idempotency-Key": "k" * 300}  # refused (422) when looked at
    member = await world.client.post(
        "/team", json={"name": "Rockets"}, headers={**org.member, **bad_key}
    )
    assert member.status_code == 403, member.text
    admin = await world.client.post(
        "/team", json={"name": "Rockets"}, headers={**org.admin, **bad_key}
    )
    assert admin.status_code == 422


async def test_unknown_query_parameters_are_not_echoed_before_authentication(
    client: httpx.AsyncClient, world: World
) -> None:
    name = "q" * 3000
    anonymous = await client.get(f"/team?{name}=1")
    assert anonymous.status_code == 401
    assert name not in anonymous.text
    org = world.org()
    authenticated = await client.get(f"/team?{name}=1", headers=org.member)
    assert authenticated.status_code == 422
