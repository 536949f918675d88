"""A streaming hot-standby replica of a harness PostgreSQL server.

``StandbyServer`` clones a running primary with ``pg_basebackup -R`` (which writes
``standby.signal`` and the ``primary_conninfo`` to stream from it) and runs the copy on
its own port as a read-only hot standby. ``promote`` turns it into a primary.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import subprocess
import time
from dataclasses import dataclass, field

import asyncpg

from tests.support.postgres import PostgresServer, reachable_bin_dir, server_user

REPLICATION_SETTINGS = {
    "wal_level": "replica",
    "max_wal_senders": "5",
    "hot_standby": "on",
    "hot_standby_feedback": "on",
    "wal_writer_delay": "10ms",
}
"""Given to both servers. The standby's feedback keeps the primary from vacuuming rows
its queries still read (no cancelled reads on the standby)."""


def replicating_primary() -> PostgresServer:
    """A harness primary that streams its WAL to standbys."""
    return PostgresServer(server_settings=dict(REPLICATION_SETTINGS)).start()


@dataclass
class StandbyServer(PostgresServer):
    primary: PostgresServer | None = field(default=None)

    def start(self) -> StandbyServer:
        assert self.primary is not None
        if os.geteuid() == 0:
            user = pwd.getpwnam(server_user())
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self.bin_dir = reachable_bin_dir(self.bin_dir, user.pw_name)
        self.server_settings = {**REPLICATION_SETTINGS, **self.server_settings}
        self._run(
            [
                str(self.bin_dir / "pg_basebackup"),
                "-h", "127.0.0.1",
                "-p", str(self.primary.port),
                "-U", self.primary.user,
                "-D", str(self.data_dir),
                "-R",
                "-X", "stream",
                "--checkpoint=fast",
                "--no-sync",
            ]
        )  # fmt: skip
        self.start_server()
        self.wait_streaming()
        return self

    def wait_streaming(self, timeout: float = 30) -> None:
        """Until the standby accepts read-only connections and is in recovery."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if asyncio.run(self.in_recovery()):
                    return
            except (OSError, asyncpg.PostgresError):
                pass
            time.sleep(0.1)
        raise TimeoutError("the standby did not start streaming")

    async def in_recovery(self) -> bool:
        connection = await asyncpg.connect(
            host="127.0.0.1", port=self.port, user=self.user, database="postgres"
        )
        try:
            return bool(await connection.fetchval("SELECT pg_is_in_recovery()"))
        finally:
            await connection.close()

    def promote(self) -> None:
        """``pg_ctl promote``: the standby stops replaying and accepts writes."""
        subprocess.run(
            self._as_server_user(
                [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-w", "promote"]
            ),
            check=True,
            capture_output=True,
            text=True,
        )
