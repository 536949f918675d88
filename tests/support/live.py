"""A live Questline server process (``questline serve``) for tests and benchmarks.

It runs the installed CLI in a subprocess on a free loopback port, with its settings in
the environment, and keeps what it writes to stderr (its JSON logs) in a file.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from questline.config import Settings
from tests.support.postgres import free_port


def questline_command() -> list[str]:
    script = Path(sys.executable).with_name("questline")
    if script.exists():
        return [str(script)]
    found = shutil.which("questline")
    if found:
        return [found]
    return [sys.executable, "-c", "from questline.cli.main import app; app()"]


def database_env(settings: Settings) -> dict[str, str]:
    """The database settings of ``settings`` as a server process or a command reads them
    from its environment: the URL, and under row-level security
    (``QUESTLINE_TEST_ROW_SECURITY``) the setting, the owner's URL and the
    every-organization role, without which the service refuses to start."""
    env: dict[str, str] = {}
    if settings.database_url:
        env["QUESTLINE_DATABASE_URL"] = settings.database_url
    env["QUESTLINE_DATABASE_ROW_SECURITY"] = str(settings.database_row_security).lower()
    if settings.database_row_security:
        env["QUESTLINE_DATABASE_EVERY_ORGANIZATION_ROLE"] = (
            settings.database_every_organization_role
        )
        if settings.database_owner_url:
            env["QUESTLINE_DATABASE_OWNER_URL"] = settings.database_owner_url
    return env


def inherited_env(settings: Settings) -> dict[str, str]:
    """This process's environment with the data directory and database of ``settings``
    (a command a test runs against the test's own database)."""
    env = {**os.environ, "QUESTLINE_DATA_DIR": str(settings.data_dir)}
    env.pop("QUESTLINE_DATABASE_URL", None)
    return {**env, **database_env(settings)}


LOADED_MACHINE = {
    "QUESTLINE_REQUEST_TIMEOUT_SECONDS": "600",
    "QUESTLINE_BULK_REQUEST_TIMEOUT_SECONDS": "600",
}
"""The service's request deadlines far out, as in the in-process tests (tests/conftest.py,
``TEST_SETTINGS``): a loaded machine is slow, not wrong. A test's own ``env`` wins."""


@dataclass
class LiveServer:
    env: dict[str, str]
    """``QUESTLINE_*`` settings of the process (added to the current environment)."""
    log_path: Path
    workers: int = 1
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, timeout: float = 120) -> LiveServer:
        argv = [
            *questline_command(),
            "serve",
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--workers", str(self.workers),
            "--no-migrate",
        ]  # fmt: skip
        environment = {**os.environ, **LOADED_MACHINE, **self.env}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                argv,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.wait_healthy(timeout)
        return self

    def wait_healthy(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"questline serve exited: {self.logs()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"questline serve did not answer: {self.logs()[-2000:]}")

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None
