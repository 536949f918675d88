"""A ``send`` that notes the status its response starts with."""

from __future__ import annotations

from starlette.types import Message, Send


class StatusWatch:
    """``send``, noting the response's status as it starts (0 until then).

    A slotted object rather than a closure over a cell or a dict: a layer that must see
    the whole response keeps its ``send`` for the response's life, and an open event
    stream lives for hours (docs/performance.md, "Stream memory")."""

    __slots__ = ("send", "status")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.status = 0

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        await self.send(message)
