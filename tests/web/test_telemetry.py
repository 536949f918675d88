"""FastAPI's own OpenTelemetry layer: consulted only when the operator asks for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.telemetry import _asgi as fastapi_telemetry

from questline.app import create_app
from questline.config import Settings

pytestmark = pytest.mark.anyio


async def _provider_lookups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **settings: Any
) -> int:
    looked_up = 0
    real = fastapi_telemetry.trace.get_tracer_provider

    def counting() -> Any:
        nonlocal looked_up
        looked_up += 1
        return real()

    monkeypatch.setattr(fastapi_telemetry.trace, "get_tracer_provider", counting)
    app = create_app(Settings(_env_file=None, data_dir=tmp_path, **settings))  # type: ignore[call-arg]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        assert (await client.get("/healthz")).status_code == 200
    await app.state.questline.db.dispose()
    return looked_up


async def test_a_request_asks_opentelemetry_nothing_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert await _provider_lookups(tmp_path, monkeypatch) == 0


async def test_the_setting_turns_fastapis_telemetry_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert await _provider_lookups(tmp_path, monkeypatch, opentelemetry=True) >= 1
