"""seasons; who completed a task and who recorded it

Revision ID: 0009_season
Revises: 0008
Create Date: 2026-11-27 04:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from questline.storage import db as storage

revision: str = "0009_season"
down_revision: str | None = "0009_xapi"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "seasons",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("starts_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("ends_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("freezes_at", storage.UTCDateTime(timezone=True), nullable=True),
        sa.Column("revealed_at", storage.UTCDateTime(timezone=True), nullable=True),
        sa.Column("discipline_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["discipline_id"],
            ["disciplines.id"],
            name=op.f("fk_seasons_discipline_id_disciplines"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_seasons_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_seasons")),
    )
    with op.batch_alter_table("seasons", schema=None) as batch_op:
        batch_op.create_index("ix_seasons_start", ["organization_id", "starts_at"], unique=False)
    with op.batch_alter_table("task_completions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("member_id", sa.Uuid(), nullable=True))
        batch_op.add_column(sa.Column("recorded_by", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("task_completions", schema=None) as batch_op:
        batch_op.drop_column("recorded_by")
        batch_op.drop_column("member_id")
    with op.batch_alter_table("seasons", schema=None) as batch_op:
        batch_op.drop_index("ix_seasons_start")
    op.drop_table("seasons")
