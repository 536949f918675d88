"""A real server process (uvicorn) on a free port, for the import command and crash tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from questline.config import Settings
from tests.support.live import database_env
from tests.support.postgres import free_port

QUESTLINE = Path(sys.executable).with_name("questline")
START_TIMEOUT_S = 120.0
"""A limit for a hung server, not a speed check: on a busy 2-core machine running the
suite on every core, an interpreter's start alone can take half a minute."""


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def server_env(settings: Settings) -> dict[str, str]:
    env = {
        **os.environ,
        "QUESTLINE_DATA_DIR": str(settings.data_dir.resolve()),
        "QUESTLINE_LOG_LEVEL": "WARNING",
    }
    env.update(database_env(settings))
    if settings.jwt_secret:
        env["QUESTLINE_JWT_SECRET"] = settings.jwt_secret
    return env


def start_server(settings: Settings, log: Path, *, port: int | None = None) -> LiveServer:
    """Start uvicorn serving ``create_app`` with these settings; wait until it is ready."""
    port = port or free_port()
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        "questline.app:create_app",
        "--factory",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    with log.open("ab") as sink:
        process = subprocess.Popen(
            argv, env=server_env(settings), cwd=log.parent, stdout=sink, stderr=sink
        )
    server = LiveServer(url=f"http://127.0.0.1:{port}", process=process, log=log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited:\n{server.log_text()}")
        try:
            if httpx.get(f"{server.url}/readyz", timeout=1).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    process.kill()
    raise TimeoutError(f"the server did not get ready:\n{server.log_text()}")


@contextmanager
def live_server(settings: Settings, log: Path) -> Iterator[LiveServer]:
    server = start_server(settings, log)
    try:
        yield server
    finally:
        server.process.kill()
        server.process.wait(timeout=30)
