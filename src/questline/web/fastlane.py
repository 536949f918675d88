"""The fast lane: a route answered before FastAPI's routing, from the route's own
declaration.

A route opts in with ``answers_early(answer)`` (``questline.web.routing``). At the first
request this layer reads ``app.routes`` and keeps, per method, the routes that did, each
with the routes declared before it (which win a path both match, as in Starlette's
routing). For a request it then does what the route would, with the route's own parts:

* the match: the route's ``matches`` (its path pattern and converters), and no earlier
  route that fully matches;
* the route's first steps, ``TransactionalRoute.admit`` (the same call its handler
  makes): its declared access, then its query parameters;
* the answer: the route's ``EarlyAnswer``, which builds the response with the same
  functions the endpoint uses (cache key, ETag and 304, ``Location``, the body).

``scope["route"]`` is set to the route, so the access log and ``/metrics`` name it as
they name a routed request. A refusal of these steps (a ``Problem``: 401, 403, an
unknown query parameter, a write the ledger refuses) is answered here with the problem
document the route's handler would give (``problem_from``): the steps are the route's,
in its order, so running the request again through the route would only repeat its
look-ups. Anything the answer does not take (it returns ``None``) goes on to the
application unchanged, the body included: the route answers it.

It is the innermost step of the edge pipeline (``web.edge``): request ids, the access
log, rate limits, body limits and timeouts still see every request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request, Response
from prometheus_client import Counter
from starlette.routing import BaseRoute, Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from questline.storage import tenancy
from questline.web.error_handlers import problem_from
from questline.web.errors import Problem
from questline.web.routing import EarlyAnswer, TransactionalRoute, flat_routes

ANSWERED = Counter(
    "questline_fast_lane_answers_total",
    "Requests the fast lane answered before routing",
    ["method", "route"],
)


@dataclass(frozen=True, slots=True)
class Lane:
    route: TransactionalRoute
    answer: EarlyAnswer
    earlier: tuple[BaseRoute, ...]
    """The routes before it whose paths could match the same request (they win it)."""
    answered: Any
    """Its child of ``ANSWERED``."""


def lanes_of(app_routes: Sequence[BaseRoute]) -> dict[str, tuple[Lane, ...]]:
    """Per method, the routes that declare an early answer, in the application's order."""
    found: dict[str, list[Lane]] = {}
    routes = flat_routes(app_routes)
    for position, route in enumerate(routes):
        if not isinstance(route, TransactionalRoute) or route.early_answer is None:
            continue
        for method in route.methods or ():
            earlier = tuple(
                other
                for other in routes[:position]
                if _may_take(other, method) and _may_overlap(other, route.path)
            )
            answered = ANSWERED.labels(method, route.path)
            found.setdefault(method, []).append(Lane(route, route.early_answer, earlier, answered))
    return {method: tuple(lanes) for method, lanes in found.items()}


def _may_take(route: BaseRoute, method: str) -> bool:
    """Whether ``route`` may answer ``method`` at all (a mount answers every method)."""
    methods = getattr(route, "methods", None)
    return methods is None or method in methods


def _segments(path: str) -> list[str]:
    return path.strip("/").split("/")


def _may_overlap(route: BaseRoute, template: str) -> bool:
    """Whether some path could match both ``route`` and the path ``template``, judged
    from the two declarations: segment by segment, a parameter may match anything but a
    slash. Anything this cannot judge (no path, a ``:path`` parameter) may overlap."""
    path = getattr(route, "path", None)
    if not isinstance(path, str) or ":path}" in path or ":path}" in template:
        return True
    theirs, ours = _segments(path), _segments(template)
    if isinstance(route, Mount):  # a prefix: the rest of the path is the mount's
        theirs = [segment for segment in theirs if segment]
        if len(ours) < len(theirs):
            return False
        ours = ours[: len(theirs)]
    elif len(theirs) != len(ours):
        return False
    return all(a == b or "{" in a or "{" in b for a, b in zip(theirs, ours, strict=True))


class FastLane:
    def __init__(self, app: ASGIApp, *, application: FastAPI) -> None:
        self.app = app
        self.application = application
        self._lanes: dict[str, tuple[Lane, ...]] | None = None

    def _lanes_for(self, method: str) -> tuple[Lane, ...]:
        if self._lanes is None:
            self._lanes = lanes_of(self.application.routes)
        return self._lanes.get(method, ())

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        path = scope["path"]
        for lane in self._lanes_for(scope["method"]):
            if lane.route.path_regex.match(path) is None:
                continue
            matched, child = lane.route.matches(scope)
            if matched is Match.FULL:
                if any(other.matches(scope)[0] is Match.FULL for other in lane.earlier):
                    break
                return self._take(lane, {**scope, **child}, scope, receive, send)
        return self.app(scope, receive, send)

    async def _take(
        self, lane: Lane, matched: Scope, scope: Scope, receive: Receive, send: Send
    ) -> None:
        received: list[Message] = []
        response = await _early_response(lane, matched, receive, received)
        del matched  # the request's copy of the scope: not kept for the response's life
        if response is None:
            await self.app(scope, _replay(received, receive), send)
            return
        scope["route"] = lane.route
        lane.answered.inc()
        await response(scope, receive, send)


async def _early_response(
    lane: Lane, matched: Scope, receive: Receive, received: list[Message]
) -> Response | None:
    """The route's early answer, or ``None``; what it read of the body goes to
    ``received`` (for the route). Apart from ``_take`` so that the request it built is
    not kept alive while the response is sent (an event stream's whole life)."""

    async def recording() -> Message:
        message = await receive()
        received.append(message)
        return message

    request = Request(matched, recording)
    try:
        caller = await lane.route.admit(request)
        if caller is None:
            return None
        with tenancy.acting_for(caller.org_id):
            return await lane.answer(request, caller)
    except Problem as refused:
        return problem_from(request, refused)


def _replay(received: list[Message], receive: Receive) -> Receive:
    """``receive`` that first hands back what the fast lane already read."""
    pending = list(received)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        message: Any = await receive()
        return message  # type: ignore[no-any-return]

    return replayed
