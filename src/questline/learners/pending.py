"""The overview's ``PendingSubmission`` of each task: the team's submission waiting for
review, as one JSON column of ``progress.overview.overview_query`` (an array of
``[task_id, submission_id]``). The one place that answers it: the review domain makes it
read its submissions; until then no task has one."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Text, cast, null


def pending_submissions(dialect: str, org: Any, team: Any) -> Any:
    """A scalar SQL expression of JSON text, ``[[task_id, submission_id], …]``, for the
    team ``team`` (a bind parameter) of organization ``org``; null reads as none."""
    del dialect, org, team  # read by the review domain's version of this function
    return cast(null(), Text)  # no bound parameter: the lean reader binds org and team only
