"""The overview's ``PendingSubmission`` of each task: the team's submission waiting for
review, as one JSON column of ``progress.overview_statement.overview_query`` (an array of
``[task_id, submission_id]``). The one place that answers it, from the review domain's
table (``submissions``: at most one pending a team and task), named here as a table
clause: the submissions package builds on progress, so progress imports none of it (no
cycle between packages)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Text, column, func, literal_column, select, table
from sqlalchemy import cast as sql_cast

_submissions = table(
    "submissions",
    column("organization_id"),
    column("team_id"),
    column("task_id"),
    column("id"),
    column("state"),
)
PENDING = "Pending"
"""``submissions.models.SubmissionState.PENDING``, as stored."""


def pending_submissions(dialect: str, org: Any, team: Any) -> Any:
    """A scalar SQL expression of JSON text, ``[[task_id, submission_id], …]``, for the
    team ``team`` (a bind parameter) of organization ``org``; null reads as none."""
    s = _submissions.c
    rows = (
        select(s.task_id, s.id)
        .where(
            s.organization_id == org,
            s.team_id == team,
            # A literal, not a bound parameter: the lean reader binds org and team only.
            s.state == literal_column(f"'{PENDING}'"),
        )
        .subquery("pending")
    )
    if dialect == "postgresql":
        aggregate = func.json_agg(func.json_build_array(rows.c.task_id, rows.c.id))
    else:
        aggregate = func.json_group_array(func.json_array(rows.c.task_id, rows.c.id))
    return select(sql_cast(aggregate, Text)).select_from(rows).scalar_subquery()
