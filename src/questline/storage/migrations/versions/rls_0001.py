"""Row-level security: every tenant table (one with an ``organization_id``) shows and
accepts only the rows of the organization a transaction set (PostgreSQL; SQLite has no
row security and is unchanged)

Revision ID: rls_0001
Revises: platform_0001
"""

from collections.abc import Sequence

from alembic import op

from questline.storage import tenancy

revision: str = "rls_0001"
down_revision: str | None = "platform_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        tenancy.protect_tenant_tables(connection)


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        tenancy.unprotect_tenant_tables(connection)
