"""Reading Server-Sent Events from an httpx streaming response."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support.hang import HANG_GUARD


@dataclass
class Message:
    event: str | None = None
    id: str | None = None
    data: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)

    def json(self) -> Any:
        return json.loads("\n".join(self.data))


class SseReader:
    def __init__(self, response: httpx.Response) -> None:
        self._lines: AsyncIterator[str] = response.aiter_lines()

    async def message(self, deadline: float = HANG_GUARD) -> Message:
        """The next message (an event or a comment), or fail after ``deadline`` seconds."""
        async with asyncio.timeout(deadline):
            return await self._read()

    async def event(self, deadline: float = HANG_GUARD) -> Message:
        """The next event, skipping comments and bare ``retry`` lines."""

        async def skip() -> Message:
            while True:
                found = await self._read()
                if found.event is not None:
                    return found

        async with asyncio.timeout(deadline):
            return await skip()

    async def _read(self) -> Message:
        found = Message()
        seen = False
        async for line in self._lines:
            if line == "":
                if seen:
                    return found
                continue
            seen = True
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "":
                found.comments.append(value)
            elif name == "event":
                found.event = value
            elif name == "id":
                found.id = value
            elif name == "data":
                found.data.append(value)
        raise EOFError("the stream ended")
