"""The application's shutdown runs every step, whatever one of them does."""

from __future__ import annotations

import asyncio

import pytest

from questline.web.hardening import run_shutdown

pytestmark = pytest.mark.anyio


async def test_a_step_that_never_ends_does_not_stop_the_shutdown() -> None:
    ran: list[str] = []

    async def hangs() -> None:
        ran.append("hangs")
        await asyncio.Event().wait()  # nothing ever sets it

    async def fails() -> None:
        ran.append("fails")
        raise RuntimeError("boom")

    async def closes() -> None:
        ran.append("closes")

    late = await run_shutdown(
        [("stuck dispatcher", hangs), ("broken step", fails), ("database pool", closes)],
        grace=0.01,
    )

    assert late == ["stuck dispatcher"]
    assert ran == ["hangs", "fails", "closes"]


async def test_steps_that_finish_are_not_reported() -> None:
    async def quick() -> None:
        await asyncio.sleep(0)

    assert await run_shutdown([("a", quick), ("b", quick)], grace=60) == []
