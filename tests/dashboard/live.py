"""A live Questline server for the browser tests: the real CLI, a real port.

The migrations run in-process (what ``questline db upgrade`` runs, without the cost of
another interpreter), then ``questline serve --no-migrate`` runs in a subprocess, with a
temporary data directory (SQLite) or a harness-started PostgreSQL database (under
``QUESTLINE_TEST_ROW_SECURITY`` one made for row-level security: ``live_database``). The server
boots while the browser launches: ``LiveServer.ready()`` waits for it. Tokens are
minted in-process with the secret the server keeps in that data directory.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from questline.auth import sessions
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage import tenancy
from questline.storage.db import Database
from questline.storage.migrate import upgrade
from questline.web.identity import Role
from tests.conftest import ROW_SECURITY
from tests.support.live import database_env
from tests.support.postgres import (
    PostgresServer,
    create_row_security_database,
    free_port,
    unique_database_name,
)

START_TIMEOUT_S = 120.0
"""A limit for a hung server, not a speed check (busy machine, a test worker per core)."""


def questline_command() -> list[str]:
    """The ``questline`` console script of this interpreter's environment."""
    script = Path(sys.executable).parent / "questline"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from questline.cli.main import app; app()"]


def server_env(data_dir: Path, database_url: str | None, public_url: str) -> dict[str, str]:
    """The environment of a CLI subprocess: this one, minus any QUESTLINE_* of the caller."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUESTLINE_")}
    env.update(
        QUESTLINE_DATA_DIR=str(data_dir),
        QUESTLINE_PUBLIC_URL=public_url,
        QUESTLINE_LOG_FORMAT="text",
        QUESTLINE_LOG_LEVEL="WARNING",
    )
    if database_url:
        env["QUESTLINE_DATABASE_URL"] = database_url
    return env


def run_cli(args: list[str], env: dict[str, str], cwd: Path) -> str:
    """Run one ``questline`` command to completion; its standard output."""
    done = subprocess.run(
        [*questline_command(), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"questline {' '.join(args)} failed:\n{done.stderr}"
    return done.stdout


@dataclass
class LiveServer:
    origin: str
    data_dir: Path
    env: dict[str, str]
    settings: Settings
    """The server's data directory and database settings."""
    tokens: TokenService
    process: subprocess.Popen[bytes]
    log: Path
    _ready: bool = False

    def ready(self) -> LiveServer:
        """Wait (once) until the server answers ``/readyz``."""
        if not self._ready:
            _wait_until_ready(self.origin, self.process, self.log)
            self._ready = True
        return self

    def token(self, org_id: uuid.UUID, role: Role = Role.ADMIN, subject: str = "e2e") -> str:
        return self.tokens.mint(role=role, org_id=org_id, subject=subject)

    def signin_link(
        self,
        org_id: uuid.UUID,
        role: Role = Role.ADMIN,
        subject: str = "e2e",
        email: str | None = None,
    ) -> str:
        """A one-time sign-in link, minted as ``questline signin-link`` does (in-process)."""
        settings = self.settings.model_copy(update={"public_url": self.origin})

        async def mint() -> str:
            db = Database(settings)
            try:
                with tenancy.acting_for(org_id):  # row-level security
                    async with db.session(write=True) as session:
                        code = await sessions.mint_signin_code(
                            session,
                            settings=settings,
                            org_id=org_id,
                            role=role,
                            subject=subject,
                            email=email,
                        )
            finally:
                await db.dispose()
            return sessions.signin_link(settings, code)

        # In a thread of its own: Playwright's sync API runs an event loop in this one.
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, mint()).result()

    def client(self, token: str) -> httpx.Client:
        return httpx.Client(
            base_url=self.origin, headers={"Authorization": f"Bearer {token}"}, timeout=10
        )


def _wait_until_ready(origin: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"questline serve exited:\n{log.read_text()[-4000:]}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{origin}/readyz", timeout=1).status_code == 200:
                return
        time.sleep(0.05)
    raise TimeoutError(f"questline serve did not become ready:\n{log.read_text()[-4000:]}")


def live_database(server: PostgresServer, prefix: str) -> tuple[str, str | None]:
    """A new database for a live server: its URL and, under row-level security
    (``QUESTLINE_TEST_ROW_SECURITY``), the owner's URL (the server then connects as the
    service's role, under the policies)."""
    if ROW_SECURITY:
        owner_url, url = create_row_security_database(server)
        return url, owner_url
    return server.create_database(unique_database_name(prefix)), None


@contextlib.contextmanager
def live_server(
    data_dir: Path,
    database_url: str | None = None,
    *,
    owner_url: str | None = None,
    port: int | None = None,
    migrate: bool = True,
) -> Iterator[LiveServer]:
    """Migrate, start serving on a loopback port until the block ends, then stop.
    The server may still be booting when the block starts: call ``ready()``. With
    ``owner_url`` (``live_database``) the migrations run as the owner and the server
    under row-level security."""
    port = port or free_port()
    origin = f"http://127.0.0.1:{port}"
    settings = Settings(
        data_dir=data_dir,
        database_url=database_url,
        database_owner_url=owner_url,
        database_row_security=owner_url is not None,
        _env_file=None,  # type: ignore[call-arg]
    )
    env = {**server_env(data_dir, database_url, origin), **database_env(settings)}
    if migrate:
        # In a thread of its own: Playwright's sync API keeps an event loop running in
        # this one, and the migrations call asyncio.run().
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(upgrade, settings).result()
    log = data_dir / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*questline_command(), "serve", "--port", str(port), "--no-migrate"],
            env=env,
            cwd=data_dir,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        tokens = TokenService(settings)
        yield LiveServer(origin, data_dir, env, settings, tokens, process, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
