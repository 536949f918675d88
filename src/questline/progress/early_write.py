"""Progress writes answered early: ``POST /team/{id}/progress`` and
``DELETE /team/{id}/progress/{taskId}`` group-committed by the fast lane (and, with the
same steps, a learner's answer: ``learners.early_answer``).

The routes declare ``GroupCommittedWrite`` (``answers_early``); the fast lane has by then
matched the route and applied its access rule and query check; only an admin's writes
are answered here (a member's self-check takes the route).
This answer takes the plain, well-formed case and leaves everything else to the route:

* the ids in their canonical form;
* ``POST``: a JSON body of at most ``MAX_BODY`` bytes as its ``Content-Length`` says,
  passing the route's own checks (``check_json_text``, ``ProgressCreate``); no
  ``Idempotency-Key`` (the route stores and replays those);
* no read replicas (the route hands out the write's position for read-your-writes).

The write joins the process's group commit (``questline.progress.group_commit``), which runs
the same ledger as the route. A refusal (404, 409, 422) comes back as the ledger's
``Problem`` and is raised here, so the fast lane answers it with the route's problem
document, in the route's order (access, query, ids, body, then the ledger's), without
running the request again; nothing was written. A failed batch comes back as ``None``:
the route runs the request from the start. The response is built by
``completion_response``, the route's own.
"""

from __future__ import annotations

import uuid
from typing import TypeVar, cast

import orjson
from fastapi import Request, Response, status
from pydantic import BaseModel, ValidationError

from questline.progress import schemas
from questline.progress.group_commit import GroupCommit
from questline.progress.ledger import Completing, Recorded, Withdrawing
from questline.web.bodies import check_json_text, is_json_media
from questline.web.errors import Problem
from questline.web.identity import Caller, Role
from questline.web.paths import canonical_uuid
from questline.web.routing import url_of
from questline.web.state import app_state

M = TypeVar("M", bound=BaseModel)

MAX_BODY = 8192
"""Bytes of a body an early write reads (a completion is about 100; an answer with the
longest ``Answer``, escaped, a few thousand); larger ones take the route, with its own
limits."""


def early_team(request: Request, caller: Caller) -> tuple[uuid.UUID, uuid.UUID] | None:
    """The (organization, team) of a write this answer may take, or None: the route
    answers (the lane is off, read replicas hand out the write's position, the team id is
    not in its canonical form)."""
    state = app_state(request)
    org_id = caller.org_id
    if org_id is None or not state.settings.progress_fast_path_enabled:
        return None
    if state.db.replicas.enabled:
        return None
    team_id = canonical_uuid(str(request.path_params.get("team_id", "")))
    return None if team_id is None else (org_id, team_id)


async def small_json_body(request: Request, model: type[M]) -> M | None:
    """The body as the route checks it, in its order; ``None``: the route answers (no
    JSON media type, an ``Idempotency-Key``, a body over ``MAX_BODY`` or one the route
    refuses, with its own problem document)."""
    headers = request.headers
    if "idempotency-key" in headers or not is_json_media(headers.get("content-type", "")):
        return None
    length = headers.get("content-length")
    if length is None or not length.isdigit() or int(length) > MAX_BODY:
        return None
    body = await request.body()
    if len(body) > MAX_BODY:
        return None
    try:
        check_json_text(body, app_state(request).settings.max_json_depth)
        return model.model_validate(orjson.loads(body))
    except (Problem, orjson.JSONDecodeError, ValidationError):
        return None


def group_commit_of(request: Request) -> GroupCommit:
    """The process's group commit of progress writes (``app.state.progress_writes``)."""
    return cast(GroupCommit, request.app.state.progress_writes)


def completion_response(request: Request, recorded: Recorded) -> Response:
    """201 (or 200: it was done already) with the completion and its ``Location``."""
    completion = recorded.completion
    body = recorded.body or schemas.COMPLETION_JSON.to_json(completion, by_alias=True)
    location = url_of(
        request,
        "get_completion",
        team_id=str(completion.team_id),
        task_id=str(completion.task_id),
    )
    return Response(
        body,
        status_code=status.HTTP_201_CREATED if recorded.created else status.HTTP_200_OK,
        media_type="application/json",
        headers={"Location": location},
    )


class GroupCommittedWrite:
    """The early answer of the two progress writes (see the module's docstring)."""

    async def __call__(self, request: Request, caller: Caller) -> Response | None:
        if caller.role is not Role.ADMIN:
            return None  # a member's self-check: the route's rules (progress.self_check)
        found = early_team(request, caller)
        if found is None:
            return None
        org_id, team_id = found
        writes = group_commit_of(request)
        if request.method == "DELETE":
            task_id = canonical_uuid(str(request.path_params.get("task_id", "")))
            if task_id is None:
                return None
            withdrawn = await writes.write(Withdrawing(org_id, team_id, task_id))
            if isinstance(withdrawn, Problem):
                raise withdrawn
            return None if withdrawn is None else Response(status_code=204)
        data = await small_json_body(request, schemas.ProgressCreate)
        if data is None:
            return None
        outcome = await writes.write(Completing(org_id, team_id, data, caller.subject))
        if isinstance(outcome, Problem):
            raise outcome
        if not isinstance(outcome, Recorded):
            return None
        return completion_response(request, outcome)
