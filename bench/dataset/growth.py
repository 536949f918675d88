"""The rows that grow with the number of teams, as ``SELECT``s the database runs.

Teams, members, memberships, completions and score history are computed from a row
generator (``bench.dataset.sqlgen.numbers``) and the ``stride`` table: which task the teams
whose first task is ``start`` did at step ``k``, and their score after it (1,080
rows). The seed inserts each ``SELECT`` with ``INSERT … SELECT``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    Column,
    ColumnElement,
    FromClause,
    Index,
    Integer,
    MetaData,
    Select,
    Table,
    Uuid,
    func,
    literal,
    select,
)
from sqlalchemy.engine import Dialect

from bench.dataset import rules
from bench.dataset.rules import COMPLETIONS_PER_TEAM, EPOCH, ORG_ID, Kind, TaskRef
from bench.dataset.sqlgen import concat, ident_sql, json_sql, numbers, timestamp_sql
from questline.storage.db import UTCDateTime

# -- the stride: which task a team did at step k, and its score after it -------------

_stride_metadata = MetaData()
STRIDE = Table(
    "bench_stride",  # a table of the seed's own, dropped after it
    _stride_metadata,
    Column("start", Integer, nullable=False),
    Column("k", Integer, nullable=False),
    Column("task_id", Uuid, nullable=False),
    Column("discipline_id", Uuid, nullable=False),
    Column("points", Integer, nullable=False),
    Column("score_after", Integer, nullable=False),
    Index("ix_bench_stride_start", "start", "k"),
)

OWNERS = Table(
    "bench_team_owners",  # many organizations (bench.platform): team n's organization
    _stride_metadata,
    Column("n", Integer, primary_key=True),
    Column("organization_id", Uuid, nullable=False),
)


def _owned(
    nums: FromClause, team: ColumnElement[int], owners: Table | None
) -> tuple[ColumnElement[Any], FromClause]:
    """The organization of team number ``team``, and what to select from: the dataset's one
    organization, or (with ``owners``, bench.platform's many) the owners table's row."""
    if owners is None:
        return literal(ORG_ID, Uuid()), nums
    return owners.c.organization_id, nums.join(owners, owners.c.n == team)


def stride_rows(tasks: list[TaskRef]) -> list[dict[str, Any]]:
    out = []
    for start in range(rules.TASK_COUNT):
        score = 0
        for k in range(COMPLETIONS_PER_TEAM):
            task = tasks[rules.task_index(start, k)]
            score += task.points
            out.append(
                {
                    "start": start,
                    "k": k,
                    "task_id": task.id,
                    "discipline_id": task.discipline_id,
                    "points": task.points,
                    "score_after": score,
                }
            )
    return out


# -- the rows that grow with the number of teams (SQL) -------------------------------


def _at(value: dt.datetime) -> ColumnElement[Any]:
    return literal(value, UTCDateTime())


def teams_select(dialect: Dialect, teams: int, owners: Table | None = None) -> Select[Any]:
    nums = numbers(dialect, teams, "team_numbers")
    n = nums.c.n
    org, source = _owned(nums, n, owners)
    last = STRIDE.alias("last_step")
    name = concat("Team ", n)
    reached = timestamp_sql(
        dialect, (COMPLETIONS_PER_TEAM - 1) * 2 * rules.DAY + (n * rules.SPREAD) % rules.DAY
    )
    admin = (n % rules.ADMIN_EVERY) == rules.ADMIN_EVERY - 1
    return (
        select(
            org.label("organization_id"),
            ident_sql(dialect, Kind.TEAM, n).label("id"),
            name.label("name"),
            func.lower(name).label("name_key"),
            literal("Active").label("status"),
            json_sql(dialect, concat('["bench", "group-', n % 10, '"]')).label("tags"),
            last.c.score_after.label("score"),
            literal(COMPLETIONS_PER_TEAM).label("tasks_completed"),
            reached.label("score_reached_at"),
            ((n % 3) == 0).label("is_survey_completed"),
            admin.label("is_admin_team"),
            (~admin).label("is_ranked"),
            _at(EPOCH).label("created_at"),
            _at(EPOCH).label("updated_at"),
            literal(1).label("version"),
        )
        .select_from(source)
        .join(
            last,
            (last.c.start == (n * rules.START_STRIDE) % rules.TASK_COUNT)
            & (last.c.k == COMPLETIONS_PER_TEAM - 1),
        )
    )


def members_select(dialect: Dialect, teams: int, owners: Table | None = None) -> Select[Any]:
    nums = numbers(dialect, teams * rules.MEMBERS_PER_TEAM, "member_numbers")
    m = nums.c.n
    team, seat = m // rules.MEMBERS_PER_TEAM, m % rules.MEMBERS_PER_TEAM
    org, source = _owned(nums, team, owners)
    email = concat("member", team, ".", seat, "@bench.questline.dev")
    return select(
        org.label("organization_id"),
        ident_sql(dialect, Kind.MEMBER, m).label("id"),
        email.label("email"),
        email.label("email_key"),
        concat("Member ", team, ".", seat).label("given_name"),
        _at(EPOCH).label("created_at"),
    ).select_from(source)


def memberships_select(dialect: Dialect, teams: int, owners: Table | None = None) -> Select[Any]:
    nums = numbers(dialect, teams * rules.MEMBERS_PER_TEAM, "member_numbers")
    m = nums.c.n
    org, source = _owned(nums, m // rules.MEMBERS_PER_TEAM, owners)
    return select(
        org.label("organization_id"),
        ident_sql(dialect, Kind.TEAM, m // rules.MEMBERS_PER_TEAM).label("team_id"),
        ident_sql(dialect, Kind.MEMBER, m).label("member_id"),
        _at(EPOCH).label("created_at"),
    ).select_from(source)


def steps_select(
    dialect: Dialect, teams: int, owners: Table | None = None
) -> tuple[Select[Any], Any]:
    """Teams x their 20 steps, the completion time of each step, and the organization."""
    nums = numbers(dialect, teams, "team_numbers")
    n = nums.c.n
    org, source = _owned(nums, n, owners)
    at = timestamp_sql(dialect, STRIDE.c.k * (2 * rules.DAY) + (n * rules.SPREAD) % rules.DAY)
    # In key order: rows reach the primary-key index at its end, not at random places.
    joined = (
        select()
        .select_from(source)
        .join(STRIDE, STRIDE.c.start == (n * rules.START_STRIDE) % rules.TASK_COUNT)
        .order_by(n, STRIDE.c.k)
    )
    return joined, (n, at, org)


def completions_select(dialect: Dialect, teams: int, owners: Table | None = None) -> Select[Any]:
    joined, (n, at, org) = steps_select(dialect, teams, owners)
    return joined.add_columns(
        org.label("organization_id"),
        ident_sql(dialect, Kind.TEAM, n).label("team_id"),
        STRIDE.c.task_id,
        STRIDE.c.discipline_id,
        STRIDE.c.points,
        at.label("completed_at"),
        at.label("created_at"),
    )


def history_select(dialect: Dialect, teams: int, owners: Table | None = None) -> Select[Any]:
    joined, (n, at, org) = steps_select(dialect, teams, owners)
    return joined.add_columns(
        org.label("organization_id"),
        ident_sql(dialect, Kind.SCORE_EVENT, n * COMPLETIONS_PER_TEAM + STRIDE.c.k).label("id"),
        ident_sql(dialect, Kind.TEAM, n).label("team_id"),
        STRIDE.c.task_id,
        STRIDE.c.discipline_id,
        literal("Completed").label("kind"),
        STRIDE.c.points.label("delta"),
        STRIDE.c.score_after,
        at.label("at"),
        at.label("recorded_at"),
    )
