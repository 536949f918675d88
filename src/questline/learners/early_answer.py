"""``POST /team/{id}/attempts`` answered early: the answer joins the progress group
commit (``progress.group_commit``) as one more kind of ledger write
(``progress.ledger.Answering``), as an admin's progress write does.

The steps are the route's: the fast lane has matched the route and applied its access
rule and query check; the ids and the body are read as ``progress.early_write`` reads
a progress write's (anything unusual, the route answers); the ledger decides the answer
with the rules the route's batch of one runs (``learners.service.submit_attempt``), and
a refusal comes back as the route's ``Problem``, raised here for the fast lane to answer
with the route's problem document. A failed batch comes back as ``None``: the route runs
the request.
"""

from __future__ import annotations

from fastapi import Request, Response

from questline.learners import schemas, service
from questline.progress.early_write import early_team, group_commit_of, small_json_body
from questline.progress.ledger import Answered
from questline.web.access import require_member
from questline.web.errors import Problem
from questline.web.identity import Caller
from questline.web.state import app_state


class GroupCommittedAnswer:
    """The early answer of ``POST /team/{id}/attempts`` (see the module's docstring)."""

    async def __call__(self, request: Request, caller: Caller) -> Response | None:
        found = early_team(request, caller)
        if found is None:
            return None
        _, team_id = found
        data = await small_json_body(request, schemas.AttemptCreate)
        if data is None:
            return None
        write = service.answering(
            tenant=require_member(caller),
            team_id=team_id,
            data=data,
            settings=app_state(request).settings,
        )
        outcome = await group_commit_of(request).write(write)
        if isinstance(outcome, Problem):
            raise outcome
        if not isinstance(outcome, Answered):
            return None
        return service.attempt_response(service.attempt_outcome(outcome))
