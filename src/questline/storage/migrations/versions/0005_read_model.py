"""read model: versions per organization; tasks completed on the team row

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 14:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "readmodel_versions",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_readmodel_versions_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", name=op.f("pk_readmodel_versions")),
    )
    with op.batch_alter_table("teams") as batch:
        batch.add_column(
            sa.Column("tasks_completed", sa.Integer(), nullable=False, server_default="0")
        )
    op.execute(
        "UPDATE teams SET tasks_completed = (SELECT count(*) FROM task_completions c "
        "WHERE c.organization_id = teams.organization_id AND c.team_id = teams.id)"
    )


def downgrade() -> None:
    with op.batch_alter_table("teams") as batch:
        batch.drop_column("tasks_completed")
    op.drop_table("readmodel_versions")
