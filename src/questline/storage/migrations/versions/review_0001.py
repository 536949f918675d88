"""Submissions for review: the work a team's member submits and the admin's decision;
the mail outbox's notices (their content)

Revision ID: review_0001
Revises: learners_0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from questline.storage import db as storage

revision: str = "review_0001"
down_revision: str | None = "learners_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "submissions",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("team_id", sa.Uuid(), nullable=False),
        sa.Column("task_id", sa.Uuid(), nullable=False),
        sa.Column("discipline_id", sa.Uuid(), nullable=False),
        sa.Column("member_id", sa.Uuid(), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("url", sa.String(length=2048), nullable=True),
        sa.Column(
            "state",
            sa.Enum(
                "Pending",
                "Approved",
                "Rejected",
                name="submissionstate",
                native_enum=False,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("submitted_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("decided_at", storage.UTCDateTime(timezone=True), nullable=True),
        sa.Column("decided_by", sa.String(length=255), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["organization_id", "team_id"],
            ["teams.organization_id", "teams.id"],
            name=op.f("fk_submissions_organization_id_team_id_teams"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_submissions_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["tasks.id"],
            name=op.f("fk_submissions_task_id_tasks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_submissions")),
    )
    op.create_index(
        "ix_submissions_queue",
        "submissions",
        ["organization_id", "state", "submitted_at", "id"],
        unique=False,
    )
    op.create_index(
        "ix_submissions_team",
        "submissions",
        ["organization_id", "team_id", "submitted_at", "id"],
        unique=False,
    )
    op.create_index(op.f("ix_submissions_task_id"), "submissions", ["task_id"], unique=False)
    op.create_index(
        "uq_submissions_pending",
        "submissions",
        ["organization_id", "team_id", "task_id"],
        unique=True,
        sqlite_where=sa.text("state = 'Pending'"),
        postgresql_where=sa.text("state = 'Pending'"),
    )
    with op.batch_alter_table("mail_outbox", schema=None) as batch_op:
        batch_op.add_column(sa.Column("content", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mail_outbox", schema=None) as batch_op:
        batch_op.drop_column("content")
    op.drop_index("uq_submissions_pending", table_name="submissions")
    op.drop_index(op.f("ix_submissions_task_id"), table_name="submissions")
    op.drop_index("ix_submissions_team", table_name="submissions")
    op.drop_index("ix_submissions_queue", table_name="submissions")
    op.drop_table("submissions")
