"""SCIM: revocable SCIM tokens stored by id; the e-mail entries a directory sent for a
member (their types and which is primary)

Revision ID: scim_0001
Revises: webhooks_0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from questline.storage import db as storage

revision: str = "scim_0001"
down_revision: str | None = "webhooks_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "scim_tokens",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=100), nullable=False),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", storage.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", storage.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_scim_tokens_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_scim_tokens")),
        sa.UniqueConstraint("secret_hash", name=op.f("uq_scim_tokens_secret_hash")),
    )
    op.create_index(
        "ix_scim_tokens_org_created",
        "scim_tokens",
        ["organization_id", "created_at"],
        unique=False,
    )
    with op.batch_alter_table("members", schema=None) as batch_op:
        batch_op.add_column(sa.Column("directory_emails", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("members", schema=None) as batch_op:
        batch_op.drop_column("directory_emails")
    op.drop_index("ix_scim_tokens_org_created", table_name="scim_tokens")
    op.drop_table("scim_tokens")
