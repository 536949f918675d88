"""LTI launches bound to their registration and browser, and a registration's extra
frame origins

A login row now names the registration the login chose (organization and platform,
when unambiguous) and the SHA-256 of the browser's login cookie. Logins under way live
minutes and are refused once the code that reads them changes, so the table is made
anew rather than altered (no backfill, and SQLite cannot add a NOT NULL column).

Revision ID: lti_0001
Revises: 0010_lti
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from questline.storage import db as storage

revision: str = "lti_0001"
down_revision: str | None = "0010_lti"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _login_states(*bound: sa.Column[object]) -> None:
    op.create_table(
        "lti_login_states",
        sa.Column("state_hash", sa.String(length=64), nullable=False),
        sa.Column("issuer", sa.String(length=2048), nullable=False),
        sa.Column("client_id", sa.String(length=255), nullable=False),
        *bound,
        sa.Column("nonce", sa.String(length=100), nullable=False),
        sa.Column("target_link_uri", sa.String(length=2048), nullable=False),
        sa.Column("created_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", storage.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("state_hash", name=op.f("pk_lti_login_states")),
    )
    op.create_index(
        op.f("ix_lti_login_states_expires_at"), "lti_login_states", ["expires_at"], unique=False
    )


def _drop_login_states() -> None:
    op.drop_index(op.f("ix_lti_login_states_expires_at"), table_name="lti_login_states")
    op.drop_table("lti_login_states")


def upgrade() -> None:
    _drop_login_states()
    _login_states(
        sa.Column("organization_id", sa.Uuid(), nullable=True),
        sa.Column("platform_id", sa.Uuid(), nullable=True),
        sa.Column("browser_hash", sa.String(length=64), nullable=False),
    )
    with op.batch_alter_table("lti_platforms") as batch:
        batch.add_column(sa.Column("frame_origins", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("lti_platforms") as batch:
        batch.drop_column("frame_origins")
    _drop_login_states()
    _login_states()
