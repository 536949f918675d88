"""dashboard sign-in codes and cookie sessions

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 14:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from questline.storage import db as storage

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "signin_codes",
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=True),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("code_hash", name=op.f("pk_signin_codes")),
    )
    op.create_index(
        op.f("ix_signin_codes_expires_at"), "signin_codes", ["expires_at"], unique=False
    )
    op.create_table(
        "dashboard_sessions",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=True),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id_hash", name=op.f("pk_dashboard_sessions")),
    )
    op.create_index(
        op.f("ix_dashboard_sessions_expires_at"),
        "dashboard_sessions",
        ["expires_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_dashboard_sessions_expires_at"), table_name="dashboard_sessions")
    op.drop_table("dashboard_sessions")
    op.drop_index(op.f("ix_signin_codes_expires_at"), table_name="signin_codes")
    op.drop_table("signin_codes")
