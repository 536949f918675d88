"""A throwaway pgbouncer (Debian's ``pgbouncer``) in transaction pooling mode.

It listens on a free loopback port and forwards each of its databases to a PostgreSQL
server of the harness. pgbouncer refuses to run as root, so as root it runs as the
PostgreSQL servers' user (``postgres``, or ``nobody``). ``SIGHUP`` reloads its configuration:
``repoint`` uses that to send a database to another server (a promoted replica).

When ``pgbouncer`` (or another Debian tool the harness needs) is missing, ``ensure_tool``
installs its package with apt when the tests run as root, and otherwise skips the test
with the command that installs it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.postgres import free_port, server_user

POOL_SETTINGS = {
    "pool_mode": "transaction",
    "max_client_conn": "2000",
    "default_pool_size": "20",
    "min_pool_size": "0",
    "reserve_pool_size": "5",
    "server_reset_query": "DISCARD ALL",
    "server_reset_query_always": "1",
    "server_check_query": "select 1",
    "server_login_retry": "1",
    "query_wait_timeout": "5",
    "ignore_startup_parameters": "extra_float_digits",
}
"""What docs/deploy.md recommends: transaction pooling; ``DISCARD ALL`` after every
transaction drops the uniquely named prepared statements the clients leave behind."""


def ensure_tool(binary: str, package: str) -> str:
    """The path of ``binary``; installs Debian's ``package`` when missing and root, or
    skips the test with the command to run."""
    found = shutil.which(binary) or shutil.which(binary, path="/usr/sbin:/usr/bin")
    if found:
        return found
    command = f"apt-get update && apt-get install -y --no-install-recommends {package}"
    # (tests.support.system_packages installs pgbouncer before `make test`; this covers
    # a plain pytest run.)
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for argv in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", package],
        ):
            subprocess.run(argv, check=False, capture_output=True, env=env, timeout=600)
        found = shutil.which(binary) or shutil.which(binary, path="/usr/sbin:/usr/bin")
        if found:
            return found
    pytest.skip(f"{binary} is not installed; run: {command}")


@dataclass
class Target:
    """Where one pgbouncer database leads."""

    port: int
    dbname: str
    host: str = "127.0.0.1"


@dataclass
class PgBouncer:
    databases: dict[str, Target]
    user: str = "questline"
    port: int = field(default_factory=free_port)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="questline-pgb-")))
    settings: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    @property
    def ini_path(self) -> Path:
        return self.root / "pgbouncer.ini"

    @property
    def log_path(self) -> Path:
        return self.root / "pgbouncer.log"

    def url(self, database: str) -> str:
        return f"postgresql+asyncpg://{self.user}@127.0.0.1:{self.port}/{database}"

    def _write_config(self) -> None:
        lines = ["[databases]"]
        for name, target in self.databases.items():
            lines.append(f"{name} = host={target.host} port={target.port} dbname={target.dbname}")
        lines.append("[pgbouncer]")
        settings = {
            "listen_addr": "127.0.0.1",
            "listen_port": str(self.port),
            "unix_socket_dir": "",
            "auth_type": "trust",
            "auth_file": str(self.root / "userlist.txt"),
            "admin_users": self.user,
            "logfile": str(self.log_path),
            **POOL_SETTINGS,
            **self.settings,
        }
        lines.extend(f"{name} = {value}" for name, value in settings.items())
        (self.root / "userlist.txt").write_text(f'"{self.user}" ""\n')
        self.ini_path.write_text("\n".join(lines) + "\n")
        if os.geteuid() == 0:
            user = pwd.getpwnam(server_user())
            for path in (self.root, self.ini_path, self.root / "userlist.txt"):
                os.chown(path, user.pw_uid, user.pw_gid)

    def start(self) -> PgBouncer:
        binary = ensure_tool("pgbouncer", "pgbouncer")
        self._write_config()
        argv = [binary, str(self.ini_path)]
        if os.geteuid() == 0:
            argv = [binary, "-u", server_user(), str(self.ini_path)]  # it drops root itself
        self.process = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
        )
        self._wait_listening()
        return self

    def _wait_listening(self, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"pgbouncer exited: {self.logs()[-2000:]}")
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise TimeoutError(f"pgbouncer did not listen: {self.logs()[-2000:]}")

    def repoint(self, database: str, target: Target) -> None:
        """Send ``database`` to another server: rewrite the file and reload (SIGHUP).
        Server connections to the old target are closed; clients stay connected."""
        self.databases[database] = target
        self._write_config()
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGHUP)
        time.sleep(0.5)

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

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
