"""the mail outbox, and organizations' names

Revision ID: 0009_mail
Revises: 0008
Create Date: 2026-11-27 04:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from questline.storage import db as storage

revision: str = "0009_mail"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "mail_outbox",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column(
            "kind",
            sa.Enum("signin_link", "invite", name="mailkind", native_enum=False, length=16),
            nullable=False,
        ),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("member_id", sa.Uuid(), nullable=True),
        sa.Column(
            "status",
            sa.Enum(
                "Pending",
                "Sent",
                "Skipped",
                "Failed",
                name="mailstatus",
                native_enum=False,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_attempt_at", storage.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.String(length=500), nullable=True),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("sent_at", storage.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_mail_outbox")),
    )
    with op.batch_alter_table("mail_outbox", schema=None) as batch_op:
        batch_op.create_index("ix_mail_outbox_due", ["status", "next_attempt_at"], unique=False)
    with op.batch_alter_table("organizations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("name", sa.String(length=100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("organizations", schema=None) as batch_op:
        batch_op.drop_column("name")
    with op.batch_alter_table("mail_outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_mail_outbox_due")
    op.drop_table("mail_outbox")
