"""webhook deliveries: a generation bumped by manual retries; secrets wide enough to be
sealed

``webhook_deliveries.generation`` lets the dispatcher tell an attempt claimed before a
manual retry from the retry itself (the older attempt's result does not overwrite the
retry). ``webhooks.secret`` and ``previous_secret`` grow to 255 characters: a sealed
secret is longer than the clear one. Secrets stored in clear stay readable and are
sealed on the next write of their webhook (``storage.sealing`` tells the two apart).

Revision ID: webhooks_0001
Revises: lti_0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "webhooks_0001"
down_revision: str | None = "lti_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.add_column(sa.Column("generation", sa.Integer(), nullable=False, server_default="0"))
    if op.get_bind().dialect.name != "postgresql":
        return  # SQLite's VARCHAR has no length limit
    for column in ("secret", "previous_secret"):
        op.alter_column(
            "webhooks",
            column,
            type_=sa.String(255),
            existing_type=sa.String(100),
            existing_nullable=column == "previous_secret",
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for column in ("secret", "previous_secret"):
            op.alter_column(
                "webhooks",
                column,
                type_=sa.String(100),
                existing_type=sa.String(255),
                existing_nullable=column == "previous_secret",
            )
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_column("generation")
