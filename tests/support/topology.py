"""The scale-out topology of docs/deploy.md, started from local binaries.

* a PostgreSQL **primary** streaming its WAL,
* a **hot-standby replica** cloned from it with ``pg_basebackup -R``,
* **pgbouncer** in transaction pooling mode in front of the primary,
* **Redis** for the shared rate-limit counters,
* several ``questline serve`` **processes** on their own ports, each with
  ``QUESTLINE_DATABASE_URL`` → pgbouncer (``QUESTLINE_DATABASE_TRANSACTION_POOLER``),
  ``QUESTLINE_DATABASE_LISTEN_URL`` → the primary directly (LISTEN needs a session),
  ``QUESTLINE_DATABASE_REPLICA_URLS`` → the replica, and the same JWT secret.

Migrations run once against the primary directly, as the deploy step does. With
``row_security`` the cluster is the one of docs/deploy.md ("Two database roles"): the
owner role migrates, and every process connects (through pgbouncer, directly for
LISTEN, and to the replica) as the service role, under the policies.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.storage.migrate import upgrade
from questline.web.identity import Role
from tests.support.live import LiveServer, database_env
from tests.support.pgbouncer import PgBouncer, Target, ensure_tool
from tests.support.postgres import (
    SERVICE_ROLE,
    PostgresServer,
    as_role,
    create_row_security_database,
)
from tests.support.redis import RedisServer
from tests.support.replica import StandbyServer, replicating_primary

DATABASE = "questline_scale"


@dataclass
class Cluster:
    """The database side: primary, replica and pgbouncer."""

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="questline-scale-")))
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    primary: PostgresServer | None = None
    standby: StandbyServer | None = None
    bouncer: PgBouncer | None = None
    with_standby: bool = True
    server_pool_size: int = 20
    """pgbouncer's server connections per database (the tests make it small, so that
    client connections share them)."""
    row_security: bool = False
    """Two database roles and the policies (``QUESTLINE_TEST_ROW_SECURITY``)."""
    owner_url: str | None = None
    """The owner role's direct URL (migrations), with ``row_security``."""

    def start(self) -> Cluster:
        ensure_tool("pgbouncer", "pgbouncer")
        try:
            self.primary = replicating_primary()
            if self.row_security:
                self.owner_url, _ = create_row_security_database(self.primary, DATABASE)
            else:
                self.primary.create_database(DATABASE)
            upgrade(self.settings(database_url=self.direct_url))
            if self.with_standby:
                self.standby = StandbyServer(primary=self.primary).start()
            self.bouncer = PgBouncer(
                {DATABASE: Target(self.primary.port, DATABASE)},
                user=self.role,
                settings={"default_pool_size": str(self.server_pool_size)},
            ).start()
        except BaseException:
            self.close()
            raise
        return self

    @property
    def role(self) -> str:
        """Who the service connects as: the service role under the policies, else the
        servers' own user."""
        assert self.primary is not None
        return SERVICE_ROLE if self.row_security else self.primary.user

    def url_on(self, server: PostgresServer) -> str:
        """The service's direct URL of the database on ``server`` (primary or standby)."""
        return as_role(server.url(DATABASE), self.role)

    @property
    def direct_url(self) -> str:
        assert self.primary is not None
        return self.url_on(self.primary)

    @property
    def pooled_url(self) -> str:
        assert self.bouncer is not None
        return self.bouncer.url(DATABASE)

    @property
    def replica_url(self) -> str:
        assert self.standby is not None
        return self.url_on(self.standby)

    def settings(self, **changes: Any) -> Settings:
        """Settings of an in-process app on this cluster (rate limits off)."""
        values: dict[str, Any] = {
            "data_dir": self.root / "data",
            "database_url": self.pooled_url if self.bouncer else self.direct_url,
            "database_transaction_pooler": self.bouncer is not None,
            "database_listen_url": self.direct_url,
            "database_replica_urls": [self.replica_url] if self.standby else [],
            "database_replica_transaction_pooler": False,  # the replica is direct
            "jwt_secret": self.secret,
            "rate_limit_enabled": False,
            "_env_file": None,
        }
        values["database_row_security"] = self.row_security
        if self.row_security:
            values["database_owner_url"] = self.owner_url
        values.update(changes)
        return Settings(**values)

    def env(self) -> dict[str, str]:
        """The environment of a ``questline serve`` process on this cluster."""
        env = {
            "QUESTLINE_DATA_DIR": str(self.root / "data"),
            "QUESTLINE_DATABASE_URL": self.pooled_url,
            "QUESTLINE_DATABASE_TRANSACTION_POOLER": "true",
            "QUESTLINE_DATABASE_LISTEN_URL": self.direct_url,
            "QUESTLINE_JWT_SECRET": self.secret,
            "QUESTLINE_DATABASE_POOL_SIZE": "5",
        }
        if self.standby is not None:
            env["QUESTLINE_DATABASE_REPLICA_URLS"] = self.replica_url
            env["QUESTLINE_DATABASE_REPLICA_TRANSACTION_POOLER"] = "false"  # direct
        env.update(database_env(self.settings()))
        env["QUESTLINE_DATABASE_URL"] = self.pooled_url
        return env

    @property
    def tokens(self) -> TokenService:
        return TokenService(self.settings())

    def admin_token(self, org_id: uuid.UUID, subject: str = "admin") -> str:
        return self.tokens.mint(role=Role.ADMIN, org_id=org_id, subject=subject)

    def member_token(self, org_id: uuid.UUID, subject: str = "member") -> str:
        return self.tokens.mint(role=Role.MEMBER, org_id=org_id, subject=subject)

    def operator_token(self, subject: str = "scraper") -> str:
        """What a Prometheus scrapes ``/metrics`` with (closed to anyone else)."""
        return self.tokens.mint(role=Role.OPERATOR, org_id=None, subject=subject)

    def close(self) -> None:
        if self.bouncer is not None:
            self.bouncer.stop()
        if self.standby is not None:
            self.standby.cleanup()
        if self.primary is not None:
            self.primary.cleanup()
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class Topology:
    """The cluster, Redis, and ``count`` Questline processes on it."""

    cluster: Cluster
    redis: RedisServer | None = None
    servers: list[LiveServer] = field(default_factory=list)

    def start(self, count: int = 3, **env: str) -> Topology:
        self.redis = RedisServer().start()  # the system's redis-server, or the wheel's
        for _ in range(count):
            self.add_server(**env)
        return self

    def add_server(self, **env: str) -> LiveServer:
        assert self.redis is not None
        full_env = {
            **self.cluster.env(),
            "QUESTLINE_RATE_LIMIT_STORAGE": self.redis.url,
            "QUESTLINE_LOG_LEVEL": "INFO",
            **env,
        }
        log = self.cluster.root / f"server-{len(self.servers)}.log"
        server = LiveServer(env=full_env, log_path=log).start()
        self.servers.append(server)
        return server

    def close(self) -> None:
        for server in self.servers:
            server.stop()
        if self.redis is not None:
            self.redis.stop()
