"""SCIM provisioning: members' active flag, directory ids and change time; teams'
directory ids

Revision ID: 0009_scim
Revises: 0008
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from questline.storage import db as storage

revision: str = "0009_scim"
down_revision: str | None = "0009_sso"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("members", schema=None) as batch_op:
        batch_op.add_column(sa.Column("active", sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column("external_id", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("user_name", sa.String(length=320), nullable=True))
        batch_op.add_column(
            sa.Column("updated_at", storage.UTCDateTime(timezone=True), nullable=True)
        )
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.add_column(sa.Column("external_id", sa.String(length=255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("teams", schema=None) as batch_op:
        batch_op.drop_column("external_id")
    with op.batch_alter_table("members", schema=None) as batch_op:
        batch_op.drop_column("updated_at")
        batch_op.drop_column("user_name")
        batch_op.drop_column("external_id")
        batch_op.drop_column("active")
