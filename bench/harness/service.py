"""The service under test as every run configures it: its settings, environment and
tokens, the benchmark's PostgreSQL settings, and seeding a database for it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from bench.dataset.seed import Seeded, seed, seeding_engine
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.web.identity import Role

ATTEMPTS_PER_MINUTE = 100
"""The per-member rate of answers (a rule of the game, on whatever the rate limits): above
what one member sends in the learners' rows (harness/learners.py: one member a team,
1,000 teams), of the order of the default (10), since its check reads the member's
latest attempts up to this many."""
JWT_SECRET = "questline-benchmark-secret-not-for-production-use-0123456789"
# A durable server, as production runs it (the test harness switches durability off).
POSTGRES_SETTINGS = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
    "shared_buffers": "1GB",
    "effective_cache_size": "8GB",
    "max_connections": "200",
}
WORKERS = {"sqlite": 1, "postgresql": 2}
"""Worker processes of ``questline serve`` for each backend (SQLite serves from one)."""


def settings_for(data_dir: Path, url: str | None, *, owner_url: str | None = None) -> Settings:
    """``owner_url``: row-level security, the service connecting as ``url``'s role."""
    return Settings(
        data_dir=data_dir,
        database_url=url,
        database_owner_url=owner_url,
        database_row_security=owner_url is not None,
        jwt_secret=JWT_SECRET,
        _env_file=None,
    )


def service_env(data_dir: Path, url: str | None, *, owner_url: str | None = None) -> dict[str, str]:
    """The environment of ``questline serve`` under test: rate limits off, quiet logs."""
    env = {
        "QUESTLINE_DATA_DIR": str(data_dir),
        "QUESTLINE_JWT_SECRET": JWT_SECRET,
        "QUESTLINE_LOG_LEVEL": "WARNING",
        "QUESTLINE_RATE_LIMIT_ENABLED": "false",
        "QUESTLINE_ATTEMPTS_PER_MINUTE": str(ATTEMPTS_PER_MINUTE),
    }
    if url:
        env["QUESTLINE_DATABASE_URL"] = url
    env["QUESTLINE_DATABASE_ROW_SECURITY"] = "true" if owner_url else "false"
    if owner_url:
        env["QUESTLINE_DATABASE_OWNER_URL"] = owner_url
    return env


def tokens_for(settings: Settings, seeded: Seeded) -> dict[str, str]:
    """A member's and an admin's token of the seeded organization, by role."""
    service = TokenService(settings)
    lifetime = dt.timedelta(hours=6)
    return {
        "member": service.mint(
            role=Role.MEMBER, org_id=seeded.org_id, subject="bench-member", lifetime=lifetime
        ),
        "admin": service.mint(
            role=Role.ADMIN, org_id=seeded.org_id, subject="bench-admin", lifetime=lifetime
        ),
    }


async def seed_database(url: str, teams: int) -> Seeded:
    """Seed ``teams`` teams into the (migrated) database at ``url``."""
    engine = seeding_engine(url)
    try:
        return await seed(engine, teams)
    finally:
        await engine.dispose()
