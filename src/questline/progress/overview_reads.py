"""The reads of a team's overview: in the route's session, and on a read-model miss
without one (``readmodel.lean``); each one statement (``overview_query``) and the
body built from its row (``overview_from_row``)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from questline.progress.discipline_tree import DisciplineNode
from questline.progress.overview_body import overview_from_row, place_of
from questline.progress.overview_statement import overview_query
from questline.progress.rank_memo import Ranks
from questline.readmodel.http import dumps
from questline.readmodel.lean import LeanRequest
from questline.web.errors import not_found


async def overview_json(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    team_id: uuid.UUID,
    tree: list[DisciplineNode],
    ranked: Ranks,
) -> tuple[dict[str, Any], dict[str, str]]:
    """A ``schemas.Overview`` as its JSON object, in one statement (``overview_query``),
    and the builder's header of where the team stands (``overview_body.place_of``)."""
    query = overview_query(session.get_bind().dialect.name, ranked.counted_in_sql)
    row = (await session.execute(query, {"org": org_id, "team": team_id})).one_or_none()
    if row is None:
        raise not_found("team")
    found = overview_from_row(row, tree, ranked)
    if found is None:
        raise RuntimeError("a ranked team missing from its organization's ranks")
    return found, place_of(row)


async def lean_overview(request: LeanRequest) -> tuple[bytes, dict[str, str]] | None:
    """``GET /team/{id}/overview`` on a read-model miss, without a session
    (``readmodel.lean``): one statement, with the organization's discipline tree and
    ranks as the route memoized them at this version. None (the route answers): no
    memo at this version yet, or no such team in the caller's organization (its 404)."""
    if request.role != "member":
        return None  # admins and the team's own members see contributions: the route's
    org_id, version = request.organization_id, request.version
    tree = request.memos.memo_at(org_id, "tree", version)
    ranked = request.memos.memo_at(org_id, "ranks", version)
    if tree is None or ranked is None:
        return None
    reader = request.reader
    dialect = reader.db.engine.dialect.name
    in_sql = ranked.counted_in_sql
    statement = reader.statement(
        f"overview-{in_sql}", lambda: overview_query(dialect, rank_in_sql=in_sql)
    )
    rows = await reader.fetch(statement, {"org": org_id, "team": request.resource_id})
    if not rows:
        return None
    found = overview_from_row(rows[0], tree, ranked)
    return None if found is None else (dumps(found), place_of(rows[0]))
