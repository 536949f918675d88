"""A throwaway PostgreSQL server for the test suite, started from the local binaries.

It runs from ``/usr/lib/postgresql/*/bin`` (Debian's layout), in a temporary directory,
on a free loopback port, with durability switched off for speed. As root it runs the
server as the ``postgres`` user, since PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path


def find_bin_dir() -> Path:
    override = os.environ.get("QUESTLINE_PG_BIN")
    if override:
        return Path(override)
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parent.parent.name),
    )
    if not candidates:
        raise RuntimeError(
            "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin; "
            "install Debian's 'postgresql' package (.ci/run does)."
        )
    return Path(candidates[-1]).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    bin_dir: Path = field(default_factory=find_bin_dir)
    port: int = field(default_factory=free_port)
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="questline-pg-")))
    user: str = "questline"
    server_settings: dict[str, str] = field(default_factory=dict)
    """Overrides of the test defaults below (the benchmark runs a durable server)."""

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def _as_server_user(self, argv: list[str]) -> list[str]:
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--", *argv]
        return argv

    def _run(self, argv: list[str]) -> None:
        subprocess.run(self._as_server_user(argv), check=True, capture_output=True, text=True)

    def start(self) -> PostgresServer:
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(
            [
                str(self.bin_dir / "initdb"),
                "-D",
                str(self.data_dir),
                "-U",
                self.user,
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
            ]
        )
        self.start_server()
        return self

    def stop(self, mode: str = "fast") -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", mode, "stop"])

    def start_server(self) -> None:
        """Start the initialized cluster (again, after ``stop``, in fault tests)."""
        settings = {
            "listen_addresses": "127.0.0.1",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "300",
            **self.server_settings,
        }
        options = f"-p {self.port} -k {self.root} " + " ".join(
            f"-c {name}={value}" for name, value in settings.items()
        )
        log = str(self.root / "server.log")
        pg_ctl = str(self.bin_dir / "pg_ctl")
        self._run([pg_ctl, "-D", str(self.data_dir), "-l", log, "-w", "-o", options, "start"])

    def create_database(self, name: str) -> str:
        self._run(
            [
                str(self.bin_dir.parent / "bin" / "createdb"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                self.user,
                name,
            ]
        )
        return self.url(name)

    def drop_database(self, name: str) -> None:
        self._run(
            [
                str(self.bin_dir / "dropdb"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                self.user,
                "--if-exists",
                name,
            ]
        )

    def version(self) -> str:
        result = subprocess.run(
            [str(self.bin_dir / "postgres"), "--version"], capture_output=True, text=True
        )
        return result.stdout.strip()

    def url(self, database: str) -> str:
        return f"postgresql+asyncpg://{self.user}@127.0.0.1:{self.port}/{database}"

    def cleanup(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        raise TimeoutError("PostgreSQL did not accept connections")
