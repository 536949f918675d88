"""Teams' tags in SQL, for a bracket (``GET /leaderboard?tag=``): which spellings of a tag
the organization's teams carry, and a condition that a team carries one of them.

Tags are compared ignoring case as the service de-duplicates them: ``str.casefold``
(``'Straße'`` is ``'STRASSE'``), which neither SQLite's ``lower`` (ASCII only) nor
PostgreSQL's (the database's locale) does. So the database lists the spellings present
(``tag_spellings``), Python picks those equal to the bracket's tag (``matching``), and
the ranking filters on them exactly (``carries_any``). The tags column is JSON: each
dialect unnests it with its own table-valued function.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from sqlalchemy import ColumnElement, exists, func, literal, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.selectable import TableValuedAlias

from questline.teams.models import Team


def tag_key(tag: str) -> str:
    """What two spellings of one tag share."""
    return tag.strip().casefold()


def _values(dialect: str) -> TableValuedAlias:
    """The elements of ``teams.tags`` as rows ``(value)``."""
    unnest = func.json_array_elements_text if dialect == "postgresql" else func.json_each
    return unnest(Team.tags).table_valued("value")


async def tag_spellings(session: AsyncSession, *, org_id: uuid.UUID) -> list[str]:
    """Every spelling of a tag that one of the organization's ranked teams carries."""
    values = _values(session.get_bind().dialect.name)
    rows = await session.scalars(
        select(values.c.value)
        .select_from(Team)
        .join(values, true())
        .where(Team.organization_id == org_id, Team.is_ranked == true())
        .distinct()
    )
    return [str(value) for value in rows.all()]


def matching(spellings: Iterable[str], tag: str) -> list[str]:
    """The spellings that are ``tag`` ignoring case."""
    wanted = tag_key(tag)
    return sorted(s for s in spellings if tag_key(s) == wanted)


def carries_any(dialect: str, spellings: list[str]) -> ColumnElement[bool]:
    """The team (of the enclosing query) carries one of these exact spellings."""
    values = _values(dialect)
    return exists(select(literal(1)).select_from(values).where(values.c.value.in_(spellings)))
