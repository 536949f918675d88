"""A connection's request head, counted line by line before uvicorn's parser buffers it
(``HeadScan``), against ``ServerLimits``:

* a request line longer than ``max_request_line_bytes`` or a query string longer than
  ``max_query_bytes``: 414;
* a header line longer than ``max_header_line_bytes`` or a head larger than
  ``max_header_bytes``: 431.
"""

from __future__ import annotations

import asyncio

from questline.web.server_limits import ServerLimits

Refusal = tuple[int, str, str]
"""A refusal at the boundary: status, title, detail."""


class HeadScan:
    """One connection's request head, counted line by line before the parser sees it.

    Its own slotted object, so that the protocol adds one attribute to uvicorn's 27:
    past about 30 the protocol's instance dict leaves CPython's shared-key layout, and
    eight attributes of its own cost 1.3 KB more a connection — 6 % of an open stream
    (docs/performance.md, "Stream memory")."""

    __slots__ = (
        "head_size",
        "in_head",
        "limits",
        "line_number",
        "line_size",
        "refused",
        "request_line",
        "timer",
    )

    def __init__(self, limits: ServerLimits) -> None:
        self.limits = limits
        self.refused = False
        self.timer: asyncio.TimerHandle | None = None
        self.reset()

    def reset(self) -> None:
        self.in_head = True
        self.head_size = 0
        self.line_size = 0
        self.line_number = 0
        self.request_line = bytearray()

    def scan(self, data: bytes) -> Refusal | None:
        """Count ``data``'s bytes of the head; a refusal, or None (the head ended with
        it: ``in_head`` is False then)."""
        limits = self.limits
        start = 0
        while self.in_head:
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline + 1
            size = end - start
            self.line_size += size
            self.head_size += size
            if self.line_number == 0:
                if len(self.request_line) <= limits.max_request_line_bytes:
                    self.request_line += data[start:end]
                if self.line_size > limits.max_request_line_bytes:
                    return (
                        414,
                        "URI Too Long",
                        f"The request line is longer than {limits.max_request_line_bytes} bytes.",
                    )
            elif self.line_size > limits.max_header_line_bytes:
                return (
                    431,
                    "Request Header Fields Too Large",
                    f"A header line is longer than {limits.max_header_line_bytes} bytes.",
                )
            if self.head_size > limits.max_header_bytes + limits.max_request_line_bytes:
                return (
                    431,
                    "Request Header Fields Too Large",
                    f"The headers are larger than {limits.max_header_bytes} bytes together.",
                )
            if newline < 0:
                return None
            if self.line_number == 0:
                refusal = self._check_query()
                if refusal is not None:
                    return refusal
                self.request_line = bytearray()  # checked: a long-lived stream keeps none
            elif self.line_size <= 2:  # the empty line that ends the head
                self.in_head = False
                return None
            if self.line_number > 0 or self.line_size > 2:
                self.line_number += 1  # (empty lines before a request line are skipped)
            self.line_size = 0
            start = end
        return None

    def _check_query(self) -> Refusal | None:
        parts = bytes(self.request_line).split(b" ")
        target = parts[1] if len(parts) > 1 else b""
        query = target.partition(b"?")[2]
        if len(query) > self.limits.max_query_bytes:
            return (
                414,
                "URI Too Long",
                f"The query string is longer than {self.limits.max_query_bytes} bytes.",
            )
        return None
