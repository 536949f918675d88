"""``POST /team/bulk`` (experimental): many teams in one all-or-nothing request."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Query, Request, Response, status

from questline.bulk import service
from questline.bulk.csv_input import parse_csv
from questline.bulk.json_input import parse_json
from questline.bulk.schemas import CSV_HEADER, CSV_OPTIONAL_COLUMNS
from questline.mail import service as mail_service
from questline.readmodel import versions
from questline.teams.schemas import Team
from questline.web.access import AdminOf
from questline.web.bodies import gc_paused
from questline.web.edge import Edge, at_the_edge
from questline.web.errors import UnsupportedMediaType
from questline.web.example_ids import MEMBER
from questline.web.openapi import problem_responses
from questline.web.routing import SessionDep, TransactionalRoute
from questline.web.state import app_state, request_state

router = APIRouter(prefix="/team", tags=["teams"], route_class=TransactionalRoute)

_CSV_EXAMPLE = (
    f"{CSV_HEADER}\r\n"
    "Example Voyagers,ada@example.org,Ada,onboarding;2026\r\n"
    "Example Voyagers,grace@example.org,Grace,\r\n"
    '"Example Pathfinders, Inc.",,,onboarding\r\n'
)

_JSON_EXAMPLE: list[dict[str, Any]] = [
    {"name": "Rockets", "tags": ["onboarding"], "members": [MEMBER]},
    {"name": "Comets, Inc.", "tags": []},
]

_DESCRIPTION = f"""**Experimental**: the request and response shapes may still change.

Creates many teams in one request, **all or nothing**: when any item is invalid the
answer is 422 with one `errors` entry per problem, naming the item's index and field
(`[3].name`, `[0].members[2]`) or the CSV line and column (`line 7: email`), and
nothing is created. A name used twice in the request (names ignore case), and an
unknown member id, are such problems. When the request's only problem is names already
used in the organization, the answer is 409 listing them.

Two body formats:

* `application/json`: an array of team creation inputs, each exactly as for
  `POST /team` (`name`, `members`: ids of members of the organization, `tags`).
* `text/csv` (UTF-8, a byte order mark is fine): the header `{CSV_HEADER}`, then one
  row a member. Members are found by e-mail (ignoring case) or created. Tags are
  separated by `;`; a team's tags are the union of its rows' tags. A row with no
  e-mail and no given name just declares its team. An optional column
  `{",".join(CSV_OPTIONAL_COLUMNS)}` (`true`/`false`, empty is false) e-mails the row's
  member an invitation with a one-time sign-in link.

`Invite: true` on a JSON item e-mails every member of that team an invitation. Either
way the invitations are queued in the request's transaction (a failed or dry-run import
sends none) and sent after it; `503` when this service sends no e-mail.

At most `QUESTLINE_MAX_BULK_TEAMS` teams (10,000 by default) a request: 413 past that.
Answers 201 with the created teams in input order (CSV: order of first appearance).
Send an `Idempotency-Key`: a retried upload then replays the first answer instead of
failing on its own names.

`?dryRun=true` checks everything exactly as the import would (the same 422 with every
problem) and **writes nothing**: the teams are created inside the request's transaction,
which is then rolled back. It answers 200 with the teams the import would create (their
`Id`s are not kept), so a client can preview an upload before importing it. A dry run
is never stored under an `Idempotency-Key`.
"""

DryRun = Annotated[
    bool,
    Query(
        alias="dryRun",
        description="Check everything, write nothing: 200 with the teams that would be "
        "created, or the same 422 the import would give.",
    ),
]


def _request_body() -> dict[str, Any]:
    return {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"$ref": "#/components/schemas/TeamCreate"},
                },
                "example": _JSON_EXAMPLE,
            },
            "text/csv": {"schema": {"type": "string"}, "example": _CSV_EXAMPLE},
        },
    }


def _is_csv(content_type: str) -> bool:
    media, _, params = content_type.partition(";")
    if media.strip().lower() != "text/csv":
        return False
    charset = params.strip().lower().removeprefix("charset=").strip('"') if params else ""
    if charset not in ("", "utf-8", "utf8", "us-ascii"):
        raise UnsupportedMediaType(f"Send the CSV as UTF-8 (got charset {charset!r}).")
    return True


@router.post(
    "/bulk",
    status_code=status.HTTP_201_CREATED,
    response_model=list[Team],
    summary="Create teams in bulk (experimental)",
    description=_DESCRIPTION,
    responses={
        200: {"description": "`?dryRun=true`: the teams the import would create (not kept)."},
        **problem_responses(400, 401, 403, 409, 413, 415, 422, 503),
    },
    openapi_extra={"x-experimental": True, "requestBody": _request_body()},
)
@at_the_edge(Edge.BULK)
async def create_teams_in_bulk(
    request: Request, tenant: AdminOf, session: SessionDep, dry_run: DryRun = False
) -> Response:
    body = await request.body()
    max_teams = app_state(request).settings.max_bulk_teams
    parse = parse_csv if _is_csv(request.headers.get("content-type", "")) else parse_json
    with gc_paused():
        # Parsing and validating up to 32 MiB is CPU work: off the event loop, so that
        # the worker keeps answering everyone else meanwhile.
        plan = await anyio.to_thread.run_sync(partial(parse, body, max_teams=max_teams))
        if plan.wants_invites:
            mail_service.require_mail(app_state(request).settings)
        content = await service.create_teams(session, org_id=tenant.org_id, plan=plan)
    if dry_run:
        # Everything was checked and written as the import would; none of it is kept.
        await session.rollback()
        session.info.pop(versions.BUMPS_KEY, None)  # no change to announce
        request_state(request).pending_key = None
    return Response(
        content=content,
        status_code=status.HTTP_200_OK if dry_run else status.HTTP_201_CREATED,
        media_type="application/json",
    )
