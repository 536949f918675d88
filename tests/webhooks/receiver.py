"""Webhook receivers on loopback: a real HTTP server in a thread that keeps every
request it gets and answers with the status codes it is told to (when the test lets it:
``Receiver.hold``), and one that accepts
connections, reads the request and never answers."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    url: str
    requests: list[Received] = field(default_factory=list)
    answers: list[int] = field(default_factory=list)
    """Status codes for the next requests, in order; 204 once they run out."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    on_request: Callable[[Received], None] | None = None
    """Called in the server's thread as each request arrives, before it is answered."""
    answer_headers: dict[str, str] = field(default_factory=dict)
    """Headers of every answer (e.g. a ``location`` with a 3xx status)."""
    held: threading.Event | None = None
    """While set to an event: each request is kept (and counted) at once but answered
    only when the test sets the event (``hold``/``release``)."""

    def hold(self) -> threading.Event:
        """Answer nothing until ``release``: the requests arriving meanwhile wait."""
        self.held = threading.Event()
        return self.held

    def release(self) -> None:
        held, self.held = self.held, None
        if held is not None:
            held.set()

    def next_status(self) -> int:
        with self.lock:
            return self.answers.pop(0) if self.answers else 204

    def wait_for(self, count: int, timeout: float = 30) -> list[Received]:
        """At least ``count`` requests (a deadline to fail on, not a timed assertion)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.requests) >= count:
                    return list(self.requests)
            time.sleep(0.02)
        raise AssertionError(f"expected {count} requests, got {len(self.requests)}")


@contextmanager
def receiver(host: str = "127.0.0.1") -> Iterator[Receiver]:
    holder: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length)
            target = holder["receiver"]
            received = Received(
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
            if target.on_request is not None:
                target.on_request(received)
            held = target.held
            with target.lock:
                target.requests.append(received)
            if held is not None:
                held.wait(timeout=60)
            self.send_response(target.next_status())
            for name, value in target.answer_headers.items():
                self.send_header(name, value)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((host, 0), Handler)
    holder["receiver"] = Receiver(url=f"http://{host}:{server.server_address[1]}/hook")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield holder["receiver"]
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Hanging:
    """A receiver that accepts every connection, reads the request head and never
    answers: it counts the requests open (per path and in all), the most ever open at
    once, and those the sender gave up on (closed)."""

    url: str
    open: Counter[str] = field(default_factory=Counter)
    most: Counter[str] = field(default_factory=Counter)
    most_in_all: int = 0
    started: int = 0
    closed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def open_in_all(self) -> int:
        with self.lock:
            return sum(self.open.values())

    def wait_for_open(self, count: int, timeout: float = 60) -> None:
        """At least ``count`` requests open at once (a deadline to fail on)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.open_in_all() >= count:
                return
            time.sleep(0.02)
        raise AssertionError(f"expected {count} open requests, {dict(self.open)} are")


@contextmanager
def hanging_receiver(host: str = "127.0.0.1") -> Iterator[Hanging]:
    listener = socket.create_server((host, 0), backlog=128)
    target = Hanging(url=f"http://{host}:{listener.getsockname()[1]}")
    connections: list[socket.socket] = []
    stopping = threading.Event()

    def hold(connection: socket.socket) -> None:
        head = b""
        path = "?"
        counted = False
        try:
            while not stopping.is_set():
                chunk = connection.recv(65536)
                if not chunk:
                    break  # the sender closed the connection: it gave up
                if not counted:
                    head += chunk
                    if b"\r\n" in head:
                        path = head.split(b"\r\n", 1)[0].split(b" ")[1].decode()
                        counted = True
                        with target.lock:
                            target.started += 1
                            target.open[path] += 1
                            target.most[path] = max(target.most[path], target.open[path])
                            target.most_in_all = max(target.most_in_all, sum(target.open.values()))
        except OSError:
            pass
        finally:
            if counted:
                with target.lock:
                    target.open[path] -= 1
                    target.closed += 1
            connection.close()

    def accept() -> None:
        while not stopping.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            connections.append(connection)
            threading.Thread(target=hold, args=(connection,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield target
    finally:
        stopping.set()
        listener.close()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
