"""The discipline endpoints: list, read, create (basic or full document), replace, delete."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Request, Response, status
from fastapi.openapi.models import Example
from pydantic import BaseModel

from questline.disciplines import schemas, service
from questline.disciplines.examples import BASIC_DOCUMENT, FULL_DOCUMENT
from questline.readmodel import moved
from questline.readmodel.http import CachedRead, serve, serve_list
from questline.readmodel.service import readmodel_of
from questline.web.access import CallerDep
from questline.web.openapi import problem_responses
from questline.web.pagination import PageDep, announce_next_page, split_page
from questline.web.paths import DisciplineId
from questline.web.preconditions import IF_MATCH_SCHEMA, if_match_header
from questline.web.routing import SessionDep, TransactionalRoute, answers_early, url_of
from questline.web.schemas import QueryBoolean
from questline.web.state import app_state

router = APIRouter(prefix="/discipline", tags=["disciplines"], route_class=TransactionalRoute)

EXAMPLES: dict[str, Example] = {
    "basic": Example(summary="An empty discipline (basic fields)", value=BASIC_DOCUMENT),
    "full": Example(summary="A full discipline document", value=FULL_DOCUMENT),
}

Force = Annotated[
    QueryBoolean,
    Query(
        description="Also remove tasks that teams completed; their progress is withdrawn "
        "(negative steps in the score history). Without it that is 409."
    ),
]
IfMatch = Annotated[str | None, if_match_header("discipline"), IF_MATCH_SCHEMA]


def _json(model: BaseModel, *, status_code: int = 200, headers: dict[str, str]) -> Response:
    """Serialize once, straight from the model (a large tree is not validated twice)."""
    return Response(
        content=model.model_dump_json(by_alias=True),
        status_code=status_code,
        headers=headers,
        media_type="application/json",
    )


def _location(request: Request, discipline_id: Any) -> str:
    return url_of(request, "get_discipline", discipline_id=str(discipline_id))


@router.get(
    "", response_model=list[schemas.DisciplineSummary], responses=problem_responses(401, 422)
)
@answers_early(CachedRead(depends=moved.always()))
async def list_disciplines(
    request: Request, response: Response, caller: CallerDep, session: SessionDep, page: PageDep
) -> list[schemas.DisciplineSummary]:
    """The global disciplines and your organization's, in creation order, with their
    `LevelCount`, `QuestCount`, `TaskCount` and `PointsTotal` (opt-in paging: `limit`,
    `after`). Operators see the global ones. Send the `ETag` back as `If-None-Match`:
    304 while nothing changed."""
    if page.limit is None and page.after is None and caller.org_id is not None:
        # The whole list: cached bytes while short, streamed in chunks when long.
        return await serve_list(  # type: ignore[return-value]
            request,
            statement=service.whole_list_query(caller.org_id),
            encode=service.encode_summary_rows,
            depends=moved.NOTHING,
        )
    rows = await service.list_disciplines(session, org_id=caller.org_id, page=page)
    rows, more = split_page(rows, page)
    announce_next_page(
        request, response, page, service.cursor_of(rows[-1].discipline) if more else None
    )
    return [service.to_summary(row) for row in rows]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=schemas.Discipline,
    responses=problem_responses(400, 401, 403, 413, 415, 422),
)
async def create_discipline(
    request: Request,
    caller: CallerDep,
    session: SessionDep,
    data: Annotated[schemas.DisciplineCreate, Body(openapi_examples=EXAMPLES)],
) -> Response:
    """Create a discipline. `Title` and `Description` alone (with `Color`, `OrganizationId`)
    create an empty one; with `Levels` and/or `Resources` the whole tree is created from
    this one document, in one transaction.

    Limits: 100 levels, 100 quests a level, 100 tasks a quest, 50 resources a node,
    5 MiB a document. Send an `Idempotency-Key` to make a retry safe.
    """
    with service.paused_gc_if_large(data):
        created = await service.create_discipline(
            session, caller=caller, data=data, settings=app_state(request).settings
        )
    headers = {
        "Location": _location(request, created.discipline.id),
        "ETag": service.etag_of(created.discipline),
    }
    return Response(
        content=created.body,
        status_code=status.HTTP_201_CREATED,
        headers=headers,
        media_type="application/json",
    )


@router.get(
    "/{discipline_id}",
    response_model=schemas.Discipline,
    responses={
        304: {"description": "Unchanged since the `ETag` sent in `If-None-Match`."},
        **problem_responses(401, 404),
    },
)
@answers_early(
    CachedRead(
        revalidate=service.lean_current_etag,
        miss=service.lean_document,
        resource="discipline_id",
        depends=moved.always(),
    )
)
async def get_discipline(
    discipline_id: DisciplineId,
    request: Request,
    caller: CallerDep,
    session: SessionDep,
    if_none_match: Annotated[
        str | None,
        Header(max_length=200, description="An `ETag` you hold; 304 when it is still current."),
    ] = None,
) -> Response:
    """The whole discipline: levels, quests, tasks and resources, each with its `Id` and
    `Order`. Keep the `ETag` to send as `If-Match` on `PUT`.

    Members read each task's `Check` as its `Kind` and `MaxAttempts` only and each hint's
    `Cost` only: never an answer or a hint's text (`POST /team/{id}/hints` unlocks it)."""
    if caller.org_id is not None:

        async def build(_version: int) -> tuple[bytes, dict[str, str]]:
            discipline = await service.get_discipline(
                session, caller=caller, discipline_id=discipline_id
            )
            body = await service.document_body(
                session, readmodel_of(request), discipline, service.audience_of(caller)
            )
            return body, {"ETag": service.etag_of(discipline)}

        async def current_etag() -> str | None:
            return await service.current_etag(session, caller=caller, discipline_id=discipline_id)

        return await serve(
            request,
            build=build,
            own_etag=True,
            current_etag=current_etag,
            depends=moved.NOTHING,
        )
    discipline = await service.get_discipline(session, caller=caller, discipline_id=discipline_id)
    if if_none_match is not None and service.etag_matches(discipline, if_none_match):
        return Response(
            status_code=status.HTTP_304_NOT_MODIFIED,
            headers={"ETag": service.etag_of(discipline)},
        )
    document = await service.read_tree(session, discipline, service.audience_of(caller))
    return _json(document, headers={"ETag": service.etag_of(discipline)})


