"""xAPI: each organization's LRS and the statements for it

Revision ID: 0009_xapi
Revises: 0008
Create Date: 2026-11-27 04:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from questline.storage import db as storage

revision: str = "0009_xapi"
down_revision: str | None = "0009_scim"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "xapi_lrs",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("endpoint", sa.String(length=2048), nullable=False),
        sa.Column("username", sa.String(length=255), nullable=True),
        sa.Column("password", sa.String(length=2000), nullable=True),
        sa.Column("token", sa.String(length=6000), nullable=True),
        sa.Column("failing_since", storage.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.String(length=1000), nullable=True),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_xapi_lrs_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", name=op.f("pk_xapi_lrs")),
    )
    op.create_table(
        "xapi_statements",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column(
            "kind",
            sa.Enum(
                "task",
                "level",
                "discipline",
                "voided",
                name="statementkind",
                native_enum=False,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("team_id", sa.Uuid(), nullable=False),
        sa.Column("task_id", sa.Uuid(), nullable=True),
        sa.Column("level_id", sa.Uuid(), nullable=True),
        sa.Column("discipline_id", sa.Uuid(), nullable=True),
        sa.Column("voided", sa.Boolean(), nullable=False),
        sa.Column("statement", sa.JSON(), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "Pending", "Sent", "Failed", name="statementstatus", native_enum=False, length=16
            ),
            nullable=False,
        ),
        sa.Column("alone", sa.Boolean(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_attempt_at", storage.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.String(length=1000), nullable=True),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["xapi_lrs.organization_id"],
            name=op.f("fk_xapi_statements_organization_id_xapi_lrs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_xapi_statements")),
    )
    with op.batch_alter_table("xapi_statements", schema=None) as batch_op:
        batch_op.create_index("ix_xapi_statements_due", ["status", "next_attempt_at"])
        batch_op.create_index("ix_xapi_statements_team", ["organization_id", "team_id", "kind"])


def downgrade() -> None:
    with op.batch_alter_table("xapi_statements", schema=None) as batch_op:
        batch_op.drop_index("ix_xapi_statements_team")
        batch_op.drop_index("ix_xapi_statements_due")
    op.drop_table("xapi_statements")
    op.drop_table("xapi_lrs")
