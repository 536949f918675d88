"""A throwaway Ralph LRS (``ralph-malph``, file-system backend) for the xAPI tests.

Ralph's LRS extra pins fastapi==0.114.2, which cannot share Questline's environment, so
it lives in one of its own: ``.venv-ralph`` at the repository's root, installed on first
use from ``tests/support/ralph/uv.lock`` (``uv sync --frozen``, with the repository's
pinned uv from ``.venv-tools``, or the one on PATH), under a file lock so that parallel
test workers install it once. The server runs ``ralph.api:app`` under uvicorn on a free
loopback port (``LAUNCHER``: with one fix of its file-system backend); each user of its
``auth.json`` (HTTP Basic) has its own ``target`` directory, i.e. its own store: two
users are two LRSs as far as statements go.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.postgres import free_port

ROOT = Path(__file__).resolve().parents[2]
PROJECT = Path(__file__).resolve().parent / "ralph"
ENVIRONMENT = ROOT / ".venv-ralph"


def _uv() -> str:
    pinned = ROOT / ".venv-tools" / "bin" / "uv"
    if pinned.exists():
        return str(pinned)
    found = shutil.which("uv")
    if found is None:
        raise RuntimeError("uv not found: run `make setup` (it installs the pinned uv).")
    return found


def ensure_installed() -> Path:
    """The Python of Ralph's environment, synced with its lock (quick when it is)."""
    python = ENVIRONMENT / "bin" / "python"
    with (ROOT / ".venv-ralph.lock").open("ab") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        env = {
            **os.environ,
            "UV_PROJECT_ENVIRONMENT": str(ENVIRONMENT),
            "UV_PYTHON": getattr(sys, "_base_executable", sys.executable),
            "UV_PYTHON_DOWNLOADS": "never",
            "UV_LINK_MODE": "copy",
        }
        env.pop("VIRTUAL_ENV", None)
        subprocess.run(
            [_uv(), "sync", "--frozen", "--quiet", "--project", str(PROJECT)],
            check=True,
            env=env,
        )
    return python


LAUNCHER = """
import sys

import uvicorn
from ralph.backends.data.base import BaseOperationType
from ralph.backends.lrs.fs import FSLRSBackend

# Ralph 5.1.0's file-system LRS backend writes each POST with its default operation,
# CREATE, which refuses a file that exists: every POST after a store's first answers
# 500 ("... already exists and overwrite is not allowed"). Appending is what an LRS
# does (and what the backend supports): make it the default before the app loads.
FSLRSBackend.default_operation_type = BaseOperationType.APPEND

uvicorn.run("ralph.api:app", host=sys.argv[1], port=int(sys.argv[2]), log_level="warning")
"""
"""Ralph's LRS (``ralph.api:app``) under uvicorn, its file-system backend appending."""


@dataclass(frozen=True)
class RalphUser:
    username: str
    password: str

    @property
    def auth(self) -> tuple[str, str]:
        return (self.username, self.password)


@dataclass
class RalphServer:
    users: list[RalphUser]
    port: int = field(default_factory=free_port)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="questline-ralph-")))
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def endpoint(self) -> str:
        """The xAPI base URL an organization registers."""
        return f"{self.url}/xAPI"

    def start(self) -> RalphServer:
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> RalphServer:
        python = ensure_installed()
        store = self.root / "store"
        store.mkdir()
        accounts = []
        hashes = _bcrypt(python, [user.password for user in self.users])
        for user, hashed in zip(self.users, hashes, strict=True):
            (store / user.username).mkdir()
            accounts.append(
                {
                    "username": user.username,
                    "hash": hashed,
                    "scopes": ["all"],
                    "agent": {"mbox": f"mailto:{user.username}@lrs.example.org"},
                    "target": user.username,
                }
            )
        (self.root / "auth.json").write_text(json.dumps(accounts))
        env = {
            **os.environ,
            "RALPH_APP_DIR": str(self.root),
            "RALPH_AUTH_FILE": str(self.root / "auth.json"),
            "RALPH_RUNSERVER_BACKEND": "fs",
            # One GET may return a whole (test-sized) store: its default is 100.
            "RALPH_RUNSERVER_MAX_SEARCH_HITS_COUNT": "100000",
            "RALPH_BACKENDS__LRS__FS__DEFAULT_DIRECTORY_PATH": str(store),
        }
        argv = [str(python), "-c", LAUNCHER, "127.0.0.1", str(self.port)]
        with (self.root / "ralph.log").open("ab") as log:
            self.process = subprocess.Popen(
                argv, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd=self.root
            )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        """Until it answers, or exits: no deadline (on a loaded machine, importing
        Ralph's models alone has taken a minute)."""
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"Ralph exited: {self.log()}")
            try:
                if httpx.get(f"{self.url}/__lbheartbeat__", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)

    def log(self) -> str:
        path = self.root / "ralph.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def statements(self, user: RalphUser) -> list[dict[str, Any]]:
        """Every statement the user's store holds, through ``GET /xAPI/statements``."""
        found: list[dict[str, Any]] = []
        url: str | None = f"{self.endpoint}/statements?limit=100"
        while url:
            response = httpx.get(
                url, auth=user.auth, headers={"X-Experience-API-Version": "1.0.3"}, timeout=30
            )
            response.raise_for_status()
            body = response.json()
            found.extend(body["statements"])
            more = body.get("more")
            url = f"{self.url}{more}" if more else None
        return found

    def put(self, user: RalphUser, statement: dict[str, Any]) -> httpx.Response:
        """Store a statement directly (``PUT /xAPI/statements?statementId=``)."""
        return httpx.put(
            f"{self.endpoint}/statements",
            params={"statementId": statement["id"]},
            json=statement,
            auth=user.auth,
            headers={"X-Experience-API-Version": "1.0.3"},
            timeout=30,
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def _bcrypt(python: Path, passwords: list[str]) -> list[str]:
    """bcrypt hashes, made with Ralph's own bcrypt (Questline's environment has none)."""
    script = (
        "import bcrypt, sys\n"
        "for p in sys.argv[1:]: print(bcrypt.hashpw(p.encode(), bcrypt.gensalt(4)).decode())"
    )
    output = subprocess.run(
        [str(python), "-c", script, *passwords], check=True, capture_output=True, text=True
    ).stdout
    return output.split()
