"""Learners act: how each task is completed (its check, answers as keyed digests, hints)
and sequential disciplines

Revision ID: learners_0001
Revises: scim_0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

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


def downgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_column("hints")
        batch_op.drop_column("answers")
        batch_op.drop_column("max_attempts")
        batch_op.drop_column("check_kind")
    with op.batch_alter_table("disciplines", schema=None) as batch_op:
        batch_op.drop_column("sequential")
