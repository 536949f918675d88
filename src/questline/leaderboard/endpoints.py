"""The leaderboard and the progress graphs (admin and archived teams left out)."""

from __future__ import annotations

import functools
import uuid
from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from starlette.background import BackgroundTask

from questline.leaderboard import caller_view, graphs, schemas, selection, standings, stream
from questline.readmodel import moved
from questline.readmodel.http import CachedRead, dumps, serve
from questline.readmodel.lean import LeanRequest
from questline.readmodel.service import readmodel_of
from questline.seasons.query import SeasonQuery
from questline.teams import service as teams_service
from questline.web import csvexport
from questline.web.access import MemberOf
from questline.web.edge import Edge, at_the_edge
from questline.web.errors import FieldError, Unprocessable
from questline.web.links import service_link
from questline.web.openapi import problem_responses
from questline.web.paths import TeamId, optional_id_query
from questline.web.routing import RouteAnswer, SessionDep, TransactionalRoute, answers_early
from questline.web.schemas import InputDateTime, QueryBoolean
from questline.web.state import app_state

router = APIRouter(tags=["leaderboard"], route_class=TransactionalRoute)

MAX_TOP = 50


DisciplineQuery = Annotated[
    uuid.UUID | None,
    Depends(
        optional_id_query(
            "discipline", "discipline", "Rank by the points earned in this discipline (its id)."
        )
    ),
]


async def _window(
    discipline_id: DisciplineQuery,
    start: Annotated[
        InputDateTime | None,
        Query(alias="from", description="Start of the window (RFC 3339 with offset)."),
    ] = None,
    end: Annotated[
        InputDateTime | None,
        Query(alias="to", description="End of the window (RFC 3339 with offset)."),
    ] = None,
) -> graphs.Window:
    return graphs.Window(start=start, end=end, discipline_id=discipline_id)


WindowDep = Annotated[graphs.Window, Depends(_window)]


def _series(series: graphs.Series) -> schemas.Series:
    return schemas.Series(
        team_id=series.team_id,
        name=series.name,
        points=[schemas.GraphPoint(at=p.at, score=p.score) for p in series.points],
    )


AroundQuery = Annotated[
    uuid.UUID | None,
    Depends(
        optional_id_query(
            "team", "around", "A team's id: the `limit` entries centred on it, with true ranks."
        )
    ),
]


async def _asked(
    window: WindowDep,
    season_id: SeasonQuery,
    tag: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=50,
            description="A bracket: rank only the teams carrying this tag (ignoring case), "
            "1, 2, 3 … among themselves.",
        ),
    ] = None,
    by: Annotated[
        caller_view.RankBy,
        Query(
            description="`perMember`: by points divided by the team's member count (at "
            "least 1); entries show both figures."
        ),
    ] = caller_view.RankBy.SCORE,
    frozen: Annotated[
        QueryBoolean,
        Query(
            description="With `season`: the members' view (frozen during the freeze); "
            "admins see the live standings otherwise."
        ),
    ] = False,
) -> caller_view.Asked:
    return caller_view.Asked(
        selection=selection.Selection(
            start=window.start,
            end=window.end,
            discipline_id=window.discipline_id,
            tag=tag,
            per_member=by is caller_view.RankBy.PER_MEMBER,
        ),
        season_id=season_id,
        frozen=frozen,
    )


AskedDep = Annotated[caller_view.Asked, Depends(_asked)]


def entries_responses() -> dict[int | str, Any]:
    """The 200 of ``GET /leaderboard``: JSON entries (``PerMemberEntry`` with
    ``by=perMember``), or CSV."""
    found = csvexport.openapi(schemas.LeaderboardEntry)
    example = schemas.LeaderboardEntry.model_config.get("json_schema_extra", {})
    assert isinstance(example, dict)
    found[200]["content"]["application/json"] = {"example": example["examples"]}
    return found


def _page(
    request: Request, found: list[standings.Entry], limit: int, offset: int
) -> tuple[list[standings.Entry], dict[str, str]]:
    """The page (``found`` holds one entry more when there is a next page) and the
    ``Link`` to the next."""
    if len(found) <= limit:
        return found, {}
    query = {**request.query_params, "limit": str(limit), "offset": str(offset + limit)}
    url = service_link(request, request.url.path, query)
    return found[:limit], {"Link": f'<{url}>; rel="next"'}


LEAN_MAX_OFFSET = 10_000
"""A lean miss runs on the event loop (SQLite: on it): deeper pages take the route."""


