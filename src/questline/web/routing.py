"""The request boundary: one database transaction per request.

``TransactionalRoute`` opens the session before FastAPI solves the dependencies,
commits after the endpoint succeeded (so a failing commit still becomes an error
response, never a success already sent), and rolls back on any error. It also stores
and replays ``Idempotency-Key`` responses inside that same transaction.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import inspect
import logging
import random
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AsyncExitStack
from typing import Annotated, Any, Protocol, TypeVar

from fastapi import Depends, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from pydantic import BaseModel
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import QueryParams
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from questline.storage import tenancy
from questline.web import idempotency, readafter
from questline.web.access import WRITE_METHODS, access_of, authorize, get_caller
from questline.web.bodies import read_checked_body
from questline.web.errors import (
    FieldError,
    Problem,
    ServiceUnavailable,
    Unprocessable,
)
from questline.web.identity import ACTING_CALLER, Caller
from questline.web.internals import declared_routes, route_path
from questline.web.links import service_link
from questline.web.state import AppState, RequestState, app_state, request_state

logger = logging.getLogger("questline.web.routing")


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


class EarlyAnswer(Protocol):
    """A route's answer before routing (see ``questline.web.fastlane``): the response,
    or ``None`` to let the route answer. It is called only after the route's own access
    rule and query parameter check passed, with the caller they found."""

    async def __call__(self, request: Request, caller: Caller) -> Response | None: ...


_EARLY_ANSWER = "_questline_early_answer"
E = TypeVar("E", bound=Callable[..., Any])


def answers_early(answer: EarlyAnswer) -> Callable[[E], E]:
    """Declares, on a route's endpoint, the answer the fast lane may give before
    routing (under the route decorator: ``@router.get(...)`` then ``@answers_early(...)``)."""

    def declare(endpoint: E) -> E:
        setattr(endpoint, _EARLY_ANSWER, answer)
        return endpoint

    return declare


class RouteAnswer:
    """An early answer that is the route's own handler (access, transaction, endpoint:
    every rule of the route), run without FastAPI's routing layers around it.

    For long-lived responses (event streams): routed, a response is sent from inside
    the router's frames, the exception handlers' and two exit stacks, which then stay in
    memory for the whole response. Here the handler's exit stacks close once the
    endpoint returned, so a route whose dependencies clean up after the response
    (``yield``) is left to the router. Anything the handler raises goes on to the route,
    which answers it with its own problem document."""

    def __init__(self) -> None:
        self._handlers: dict[int, Callable[[Request], Coroutine[Any, Any, Response]] | None] = {}

    def _handler_of(self, route: Any) -> Callable[[Request], Coroutine[Any, Any, Response]] | None:
        key = id(route)
        if key not in self._handlers:
            detachable = isinstance(route, APIRoute) and not _cleans_up_after(route.dependant)
            self._handlers[key] = route.get_route_handler() if detachable else None
        return self._handlers[key]

    async def __call__(self, request: Request, caller: Caller) -> Response | None:
        handler = self._handler_of(request.scope.get("route"))
        if handler is None:
            return None
        scope = request.scope
        try:
            # The exit stacks FastAPI's routing and its middleware would have opened.
            async with AsyncExitStack() as middleware_stack, AsyncExitStack() as request_stack:
                scope["fastapi_middleware_astack"] = middleware_stack
                scope["fastapi_inner_astack"] = request_stack
                async with AsyncExitStack() as function_stack:
                    scope["fastapi_function_astack"] = function_stack
                    return await handler(request)
        except Exception:
            return None
        finally:
            for key in _EXIT_STACKS:  # closed: nothing may hold them for the response
                scope.pop(key, None)


_EXIT_STACKS = ("fastapi_middleware_astack", "fastapi_inner_astack", "fastapi_function_astack")


def _is_generator(call: Any) -> bool:
    if call is None:
        return False
    if isinstance(call, functools.partial):
        call = call.func
    if not (inspect.isfunction(call) or inspect.ismethod(call)):
        call = getattr(call, "__call__", call)  # noqa: B004 - a callable instance's method
    call = inspect.unwrap(call)
    return inspect.isgeneratorfunction(call) or inspect.isasyncgenfunction(call)


def _cleans_up_after(dependant: Dependant) -> bool:
    """Whether a dependency of the route (at any depth) is a generator (``yield``)."""
    stack = [dependant]
    while stack:
        current = stack.pop()
        if _is_generator(current.call):
            return True
        stack.extend(current.dependencies)
    return False


def flat_routes(routes: Sequence[BaseRoute]) -> list[BaseRoute]:
    """The application's routes in the order its router tries them, included routers
    opened (FastAPI keeps an included router as one entry that matches for its routes)."""
    return [route for _, route in declared_routes(routes)]


def let_concrete_paths_win(routes: Sequence[BaseRoute]) -> None:
    """A path without parameters wins over a templated path that also matches it, for
    every method (OpenAPI's rule for matching paths): ``GET /team/bulk`` is no request for
    the team with the id ``bulk`` but a method ``/team/bulk`` does not take (405, with
    ``Allow: POST``), and ``OPTIONS /team/bulk`` lists the methods of ``/team/bulk`` only.
    Call once every route is in place."""
    flat = flat_routes(routes)
    concrete = {
        path
        for route in flat
        if isinstance(path := getattr(route, "path", None), str) and "{" not in path
    }
    for route in flat:
        if isinstance(route, TransactionalRoute) and route.param_convertors:
            route.concrete_siblings = frozenset(
                path for path in concrete if route.path_regex.match(path)
            )


def url_of(request: Request, name: str, **params: str) -> str:
    """The link to the route named ``name``: ``url_path_for``'s path as a relative
    reference, or absolute on ``QUESTLINE_PUBLIC_URL`` (``questline.web.links``). The
    route is found once per application: FastAPI's own look-up walks every route,
    raising on each that does not match, every time."""
    named: dict[str, BaseRoute] | None = getattr(request.app.state, "questline_named_routes", None)
    if named is None:
        named = {}
        for route in flat_routes(request.app.routes):
            named.setdefault(getattr(route, "name", ""), route)
        request.app.state.questline_named_routes = named
    found = named.get(name)
    path = (found or request.app).url_path_for(name, **params)
    return service_link(request, str(path))


class TransactionalRoute(APIRoute):
    """A route run in one transaction, its access read from its dependencies, and
    optionally answered early by the fast lane (``answers_early``)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        methods = {m.upper() for m in kwargs.get("methods") or []}
        if "POST" in methods:
            extra = [Depends(get_caller), Depends(idempotency_guard)]
            kwargs["dependencies"] = [*(kwargs.get("dependencies") or []), *extra]
        super().__init__(path, endpoint, **kwargs)
        self.query_names = declared_query_names(self.dependant)
        self.access = access_of(self.dependant, methods)
        self.early_answer: EarlyAnswer | None = getattr(endpoint, _EARLY_ANSWER, None)
        self.concrete_siblings: frozenset[str] = frozenset()
        """Paths without parameters that this templated path also matches (``/team/bulk``
        for ``/team/{team_id}``): they belong to their own routes (``let_concrete_paths_win``)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if self.concrete_siblings and route_path(scope) in self.concrete_siblings:
            return Match.NONE, {}
        return super().matches(scope)

    async def admit(self, request: Request) -> Caller | None:
        """The steps every request of the route passes first, in this order, whether
        routed or answered early by the fast lane: its access, then its query
        parameters. The caller found (None: a public route)."""
        caller = await authorize(request, self.access)
        refuse_unknown_query_parameters(request, self.query_names)
        return caller

    def get_route_handler(self) -> Handler:
        original = super().get_route_handler()

        async def handler(request: Request) -> Response:
            caller = await self.admit(request)
            max_depth = app_state(request).settings.max_json_depth
            await read_checked_body(request, max_depth=max_depth, route=self)
            state = app_state(request)
            attempts = state.settings.database_retry_attempts
            for attempt in range(1, attempts + 1):
                try:
                    return await _attempt(request, original, caller)
                except DBAPIError as exc:
                    if _reconnectable(request, exc) and attempt < attempts:
                        continue
                    if not is_transient(exc):
                        raise
                    if attempt == attempts:
                        logger.warning("gave up after %s attempts: %s", attempts, sqlstate_of(exc))
                        raise ServiceUnavailable(
                            "The database was too busy with conflicting changes to finish "
                            "this request; retry it shortly.",
                            headers={"Retry-After": "1"},
                        ) from None
                    logger.info("retrying after %s (attempt %s)", sqlstate_of(exc), attempt)
                    await asyncio.sleep(random.uniform(0, 0.02 * 2**attempt))
            raise AssertionError("unreachable")  # pragma: no cover

        return handler


TRANSIENT_SQLSTATES = frozenset({"40001", "40P01"})
"""serialization_failure and deadlock_detected: the transaction was rolled back whole
and may simply be run again."""


def sqlstate_of(exc: DBAPIError) -> str | None:
    code = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    return str(code) if code else None


def is_transient(exc: DBAPIError) -> bool:
    return sqlstate_of(exc) in TRANSIENT_SQLSTATES


def _reconnectable(request: Request, exc: DBAPIError) -> bool:
    """A pooled connection that died while idle (the database restarted, a proxy closed
    it) fails its first statement and is dropped from the pool (there is no pre-ping):
    nothing was committed, so the request runs again on a fresh connection. A failure
    once the commit was sent is never retried (its outcome is unknown)."""
    state = getattr(request.state, "questline", None)
    return bool(exc.connection_invalidated) and not (state is not None and state.committing)


async def begin_snapshot(session: AsyncSession) -> None:
    """Reads on PostgreSQL run in one snapshot: ``REPEATABLE READ READ ONLY``, so that a
    read made of several statements (a graph, a discipline's tree) never mixes states
    from before and after a concurrent write. SQLite's transactions are snapshots.

    A read session is bound to ``Database.read_engine``, which carries these options,
    so the snapshot begins with the first statement: a read answered from the read
    model opens no transaction. This eager form is for sessions made otherwise."""
    if session.get_bind().dialect.name == "postgresql":
        await session.connection(
            execution_options={"isolation_level": "REPEATABLE READ", "postgresql_readonly": True}
        )


async def _attempt(request: Request, original: Handler, caller: Caller | None) -> Response:
    """One run of the endpoint in its own transaction (retried whole on deadlocks)."""
    # Row-level security (PostgreSQL): every transaction of the request acts for the
    # authenticated caller's organization, set here once (storage.tenancy).
    with tenancy.acting_for(caller.org_id if caller is not None else None):
        response = await _in_transaction(request, original, caller)
    # Answered and the session closed: a response sent for long (an event stream) keeps
    # no reference to it. (A failed attempt keeps it: the retry reads ``committing``.)
    del request.state.questline
    return response


async def _in_transaction(request: Request, original: Handler, caller: Caller | None) -> Response:
    state = app_state(request)
    write = request.method in WRITE_METHODS
    async with state.db.new_session(write=write) as session:
        request.state.questline = RequestState(session=session, caller=caller)
        if write and caller is not None:
            session.info[ACTING_CALLER] = caller  # who the audit log names
        if not write:
            readafter.route_reads(state, session, request)
        try:
            # A read may run on a replica; failing there, it runs again on the primary.
            response = await readafter.call_endpoint(original, request, session)
            pending = request_state(request).pending_key
            if pending is not None and 200 <= response.status_code < 300:
                await idempotency.store_response(session, pending, response)
            request_state(request).committing = True
            await session.commit()
            if write:
                await readafter.after_write(state, request, response)
        except idempotency.ReplayStoredResponse as replay:
            await session.rollback()
            # The first response may come from another process: hand out a position
            # past it, so that the retrying client reads its write.
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
    query = request.scope["query_string"]
    if not query:
        return
    nul, unknown = _query_verdict(query, known) if len(query) <= 256 else _judge(query, known)
    if nul:
        raise Unprocessable(
            "A query parameter holds a NUL character; none accepts one.",
            errors=[
                FieldError(field=name[:100] or "(empty name)", message="NUL character.")
                for name in nul[:10]
            ],
        )
    if not unknown:
        return
    message = "Unknown query parameter; it is not part of this request."
    errors = [FieldError(field=name or "(empty name)", message=message) for name in unknown]
    names = ", ".join(e.field for e in errors)
    raise Unprocessable(f"Unknown query parameters: {names}.", errors=errors)


def _judge(query: bytes, known: frozenset[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names holding a NUL, and the unknown names, of a raw query string (parsed as
    ``request.query_params`` parses it)."""
    params = QueryParams(query)
    nul = tuple(name for name, value in params.multi_items() if "\x00" in name + value)
    unknown = tuple(name for name in dict.fromkeys(params.keys()) if name not in known)
    return nul, unknown


_query_verdict = functools.lru_cache(maxsize=4096)(_judge)
"""``_judge`` kept for short query strings: a hot read repeats its few query strings
(``limit=50``), and parsing one costs more than the rest of a cached answer's checks
(docs/performance.md). Bounded: at most 4,096 strings of at most 256 bytes."""


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
