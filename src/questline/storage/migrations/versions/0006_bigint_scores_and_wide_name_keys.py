"""scores as BIGINT; team name keys wide enough for case folding; readiness probe row

Scores grow without bound (a team completes tasks of any number of disciplines, each
task up to 1,000,000 points): ``teams.score`` and ``score_events.score_after`` become
BIGINT (maximum 9,223,372,036,854,775,807). A team name of 100 characters can fold to
up to 300 (``'ß'`` folds to ``'ss'``): ``teams.name_key`` becomes VARCHAR(300).
SQLite's INTEGER is already 64-bit and its VARCHAR unbounded: nothing to do there.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 15:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # /readyz writes one row here: a database that takes no write is not ready.
    op.create_table(
        "health_probe",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("checked_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_health_probe")),
    )
    if op.get_bind().dialect.name != "postgresql":
        return
    op.alter_column("teams", "score", type_=sa.BigInteger(), existing_nullable=False)
    op.alter_column("score_events", "score_after", type_=sa.BigInteger(), existing_nullable=False)
    op.alter_column("teams", "name_key", type_=sa.String(300), existing_nullable=False)


def downgrade() -> None:
    op.drop_table("health_probe")
    if op.get_bind().dialect.name != "postgresql":
        return
    op.alter_column("teams", "name_key", type_=sa.String(100), existing_nullable=False)
    op.alter_column("score_events", "score_after", type_=sa.Integer(), existing_nullable=False)
    op.alter_column("teams", "score", type_=sa.Integer(), existing_nullable=False)
