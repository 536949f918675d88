"""Learners act: how each task is completed (its check, answers as keyed digests, hints)
and sequential disciplines

Revision ID: learners_0001
Revises: scim_0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from questline.storage import db as storage

revision: str = "learners_0001"
down_revision: str | None = "scim_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("disciplines", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("sequential", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "check_kind",
                sa.Enum(
                    "Admin",
                    "Self",
                    "Answer",
                    "Review",
                    name="checkkind",
                    native_enum=False,
                    length=16,
                ),
                server_default="Admin",
                nullable=False,
            )
        )
        batch_op.add_column(sa.Column("max_attempts", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("answers", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("hints", sa.JSON(), nullable=True))
    op.create_table(
        "task_attempts",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("team_id", sa.Uuid(), nullable=False),
        sa.Column("task_id", sa.Uuid(), nullable=False),
        sa.Column("member_id", sa.Uuid(), nullable=True),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("correct", sa.Boolean(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id", "team_id"],
            ["teams.organization_id", "teams.id"],
            name=op.f("fk_task_attempts_organization_id_teams"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_task_attempts_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_task_attempts")),
    )
    op.create_index(
        "ix_task_attempts_team", "task_attempts", ["organization_id", "team_id", "task_id"]
    )
    op.create_index("ix_task_attempts_actor", "task_attempts", ["organization_id", "actor", "at"])
    op.create_table(
        "hint_unlocks",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("team_id", sa.Uuid(), nullable=False),
        sa.Column("task_id", sa.Uuid(), nullable=False),
        sa.Column("hint_index", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Integer(), nullable=False),
        sa.Column("unlocked_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("unlocked_by", sa.String(length=200), nullable=False),
        sa.Column("member_id", sa.Uuid(), nullable=True),
        sa.ForeignKeyConstraint(
            ["organization_id", "team_id"],
            ["teams.organization_id", "teams.id"],
            name=op.f("fk_hint_unlocks_organization_id_teams"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_hint_unlocks_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id", "team_id", "task_id", "hint_index", name=op.f("pk_hint_unlocks")
        ),
    )


def downgrade() -> None:
    op.drop_table("hint_unlocks")
    op.drop_index("ix_task_attempts_actor", table_name="task_attempts")
    op.drop_index("ix_task_attempts_team", table_name="task_attempts")
    op.drop_table("task_attempts")
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_column("hints")
        batch_op.drop_column("answers")
        batch_op.drop_column("max_attempts")
        batch_op.drop_column("check_kind")
    with op.batch_alter_table("disciplines", schema=None) as batch_op:
        batch_op.drop_column("sequential")
