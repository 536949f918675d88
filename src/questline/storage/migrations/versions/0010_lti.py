"""LTI 1.3: learning platforms and their deployments, the tool's keys, logins under
way, deep-linking tickets and the platform users known by their ``sub``

Revision ID: 0010_lti
Revises: 0009_audit
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from questline.storage import db as storage

revision: str = "0010_lti"
down_revision: str | None = "0009_audit"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "lti_platforms",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("issuer", sa.String(length=2048), nullable=False),
        sa.Column("client_id", sa.String(length=255), nullable=False),
        sa.Column("auth_login_url", sa.String(length=2048), nullable=False),
        sa.Column("auth_token_url", sa.String(length=2048), nullable=False),
        sa.Column("key_set_url", sa.String(length=2048), nullable=False),
        sa.Column("context_title", sa.String(length=500), nullable=True),
        sa.Column("context_id", sa.String(length=255), nullable=True),
        sa.Column("memberships_url", sa.String(length=2048), nullable=True),
        sa.Column("lineitems_url", sa.String(length=2048), nullable=True),
        sa.Column("last_sync_at", storage.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_lti_platforms_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("organization_id", "id", name=op.f("pk_lti_platforms")),
    )
    op.create_table(
        "lti_deployments",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("platform_id", sa.Uuid(), nullable=False),
        sa.Column("deployment_id", sa.String(length=255), nullable=False),
        sa.Column("issuer", sa.String(length=2048), nullable=False),
        sa.Column("client_id", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id", "platform_id"],
            ["lti_platforms.organization_id", "lti_platforms.id"],
            name=op.f("fk_lti_deployments_organization_id_platform_id_lti_platforms"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id", "platform_id", "deployment_id", name=op.f("pk_lti_deployments")
        ),
        sa.UniqueConstraint(
            "issuer",
            "client_id",
            "deployment_id",
            name=op.f("uq_lti_deployments_issuer_client_id_deployment_id"),
        ),
    )
    op.create_index(
        "ix_lti_deployments_platform",
        "lti_deployments",
        ["organization_id", "platform_id"],
        unique=False,
    )
    op.create_table(
        "lti_tool_keys",
        sa.Column("generation", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("kid", sa.String(length=64), nullable=False),
        sa.Column("public_jwk", sa.JSON(), nullable=False),
        sa.Column("private_sealed", sa.String(length=8000), nullable=False),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("generation", name=op.f("pk_lti_tool_keys")),
        sa.UniqueConstraint("kid", name=op.f("uq_lti_tool_keys_kid")),
    )
    op.create_table(
        "lti_login_states",
        sa.Column("state_hash", sa.String(length=64), nullable=False),
        sa.Column("issuer", sa.String(length=2048), nullable=False),
        sa.Column("client_id", sa.String(length=255), nullable=False),
        sa.Column("nonce", sa.String(length=100), nullable=False),
        sa.Column("target_link_uri", sa.String(length=2048), nullable=False),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("state_hash", name=op.f("pk_lti_login_states")),
    )
    op.create_index(
        op.f("ix_lti_login_states_expires_at"), "lti_login_states", ["expires_at"], unique=False
    )
    op.create_table(
        "lti_deep_links",
        sa.Column("ticket_hash", sa.String(length=64), nullable=False),
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("platform_id", sa.Uuid(), nullable=False),
        sa.Column("deployment_id", sa.String(length=255), nullable=False),
        sa.Column("return_url", sa.String(length=2048), nullable=False),
        sa.Column("data", sa.String(length=2048), nullable=True),
        sa.Column("frame_origin", sa.String(length=300), nullable=False),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("ticket_hash", name=op.f("pk_lti_deep_links")),
    )
    op.create_index(
        op.f("ix_lti_deep_links_expires_at"), "lti_deep_links", ["expires_at"], unique=False
    )
    op.create_table(
        "lti_people",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("platform_id", sa.Uuid(), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("member_id", sa.Uuid(), nullable=False),
        sa.Column("roster_deactivated", sa.Boolean(), nullable=False),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id", "member_id"],
            ["members.organization_id", "members.id"],
            name=op.f("fk_lti_people_organization_id_member_id_members"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id", "platform_id"],
            ["lti_platforms.organization_id", "lti_platforms.id"],
            name=op.f("fk_lti_people_organization_id_platform_id_lti_platforms"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id", "platform_id", "subject", name=op.f("pk_lti_people")
        ),
    )
    op.create_index(
        "ix_lti_people_member", "lti_people", ["organization_id", "member_id"], unique=False
    )
    op.create_table(
        "lti_line_items",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("platform_id", sa.Uuid(), nullable=False),
        sa.Column("discipline_id", sa.Uuid(), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id", "platform_id"],
            ["lti_platforms.organization_id", "lti_platforms.id"],
            name=op.f("fk_lti_line_items_organization_id_platform_id_lti_platforms"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id", "platform_id", "discipline_id", name=op.f("pk_lti_line_items")
        ),
    )
    op.create_table(
        "lti_scores",
        sa.Column("organization_id", sa.Uuid(), nullable=False),
        sa.Column("platform_id", sa.Uuid(), nullable=False),
        sa.Column("discipline_id", sa.Uuid(), nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("score_given", sa.Integer(), nullable=False),
        sa.Column("score_maximum", sa.Integer(), nullable=False),
        sa.Column("label", sa.String(length=500), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.String(length=1000), nullable=True),
        sa.Column("updated_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id", "platform_id"],
            ["lti_platforms.organization_id", "lti_platforms.id"],
            name=op.f("fk_lti_scores_organization_id_platform_id_lti_platforms"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "organization_id",
            "platform_id",
            "discipline_id",
            "subject",
            name=op.f("pk_lti_scores"),
        ),
    )
    op.create_index("ix_lti_scores_due", "lti_scores", ["status", "next_attempt_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_lti_scores_due", table_name="lti_scores")
    op.drop_table("lti_scores")
    op.drop_table("lti_line_items")
    op.drop_index("ix_lti_people_member", table_name="lti_people")
    op.drop_table("lti_people")
    op.drop_index(op.f("ix_lti_deep_links_expires_at"), table_name="lti_deep_links")
    op.drop_table("lti_deep_links")
    op.drop_index(op.f("ix_lti_login_states_expires_at"), table_name="lti_login_states")
    op.drop_table("lti_login_states")
    op.drop_table("lti_tool_keys")
    op.drop_index("ix_lti_deployments_platform", table_name="lti_deployments")
    op.drop_table("lti_deployments")
    op.drop_table("lti_platforms")