@router.put(
    "/{discipline_id}",
    response_model=schemas.Discipline,
    responses=problem_responses(400, 401, 403, 404, 409, 412, 413, 415, 422),
)
async def replace_discipline(
    discipline_id: DisciplineId,
    request: Request,
    caller: CallerDep,
    session: SessionDep,
    data: Annotated[schemas.DisciplineReplace, Body(openapi_examples={"full": EXAMPLES["full"]})],
    if_match: IfMatch = None,
    force: Force = False,
) -> Response:
    """Replace the document. Nodes sent with their `Id` keep it (and the teams' progress
    on them); nodes without `Id` are new; nodes left out are deleted. What `GET` returned
    can be edited and sent back as is: a stored `Exact` or `IgnoreCase` answer is sent
    back by its `Digest`, and a task sent with its `Id` and without `Answers` keeps its
    stored ones.

    Removing tasks that teams completed is 409 unless `?force=true`.
    """
    discipline = await service.get_for_change(session, caller=caller, discipline_id=discipline_id)
    with service.paused_gc_if_large(data):
        written = await service.replace_discipline(
            session,
            discipline=discipline,
            data=data,
            if_match=if_match,
            force=force,
            settings=app_state(request).settings,
            tasks_removed=service.tasks_removed_of(request),
        )
    return Response(
        content=written.body,
        headers={"ETag": service.etag_of(discipline)},
        media_type="application/json",
    )


@router.delete(
    "/{discipline_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=problem_responses(401, 403, 404, 409, 412),
)
async def delete_discipline(
    discipline_id: DisciplineId,
    request: Request,
    caller: CallerDep,
    session: SessionDep,
    if_match: IfMatch = None,
    force: Force = False,
) -> Response:
    """Delete a discipline with its whole tree. 409 when teams have progress in it,
    unless `?force=true` (then that progress is withdrawn)."""
    discipline = await service.get_for_change(session, caller=caller, discipline_id=discipline_id)
    await service.delete_discipline(
        session,
        discipline=discipline,
        if_match=if_match,
        force=force,
        tasks_removed=service.tasks_removed_of(request),
    )
    return Response(status_code=status.HTTP_204_NO_CONTENT)
