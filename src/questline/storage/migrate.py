"""Running the Alembic migrations from code (CLI, app start, tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import MetaData, make_url

from questline.config import Settings

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(settings: Settings, *, metadata: MetaData | None = None) -> Config:
    """Alembic's configuration for the database of ``settings``.

    ``metadata`` (``questline.models.Base.metadata``) is needed only to autogenerate a
    revision, e.g. ``command.revision(alembic_config(s, metadata=Base.metadata),
    "add x", autogenerate=True)``; upgrading runs the revisions as written.
    """
    config = Config()
    config.attributes["target_metadata"] = metadata
    # Revisions that re-seal stored secrets read the signing secrets from these.
    config.attributes["settings"] = settings
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", settings.resolved_owner_url.replace("%", "%%"))
    config.attributes["grant_to"] = service_roles(settings)
    return config


def service_roles(settings: Settings) -> list[str]:
    """The roles an upgrade grants the tables to: with a separate owner URL
    (``database_owner_url``), the service's role (the user of ``database_url``) and the
    every-organization role; none when one role does everything."""
    if settings.is_sqlite or settings.resolved_owner_url == settings.resolved_database_url:
        return []
    service = make_url(settings.resolved_database_url).username
    roles = [settings.database_every_organization_role]
    return [service, *roles] if service else roles


def upgrade(settings: Settings, revision: str = "head", *, verbose: bool | None = None) -> None:
    """Migrate to ``revision``. Alembic's line per migration is logged only when
    ``verbose`` (by default: at log level DEBUG)."""
    from questline.logging_setup import quiet_migrations

    if verbose is None:
        verbose = settings.log_level.upper() == "DEBUG"
    quiet_migrations(verbose=verbose)
    if settings.is_sqlite:
        settings.ensure_data_dir()
    command.upgrade(alembic_config(settings), revision)
