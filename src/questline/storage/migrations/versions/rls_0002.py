"""Row-level security: the tables that hold the platform's rows (the events and audit
entries of global disciplines, an operator's idempotency keys, ``organization_id`` the
zero UUID) let a transaction that acts for no organization (an operator, the only one
who writes global disciplines) read and write those rows. PostgreSQL only: SQLite has
no row security and is unchanged.

Revision ID: rls_0002
Revises: review_0001
"""

from collections.abc import Sequence

from alembic import op

from questline.storage import tenancy

revision: str = "rls_0002"
down_revision: str | None = "review_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        tenancy.protect_platform_rows(connection)


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        tenancy.unprotect_platform_rows(connection)
