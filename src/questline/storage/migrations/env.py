"""Alembic environment: runs migrations over the async engine of the configured URL.

Running the migrations needs no models: each revision says what it changes. Only
autogenerating a revision compares the database with the models; its caller hands the
metadata in (``config.attributes["target_metadata"]``, see ``storage.migrate``), so that
this module, like the rest of ``storage``, imports no domain.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import pool
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from questline.storage import tenancy

config = context.config
target_metadata = config.attributes.get("target_metadata")


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
        # A tenant table added by a revision after rls_0001 gets the tenant policy too,
        # whether or not that revision remembered it (storage.tenancy).
        if connection.dialect.name == "postgresql" and tenancy.is_protected(connection):
            tenancy.protect_tenant_tables(connection)
        if connection.dialect.name == "postgresql" and config.attributes.get("grant_to"):
            tenancy.grant_service(connection, list(config.attributes["grant_to"]))


async def _run_async() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None
    engine = create_async_engine(url, poolclass=pool.NullPool)
    async with engine.connect() as connection:
        await connection.run_sync(_run)
    await engine.dispose()


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    asyncio.run(_run_async())
