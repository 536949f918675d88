"""The discipline tree.

Every node row carries its ``discipline_id`` so that a whole tree loads in one query
per table, whatever its size. The parent columns (``level_id``, ``quest_id``) are indexed
so that PostgreSQL's cascading deletes find the children without scanning the table.
``position`` is the 0-based ``Order`` among siblings. A discipline whose
``organization_id`` is null is global: every organization reads it.
"""

from __future__ import annotations

import datetime as dt
import enum
import uuid
from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base, UTCDateTime, new_id, text_enum, utcnow


class Color(enum.StrEnum):
    PURPLE = "Purple"
    GREEN = "Green"
    RED = "Red"


class CheckKind(enum.StrEnum):
    """How a task is completed (docs/learners.md)."""

    ADMIN = "Admin"
    """An admin records it (the only way before learners acted themselves)."""
    SELF = "Self"
    """Any member of the team marks it complete."""
    ANSWER = "Answer"
    """A member submits an answer; one that matches completes it."""
    REVIEW = "Review"
    """A member submits work; an admin approves (completes) or rejects it."""


class Match(enum.StrEnum):
    EXACT = "Exact"
    IGNORE_CASE = "IgnoreCase"
    """Case-folded, surrounding spaces ignored."""
    REGEX = "Regex"
    """A full match in RE2 syntax (linear time)."""


class ResourceOwner(enum.StrEnum):
    DISCIPLINE = "discipline"
    LEVEL = "level"
    QUEST = "quest"
    TASK = "task"


class Discipline(Base):
    __tablename__ = "disciplines"

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    organization_id: Mapped[uuid.UUID | None] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), index=True
    )
    title: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text)
    color: Mapped[Color | None] = mapped_column(text_enum(Color))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    version: Mapped[int] = mapped_column(default=1)
    sequential: Mapped[bool] = mapped_column(default=False, server_default=false())
    """Levels open for a team one after the other (each when the previous is complete)."""

    __mapper_args__ = {"version_id_col": version}


class Level(Base):
    __tablename__ = "levels"
    __table_args__ = (Index("ix_levels_discipline", "discipline_id", "position"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    discipline_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("disciplines.id", ondelete="CASCADE")
    )
    position: Mapped[int]
    title: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")


class Quest(Base):
    __tablename__ = "quests"
    __table_args__ = (Index("ix_quests_discipline", "discipline_id", "level_id", "position"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    discipline_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("disciplines.id", ondelete="CASCADE")
    )
    level_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("levels.id", ondelete="CASCADE"), index=True
    )
    position: Mapped[int]
    title: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")


class Task(Base):
    __tablename__ = "tasks"
    __table_args__ = (Index("ix_tasks_discipline", "discipline_id", "quest_id", "position"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    discipline_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("disciplines.id", ondelete="CASCADE")
    )
    level_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("levels.id", ondelete="CASCADE"), index=True
    )
    quest_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("quests.id", ondelete="CASCADE"), index=True
    )
    position: Mapped[int]
    title: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    points: Mapped[int] = mapped_column(default=10)
    check_kind: Mapped[CheckKind] = mapped_column(
        text_enum(CheckKind), default=CheckKind.ADMIN, server_default=CheckKind.ADMIN.value
    )
    max_attempts: Mapped[int | None]
    """``Answer`` tasks: the attempts a team has (null: unlimited)."""
    answers: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON(none_as_null=True))
    """``Answer`` tasks: ``[{"Match", "Digest"}]`` (Exact, IgnoreCase: a keyed digest,
    never the value) or ``[{"Match": "Regex", "Value"}]`` (the pattern as written)."""
    hints: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON(none_as_null=True))
    """``[{"Text", "Cost"}]`` in order; null for none."""


class Resource(Base):
    __tablename__ = "resources"
    __table_args__ = (Index("ix_resources_discipline", "discipline_id", "owner_id", "position"),)

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=new_id)
    discipline_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("disciplines.id", ondelete="CASCADE")
    )
    owner_kind: Mapped[ResourceOwner] = mapped_column(text_enum(ResourceOwner))
    owner_id: Mapped[uuid.UUID]
    """The discipline, level, quest or task the resource hangs on."""
    position: Mapped[int]
    title: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    url: Mapped[str] = mapped_column(String(2048))
    kind: Mapped[str] = mapped_column(String(50), default="Link")
