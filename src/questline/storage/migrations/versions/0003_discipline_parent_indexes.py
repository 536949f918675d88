"""discipline parent indexes

Indexes on the parent columns of quests and tasks, so that PostgreSQL's cascading
deletes (a level or quest removed by a PUT, a discipline deleted) find the children by
index instead of scanning the whole table once per deleted parent.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 12:46:07.122065
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("quests", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_quests_level_id"), ["level_id"], unique=False)

    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tasks_level_id"), ["level_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_tasks_quest_id"), ["quest_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("tasks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tasks_quest_id"))
        batch_op.drop_index(batch_op.f("ix_tasks_level_id"))

    with op.batch_alter_table("quests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_quests_level_id"))
