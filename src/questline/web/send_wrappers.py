"""``send`` wrappers that layers keep for a response's whole life.

Slotted objects rather than closures over cells or dicts: a layer that must see the
response keeps its ``send`` until the response ends, and an open event stream lives for
hours (docs/performance.md, "Stream memory")."""

from __future__ import annotations

from starlette.types import Message, Send


class StatusWatch:
    """``send``, noting the response's status as it starts (0 until then)."""

    __slots__ = ("send", "status")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.status = 0

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        await self.send(message)


class WithRawHeaders:
    """``send``, appending raw ``headers`` to the response as it starts (names the
    response sets nowhere else: one pass, no scan for the names already there)."""

    __slots__ = ("headers", "send")

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]]) -> None:
        self.send = send
        self.headers = headers

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", ()), *self.headers]
        await self.send(message)
