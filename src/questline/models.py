"""Every table, imported once so that ``Base.metadata`` is complete (Alembic, tests)."""

from questline.db import Base
from questline.disciplines.models import Discipline, Level, Quest, Resource, Task
from questline.idempotency import IdempotencyRecord
from questline.members.models import Member
from questline.organizations.models import Organization
from questline.progress.models import ScoreEvent, TaskCompletion
from questline.teams.models import Team, TeamMembership

__all__ = [
    "Base",
    "Discipline",
    "IdempotencyRecord",
    "Level",
    "Member",
    "Organization",
    "Quest",
    "Resource",
    "ScoreEvent",
    "Task",
    "TaskCompletion",
    "Team",
    "TeamMembership",
]