async def lean_leaderboard(request: LeanRequest) -> tuple[bytes, dict[str, str]] | None:
    """``GET /leaderboard`` (the overall ranking: ``limit`` and ``offset`` only) on a
    read-model miss, without a session (``readmodel.lean``): the route's statement, page
    and body."""
    limit, offset = request.query["limit"], request.query["offset"]
    if offset > LEAN_MAX_OFFSET:
        return None
    statement = request.reader.statement("leaderboard", standings.overall_statement)
    params = {"org": request.organization_id, "limit": limit + 1, "offset": offset}
    rows = await request.reader.fetch(statement, params)
    entries = standings.entries_from_rows(rows, offset=offset)
    found, headers = _page(request.request, entries, limit, offset)
    return dumps([caller_view.entry_json(e) for e in found]), headers


@router.get(
    "/leaderboard",
    response_model=list[schemas.LeaderboardEntry | schemas.PerMemberEntry],
    responses={**entries_responses(), **problem_responses(401, 403, 404, 422)},
)
@answers_early(
    CachedRead(miss=lean_leaderboard, query=("limit", "offset"), depends=moved.always(moved.SCORES))
)
async def get_leaderboard(
    request: Request,
    response: Response,
    tenant: MemberOf,
    session: SessionDep,
    asked: AskedDep,
    around: AroundQuery,
    limit: Annotated[int, Query(ge=1, le=standings.MAX_LIMIT)] = standings.DEFAULT_LIMIT,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> Response:
    """Teams that are neither admin nor archived, by `Score` (desc), then the time the
    team reached it (earlier first), then `Name`. With `discipline`, by the points
    earned in that discipline; teams with none in it come last, by name. The next page
    is announced in a `Link` header. Send the `ETag` back as `If-None-Match`: 304 while
    nothing changed.

    With `from` and/or `to`: by the points of the completions whose `CompletedAt` lies
    in that window (inclusive; withdrawn completions never count), ties broken by when
    the team reached its window score, then by name. With `around={teamId}`: the
    `limit` entries centred on that team (fewer at the edges), with their true ranks
    (404 for a team of another organization, 422 for an admin or archived team, or one
    outside the bracket; no `offset`).

    With `season={id}`: by the points of the completions with `CompletedAt` in the
    season's `[StartsAt, EndsAt)` (and the season's discipline unless `discipline` names
    another). During its freeze, members get the standings as they were at `FreezesAt`
    — counting only what was recorded before it — with the header
    `Questline-Frozen-At`; admins get the live standings, or the members' view with
    `frozen=true`. A `from`/`to` window that meets a season in its freeze is held the
    same way for members (as at the earliest such `FreezesAt`, with the header): a
    window cannot show what the freeze hides. With `tag`: a bracket, ranks 1, 2, 3 …
    among the teams carrying the tag. With `by=perMember`: by points per member
    (entries add `MemberCount` and `PointsPerMember`). All of these combine.

    With `Accept: text/csv`: the same entries as CSV (an attachment)."""
    readmodel = readmodel_of(request)

    async def page(
        version: int,
    ) -> tuple[list[standings.Entry], dict[str, str], caller_view.Chosen]:
        chosen = await caller_view.choose(
            session, org_id=tenant.org_id, role=tenant.caller.role, asked=asked
        )
        memo = caller_view.memo_of(readmodel, tenant.org_id, version)
        if around is not None:
            if offset:
                raise Unprocessable(
                    "'offset' does not combine with 'around'.",
                    errors=[FieldError(field="offset", message="Leave it out with 'around'.")],
                )
            found = await selection.around(
                session,
                org_id=tenant.org_id,
                team_id=around,
                selection=chosen.selection,
                limit=limit,
                memo=memo,
            )
            return found, {}, chosen
        found = await selection.ranking(
            session,
            org_id=tenant.org_id,
            selection=chosen.selection,
            limit=limit + 1,
            offset=offset,
            memo=memo,
        )
        found, headers = _page(request, found, limit, offset)
        return found, headers, chosen

    if csvexport.wants_csv(request):
        entries, headers, chosen = await page(-1)
        response.headers.update({**headers, **chosen.headers})
        if asked.selection.per_member:
            rows = [
                schemas.PerMemberEntry.model_validate(caller_view.entry_json(e)) for e in entries
            ]
            return csvexport.export(schemas.PerMemberEntry, rows, "leaderboard.csv", response)
        items = [
            schemas.LeaderboardEntry.model_validate(caller_view.entry_json(e)) for e in entries
        ]
        return csvexport.export(schemas.LeaderboardEntry, items, "leaderboard.csv", response)

    async def build(version: int) -> tuple[bytes, dict[str, str]]:
        entries, headers, chosen = await page(version)
        variant = tenant.caller.role.value
        extra = caller_view.season_headers(tenant.org_id, version, chosen, variant)
        return dumps([caller_view.entry_json(e) for e in entries]), {**headers, **extra}

    return await serve(request, build=build, own_etag=_own_etag(asked), depends=_depends(asked))


entry_json = caller_view.entry_json
"""A ``schemas.LeaderboardEntry`` as its JSON object (tests check the two agree)."""


def _own_etag(asked: caller_view.Asked) -> bool:
    """A season's body, or a window's (which a season's freeze may hold), names its
    view in its own ``ETag``: the version's would answer 304 across a freeze boundary,
    which no write marks."""
    selection = asked.selection
    return asked.season_id is not None or selection.start is not None or selection.end is not None


def _depends(asked: caller_view.Asked) -> frozenset[str] | None:
    """A ranking's body is built from the scores; one with its own view's ``ETag`` is
    true at its own time too, and never carried."""
    return None if _own_etag(asked) else moved.SCORED


def series_json(series: graphs.Series) -> dict[str, object]:
    """A ``schemas.Series`` as its JSON object."""
    return {
        "TeamId": series.team_id,
        "Name": series.name,
        "Points": [{"At": p.at, "Score": p.score} for p in series.points],
    }


@router.get(
    "/leaderboard/stream",
    status_code=200,
    response_class=stream.EventStream,
    responses={
        200: {
            "description": "Server-Sent Events: `event: leaderboard`, `id:` the version, "
            "`data:` the JSON of `GET /leaderboard`; `: heartbeat` comments.",
            "content": {
                stream.MEDIA_TYPE: {
                    "schema": {
                        "type": "object",
                        "description": "One message of the stream.",
                        "properties": {
                            "event": {"type": "string", "enum": ["leaderboard"]},
                            "id": {"type": "string", "description": "The version."},
                            "data": {
                                "type": "string",
                                "description": "The JSON array of `GET /leaderboard`.",
                            },
                        },
                    },
                    "example": 'event: leaderboard\nid: 42\ndata: [{"Rank":1,"TeamId":'
                    '"0190…","Name":"Rockets","Score":120,"TasksCompleted":9,'
                    '"ReachedAt":"2026-11-22T10:00:00Z"}]\n\n: heartbeat\n\n',
                }
            },
        },
        **problem_responses(401, 403, 404, 422, 503),
    },
)
@answers_early(RouteAnswer())  # an open stream keeps no routing frames alive
@at_the_edge(Edge.NOT_COUNTED | Edge.NO_TIMEOUT)
async def stream_leaderboard(
    request: Request,
    tenant: MemberOf,
    session: SessionDep,
    asked: AskedDep,
    limit: Annotated[int, Query(ge=1, le=standings.MAX_LIMIT)] = standings.DEFAULT_LIMIT,
    last_event_id: Annotated[
        str | None,
        Header(
            alias="Last-Event-ID",
            max_length=32,
            description="The `id` of the last event received: resume without a repeat.",
        ),
    ] = None,
) -> Response:
    """The live leaderboard (any role): first an event `leaderboard` carrying exactly
    the JSON of `GET /leaderboard` for the same parameters (`discipline`, `season`,
    `tag`, `by`, `frozen`, `limit`), then one after each change that alters it
    (coalesced: at most one per 250 ms). A frozen season's stream stays still for
    members until the reveal or its end (then an event carries the live standings).
    `id:` is the organization's version; send it back as `Last-Event-ID` when
    reconnecting to get the current leaderboard only if it changed meanwhile. A
    `: heartbeat` comment every 15 s keeps idle connections open. Streams are capped
    per organization and per server process: 503 with `Retry-After` beyond."""
    asked.selection.check()
    # Refused now (404, 422) rather than inside the stream: the season, the discipline.
    await caller_view.choose(session, org_id=tenant.org_id, role=tenant.caller.role, asked=asked)
    state = app_state(request)
    registry = stream.registry_of(request.app)
    registry.acquire(tenant.org_id, state.settings)
    content = stream.events(
        db=state.db,
        readmodel=readmodel_of(request),
        settings=state.settings,
        query=stream.Query(org_id=tenant.org_id, asked=asked, role=tenant.caller.role, limit=limit),
        last_event_id=stream.parse_last_event_id(last_event_id),
    )
    return stream.EventStream(content, BackgroundTask(registry.release, tenant.org_id))


async def lean_graph(request: LeanRequest) -> tuple[bytes, dict[str, str]] | None:
    """``GET /leaderboard/graph`` (the overall ranking's first ``top`` teams over their
    whole history: ``top`` only) on a read-model miss, without a session
    (``readmodel.lean``): the leaderboard's statement with the teams' histories beside
    (PostgreSQL: one statement), or then (SQLite, which has no arrays); and the route's
    series and body."""
    top, org_id = request.query["top"], request.organization_id
    reader = request.reader
    ranking = {"org": org_id, "limit": top, "offset": 0}
    if not reader.db.is_sqlite:
        ranked = reader.statement("graph-ranked-histories", graphs.ranked_histories_statement)
        rows = await reader.fetch(ranked, ranking)
        entries = standings.entries_from_rows(rows, offset=0)
        found = graphs.histories_from_arrays(rows)
    else:
        rows = await reader.fetch(
            reader.statement("leaderboard", standings.overall_statement), ranking
        )
        entries = standings.entries_from_rows(rows, offset=0)
        if not entries:
            return dumps([]), {}
        histories = reader.statement(
            f"graph-histories-{len(entries)}",
            functools.partial(graphs.plain_histories_statement, len(entries)),
        )
        teams = {f"team{i}": entry.team_id for i, entry in enumerate(entries)}
        found = graphs.histories_from_rows(await reader.fetch(histories, {"org": org_id, **teams}))
    series = graphs.series_from(entries, found, graphs.Window())
    return dumps([series_json(s) for s in series]), {}


@router.get(
    "/leaderboard/graph",
    response_model=list[schemas.Series],
    responses=problem_responses(401, 403, 404, 422),
)
@answers_early(CachedRead(miss=lean_graph, query=("top",), depends=moved.always(moved.SCORES)))
async def get_leaderboard_graph(
    request: Request,
    tenant: MemberOf,
    session: SessionDep,
    window: WindowDep,
    asked: AskedDep,
    top: Annotated[int, Query(ge=1, le=MAX_TOP, description="How many teams.")] = 10,
) -> Response:
    """The top teams' cumulative score over time, in rank order: a step function that
    starts at 0 (or at the value just before `from`), one point per change.

    The teams are the first `top` of `GET /leaderboard` with the same `discipline`,
    `season`, `tag` and `by` (`from` and `to` only bound the drawing). With `season`:
    the season's score, from 0 at `StartsAt`, changes in `[StartsAt, EndsAt)`; frozen
    for members as the leaderboard is (only what was recorded before `FreezesAt`, with
    `Questline-Frozen-At`). Without `season`, a `from`/`to` that meets a season in its
    freeze draws, for members, only what was recorded before that `FreezesAt`."""
    window.check()
    readmodel = readmodel_of(request)
    ranked_by = replace(asked, selection=replace(asked.selection, start=None, end=None))

    async def build(version: int) -> tuple[bytes, dict[str, str]]:
        variant = tenant.caller.role.value
        # The drawn window, without a season, is frozen as the windowed leaderboard is.
        held = (
            None
            if asked.season_id is not None
            else await caller_view.window_freeze(
                session,
                org_id=tenant.org_id,
                role=tenant.caller.role,
                frozen=asked.frozen,
                start=window.start,
                end=window.end,
            )
        )
        if held is not None:
            window_chosen = caller_view.Chosen(asked.selection, window=held)
            held_headers = caller_view.season_headers(
                tenant.org_id, version, window_chosen, variant
            )
        else:
            held_headers = {}
        drawn = window if held is None else replace(window, as_of=held.as_of)
        if asked.season_id is None and ranked_by.selection.plain:
            found = await graphs.top_series(session, org_id=tenant.org_id, top=top, window=drawn)
            return dumps([series_json(s) for s in found]), held_headers
        chosen = await caller_view.choose(
            session, org_id=tenant.org_id, role=tenant.caller.role, asked=ranked_by
        )
        entries = await selection.ranking(
            session,
            org_id=tenant.org_id,
            selection=chosen.selection,
            limit=top,
            memo=caller_view.memo_of(readmodel, tenant.org_id, version),
        )
        if chosen.view is not None:
            start = (
                chosen.view.start if window.start is None else max(window.start, chosen.view.start)
            )
            drawn = replace(
                window,
                start=start,
                before=chosen.view.end,
                as_of=chosen.view.as_of,
                discipline_id=chosen.selection.discipline_id,
                from_zero=True,
            )
        found = await graphs.series_of(session, org_id=tenant.org_id, entries=entries, window=drawn)
        extra = caller_view.season_headers(tenant.org_id, version, chosen, variant)
        return dumps([series_json(s) for s in found]), extra or held_headers

    return await serve(request, build=build, own_etag=_own_etag(asked), depends=_depends(asked))


@router.get(
    "/team/{team_id}/graph",
    response_model=schemas.Series,
    responses=problem_responses(401, 403, 404, 422),
    tags=["progress"],
)
async def get_team_graph(
    team_id: TeamId, tenant: MemberOf, session: SessionDep, window: WindowDep
) -> schemas.Series:
    """One team's cumulative score over time (admin and archived teams too)."""
    team = await teams_service.get_team(session, org_id=tenant.org_id, team_id=team_id)
    return _series(await graphs.team_series(session, team=team, window=window))
