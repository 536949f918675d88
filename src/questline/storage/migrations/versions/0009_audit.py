"""point adjustments (score_adjustments; score_events steps without a task) and the
audit log (audit_entries)

Revision ID: 0009_audit
Revises: 0008
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from questline.storage import db as storage

revision: str = "0009_audit"
down_revision: str | None = "0009_season"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "score_adjustments",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("team_id", sa.Uuid(), nullable=False),
        sa.Column("points", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=False),
        sa.Column("at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("recorded_by", sa.String(length=255), nullable=False),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("withdrawn_at", storage.UTCDateTime(timezone=True), nullable=True),
        sa.Column("withdrawn_by", sa.String(length=255), nullable=True),
        sa.ForeignKeyConstraint(
            ["organization_id", "team_id"],
            ["teams.organization_id", "teams.id"],
            name=op.f("fk_score_adjustments_organization_id_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_score_adjustments_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_score_adjustments")),
    )
    with op.batch_alter_table("score_adjustments", schema=None) as batch_op:
        batch_op.create_index(
            "ix_score_adjustments_team_at", ["organization_id", "team_id", "at"], unique=False
        )
    # An adjustment's steps name no task and no discipline, but their adjustment.
    with op.batch_alter_table("score_events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("adjustment_id", sa.Uuid(), nullable=True))
        batch_op.alter_column("task_id", existing_type=sa.Uuid(), nullable=True)
        batch_op.alter_column("discipline_id", existing_type=sa.Uuid(), nullable=True)

    op.create_table(
        "audit_entries",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=255), nullable=False),
        sa.Column("actor_role", sa.String(length=16), nullable=True),
        sa.Column("actor_via", sa.String(length=16), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target_type", sa.String(length=32), nullable=False),
        sa.Column("target_id", sa.String(length=64), nullable=True),
        sa.Column("request_id", sa.String(length=64), nullable=True),
        sa.Column("changes", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_audit_entries")),
    )
    with op.batch_alter_table("audit_entries", schema=None) as batch_op:
        batch_op.create_index("ix_audit_entries_at", ["at"], unique=False)
        batch_op.create_index(
            "ix_audit_entries_org_action", ["organization_id", "action", "at"], unique=False
        )
        batch_op.create_index(
            "ix_audit_entries_org_actor", ["organization_id", "actor", "at"], unique=False
        )
        batch_op.create_index(
            "ix_audit_entries_org_at", ["organization_id", "at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_audit_entries_org_target", ["organization_id", "target_id", "at"], unique=False
        )


def downgrade() -> None:
    op.drop_table("audit_entries")
    op.execute("DELETE FROM score_events WHERE adjustment_id IS NOT NULL")
    with op.batch_alter_table("score_events", schema=None) as batch_op:
        batch_op.alter_column("discipline_id", existing_type=sa.Uuid(), nullable=False)
        batch_op.alter_column("task_id", existing_type=sa.Uuid(), nullable=False)
        batch_op.drop_column("adjustment_id")
    with op.batch_alter_table("score_adjustments", schema=None) as batch_op:
        batch_op.drop_index("ix_score_adjustments_team_at")
    op.drop_table("score_adjustments")
