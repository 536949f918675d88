"""single sign-on: providers, logins under way, SSO sessions

Revision ID: 0009_sso
Revises: 0008
Create Date: 2026-11-27 04:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from questline.storage import db as storage

revision: str = "0009_sso"
down_revision: str | None = "0009_mail"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sso_configurations",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("issuer", sa.String(length=2048), nullable=False),
        sa.Column("client_id", sa.String(length=255), nullable=False),
        sa.Column("client_secret_sealed", sa.Text(), nullable=False),
        sa.Column("admin_groups", sa.JSON(), nullable=False),
        sa.Column("groups_claim", sa.String(length=100), nullable=False),
        sa.Column("allowed_email_domains", sa.JSON(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_sso_configurations_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", name=op.f("pk_sso_configurations")),
    )
    op.create_table(
        "oidc_login_states",
        sa.Column("state_hash", sa.String(length=64), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("browser_hash", sa.String(length=64), nullable=False),
        sa.Column("nonce", sa.String(length=100), nullable=False),
        sa.Column("code_verifier", sa.String(length=128), nullable=False),
        sa.Column("next_path", sa.String(length=2048), nullable=False),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("state_hash", name=op.f("pk_oidc_login_states")),
    )
    op.create_index(
        op.f("ix_oidc_login_states_expires_at"), "oidc_login_states", ["expires_at"], unique=False
    )
    op.create_table(
        "sso_sessions",
        sa.Column("session_hash", sa.String(length=64), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("session_hash", name=op.f("pk_sso_sessions")),
    )
    op.create_index(
        op.f("ix_sso_sessions_expires_at"), "sso_sessions", ["expires_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_sso_sessions_expires_at"), table_name="sso_sessions")
    op.drop_table("sso_sessions")
    op.drop_index(op.f("ix_oidc_login_states_expires_at"), table_name="oidc_login_states")
    op.drop_table("oidc_login_states")
    op.drop_table("sso_configurations")
