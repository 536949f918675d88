"""Row-level security for the discipline tree below ``disciplines`` (levels, quests,
tasks, resources): they have no ``organization_id``, so their policy follows each row's
``discipline_id`` to the discipline. The tables with shared rows (global disciplines,
unbound LTI logins) and the tree get a restrictive policy for ``DELETE``: an
organization sees the shared rows and can no more delete them than change them.
PostgreSQL only: SQLite has no row security and is unchanged.

Revision ID: rls_0003
Revises: rls_0002
"""

from collections.abc import Sequence

from alembic import op

from questline.storage import tenancy

revision: str = "rls_0003"
down_revision: str | None = "rls_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        tenancy.protect_shared_rows_from_delete(connection)
        tenancy.protect_discipline_children(connection)


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == "postgresql":
        tenancy.unprotect_discipline_children(connection)
        tenancy.unprotect_shared_rows_from_delete(connection)
