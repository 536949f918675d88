"""bench.harness.floor: the plain ASGI callable answers the captured bytes and headers."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import httpx
import pytest
from bench.harness.floor import ANSWER_ENV, app

pytestmark = pytest.mark.anyio


async def test_the_floor_answers_the_captured_bytes(tmp_path: Path) -> None:
    body = b'[{"Rank": 1, "Name": "Rockets"}]'
    answer = tmp_path / "answer.json"
    headers = [["content-type", "application/json"], ["etag", '"abc.1.member"']]
    answer.write_text(json.dumps({"body": base64.b64encode(body).decode(), "headers": headers}))
    os.environ[ANSWER_ENV] = str(answer)
    try:
        floor = app()
    finally:
        del os.environ[ANSWER_ENV]
    transport = httpx.ASGITransport(app=floor)
    async with httpx.AsyncClient(transport=transport, base_url="http://floor") as client:
        got = await client.get("/leaderboard?limit=50")
    assert got.status_code == 200
    assert got.content == body
    assert got.headers["etag"] == '"abc.1.member"'
    assert got.headers["content-length"] == str(len(body))
