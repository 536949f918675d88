"""events and webhooks

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 14:20:06.467451
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from questline.storage import db as storage

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "events",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("pending", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_events")),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index("ix_events_created_at", ["created_at"], unique=False)
        batch_op.create_index("ix_events_dispatch", ["pending", "id"], unique=False)

    op.create_table(
        "webhooks",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("description", sa.String(length=500), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.String(length=500), nullable=True),
        sa.Column("secret", sa.String(length=100), nullable=False),
        sa.Column("previous_secret", sa.String(length=100), nullable=True),
        sa.Column("previous_secret_expires_at", storage.UTCDateTime(timezone=True), nullable=True),
        sa.Column("failing_since", storage.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_webhooks_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_webhooks")),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("webhook_id", sa.Uuid(), nullable=False),
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column("event_type", sa.String(length=64), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "Pending",
                "Succeeded",
                "Failed",
                name="deliverystatus",
                native_enum=False,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_attempt_at", storage.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.String(length=500), nullable=True),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id", "webhook_id"],
            ["webhooks.organization_id", "webhooks.id"],
            name=op.f("fk_webhook_deliveries_organization_id_webhook_id_webhooks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_webhook_deliveries")),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index(
            "ix_webhook_deliveries_due", ["status", "next_attempt_at"], unique=False
        )
        batch_op.create_index(
            "ix_webhook_deliveries_webhook", ["organization_id", "webhook_id", "id"], unique=False
        )


def downgrade() -> None:

    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_webhook_deliveries_webhook")
        batch_op.drop_index("ix_webhook_deliveries_due")

    op.drop_table("webhook_deliveries")
    op.drop_table("webhooks")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index("ix_events_dispatch")
        batch_op.drop_index("ix_events_created_at")

    op.drop_table("events")
