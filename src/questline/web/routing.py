"""The request boundary: one database transaction per request.

``TransactionalRoute`` opens the session before FastAPI solves the dependencies,
commits after the endpoint succeeded (so a failing commit still becomes an error
response, never a success already sent), and rolls back on any error. It also stores
and replays ``Idempotency-Key`` responses inside that same transaction.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from pydantic import BaseModel
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from questline.auth.dependencies import get_caller
from questline.web import idempotency, readafter
from questline.web.errors import FieldError, Problem, Unprocessable
from questline.web.state import AppState, RequestState, app_state, request_state

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


async def get_session(request: Request) -> AsyncSession:
    return request_state(request).session


SessionDep = Annotated[AsyncSession, Depends(get_session)]


async def idempotency_guard(request: Request) -> None:
    """Replays or refuses a reused ``Idempotency-Key`` (after authentication)."""
    state = request_state(request)
    caller = state.caller
    if caller is None:
        return
    state.pending_key = await idempotency.check_key(
        state.session,
        request=request,
        organization_id=caller.org_id or idempotency.PLATFORM_SCOPE,
        subject=f"{caller.subject}:{caller.role.value}",
        ttl=dt.timedelta(hours=app_state(request).settings.idempotency_ttl_hours),
    )


Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class TransactionalRoute(APIRoute):
    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        methods = {m.upper() for m in kwargs.get("methods") or []}
        if "POST" in methods:
            extra = [Depends(get_caller), Depends(idempotency_guard)]
            kwargs["dependencies"] = [*(kwargs.get("dependencies") or []), *extra]
        super().__init__(path, endpoint, **kwargs)
        self.query_names = declared_query_names(self.dependant)

    def get_route_handler(self) -> Handler:
        original = super().get_route_handler()

        async def handler(request: Request) -> Response:
            refuse_unknown_query_parameters(request, self.query_names)
            state = app_state(request)
            write = request.method in WRITE_METHODS
            async with state.db.new_session(write=write) as session:
                request.state.questline = RequestState(session=session)
                if not write:
                    readafter.route_reads(state, session, request)
                try:
                    response = await readafter.call_endpoint(original, request, session)
                    pending = request_state(request).pending_key
                    if pending is not None and 200 <= response.status_code < 300:
                        await idempotency.store_response(session, pending, response)
                    await session.commit()
                    if write:
                        await readafter.after_write(state, request, response)
                except idempotency.ReplayStoredResponse as replay:
                    await session.rollback()
                    # The first response may come from another process: hand out a
                    # position past it, so that the retrying client reads its write.
                    await readafter.after_write(state, request, replay.response)
                    return replay.response
                except (IntegrityError, Problem):
                    # A concurrent request with the same key may have won meanwhile: its
                    # team now takes the name this one checked (409/422), or its record
                    # conflicts with ours. Replay what it stored rather than fail.
                    await session.rollback()
                    stored = await _stored_after_race(state, request)
                    if stored is None:
                        raise
                    return stored
                except BaseException:
                    await session.rollback()
                    raise
            return response

        return handler


def declared_query_names(dependant: Dependant) -> frozenset[str]:
    """The query parameter names a route (and its dependencies) reads."""
    names: set[str] = set()
    stack = [dependant]
    while stack:
        current = stack.pop()
        stack.extend(current.dependencies)
        for query_field in current.query_params:
            annotation = query_field.field_info.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                names.update(f.alias or n for n, f in annotation.model_fields.items())
            else:
                names.add(query_field.alias)
    return frozenset(names)


def refuse_unknown_query_parameters(request: Request, known: frozenset[str]) -> None:
    """422 naming unknown query parameters: ``?limt=5`` must not quietly list everything
    (DESIGN §2: unknown input is rejected, not dropped)."""
    unknown = [name for name in dict.fromkeys(request.query_params.keys()) if name not in known]
    if not unknown:
        return
    message = "Unknown query parameter; it is not part of this request."
    errors = [FieldError(field=name or "(empty name)", message=message) for name in unknown]
    names = ", ".join(e.field for e in errors)
    raise Unprocessable(f"Unknown query parameters: {names}.", errors=errors)


async def _stored_after_race(state: AppState, request: Request) -> Response | None:
    """A concurrent request with the same key and request won: replay what it stored."""
    pending = request_state(request).pending_key
    if pending is None:
        return None
    async with state.db.session(write=False) as session:
        record = await idempotency.load_record(session, pending)
    if record is None or record.request_hash != pending.request_hash:
        return None
    return idempotency.replay(record)
