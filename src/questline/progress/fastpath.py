"""The progress writes' fast path: ``POST /team/{id}/progress`` and
``DELETE /team/{id}/progress/{taskId}`` answered before routing, group-committed.

A pure ASGI layer, innermost in the stack like the read model's (every other
middleware — request id, access log, security headers, rate limits, body limits,
timeouts — still sees the request). It takes only the plain, well-formed case and hands
everything else to the route unchanged, body included:

* a bearer token that verifies (the verified-token cache makes that a look-up), of an
  organization admin of an organization this process already knows (the route records
  new ones);
* the team and task ids in their canonical form, no query string;
* ``POST``: ``Content-Type: application/json``, a ``Content-Length`` of at most
  ``MAX_BODY`` bytes, the body passing the same JSON checks (depth, NUL) and the same
  model (``ProgressCreate``) as the route's; no ``Idempotency-Key`` (the route stores and
  replays those);
* no read replicas (the route hands out the write's position for read-your-writes).

The write itself joins the process's group commit (``progress.group_commit``); what it
answers — 201 or 200 with the completion, its ``Location``; 204 — is what the route
answers (tests/progress/test_fastpath.py compares them). A refusal (404, 409, 422) or
a failed batch comes back as ``None``: the route runs the request again from the start
and answers it with its problem document; nothing was written.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from prometheus_client import Counter
from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from questline.auth.tokens import Role, TokenService, bearer_token
from questline.progress import schemas
from questline.progress.group_commit import Answer, GroupCommit
from questline.progress.ledger import Completing, Recorded, Withdrawing
from questline.web.bodies import check_json_text, is_json_media
from questline.web.errors import Problem, ServiceUnavailable, Unauthorized
from questline.web.paths import canonical_uuid

MAX_BODY = 1024
"""Bytes of a body this path reads (a completion is about 100); larger ones take the
route, with its own limits."""


FAST_PATH = Counter(
    "questline_progress_fast_path",
    "Progress writes the fast path matched: answered by it, or declined to the route "
    "(refusals among them)",
    ["outcome"],
)
ANSWERED = FAST_PATH.labels("answered")
DECLINED = FAST_PATH.labels("declined")


@dataclass(slots=True)
class FastWrites:
    """The path's switch and its group commit (on ``app.state.progress_fast_path``)."""

    writes: GroupCommit
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class RouteName:
    """What the access log and the metrics read from ``scope["route"]``."""

    path: str


COMPLETE_ROUTE = RouteName("/team/{team_id}/progress")
WITHDRAW_ROUTE = RouteName("/team/{team_id}/progress/{task_id}")


def match(method: str, path: str) -> tuple[uuid.UUID, uuid.UUID | None] | None:
    """(team id, task id of a DELETE) of a progress write's path, else ``None``."""
    parts = path.split("/")
    # "", "team", team_id, "progress"[, task_id]
    if len(parts) < 4 or parts[0] or parts[1] != "team" or parts[3] != "progress":
        return None
    team_id = canonical_uuid(parts[2])
    if team_id is None:
        return None
    if method == "POST" and len(parts) == 4:
        return team_id, None
    if method == "DELETE" and len(parts) == 5:
        task_id = canonical_uuid(parts[4])
        return None if task_id is None else (team_id, task_id)
    return None


class _Decline(Exception):
    """The route answers this request."""


class ProgressWriteFastPath:
    def __init__(
        self,
        app: ASGIApp,
        *,
        fast: FastWrites,
        tokens: TokenService,
        known_orgs: set[uuid.UUID],
        public_url: str,
        max_json_depth: int,
    ) -> None:
        self.app = app
        self.fast = fast
        self.writes = fast.writes
        self.tokens = tokens
        self.known_orgs = known_orgs
        self.public_url = public_url.rstrip("/")
        self.max_json_depth = max_json_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method")
        matched = None
        if (
            self.fast.enabled
            and scope["type"] == "http"
            and method in ("POST", "DELETE")
            and not scope["query_string"]
        ):
            matched = match(method, scope["path"])
        if matched is None or self.writes.db.replicas.enabled:
            await self.app(scope, receive, send)
            return
        received: list[Message] = []
        try:
            outcome = await self._write(scope, receive, received, *matched)
        except _Decline:
            outcome = None
        if outcome is None:
            DECLINED.inc()
            await self.app(scope, _replay(received, receive), send)
            return
        ANSWERED.inc()
        if isinstance(outcome, Recorded):
            scope["route"] = COMPLETE_ROUTE
            await self._send_completion(send, outcome)
        else:
            scope["route"] = WITHDRAW_ROUTE
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

    async def _write(
        self,
        scope: Scope,
        receive: Receive,
        received: list[Message],
        team_id: uuid.UUID,
        task_id: uuid.UUID | None,
    ) -> Answer:
        headers = _headers(scope)
        org_id = await self._admin_org(headers.get(b"authorization"))
        if task_id is not None:
            return await self.writes.write(Withdrawing(org_id, team_id, task_id))
        content_type = headers.get(b"content-type", b"").decode("latin-1")
        if b"idempotency-key" in headers or not is_json_media(content_type):
            raise _Decline
        length = headers.get(b"content-length")
        if length is None or not length.isdigit() or int(length) > MAX_BODY:
            raise _Decline
        body = await _read_body(receive, received)
        data = self._parse(body)
        return await self.writes.write(Completing(org_id, team_id, data))

    async def _admin_org(self, authorization: bytes | None) -> uuid.UUID:
        token = bearer_token(authorization)
        if token is None:
            raise _Decline
        try:  # a remembered token: a look-up; an identity provider's key: fetched
            caller = await self.tokens.verify_async(token)
        except (Unauthorized, ServiceUnavailable):
            raise _Decline from None
        org_id = caller.org_id
        if caller.role is not Role.ADMIN or org_id is None or org_id not in self.known_orgs:
            raise _Decline
        return org_id

    def _parse(self, body: bytes) -> schemas.ProgressCreate:
        """The route's checks of the body, in its order; any refusal: the route answers."""
        try:
            check_json_text(body, self.max_json_depth)
            return schemas.ProgressCreate.model_validate(orjson.loads(body))
        except (Problem, orjson.JSONDecodeError, ValidationError):
            raise _Decline from None

    async def _send_completion(self, send: Send, recorded: Recorded) -> None:
        completion = recorded.completion
        body = recorded.body or schemas.COMPLETION_JSON.to_json(completion, by_alias=True)
        location = f"{self.public_url}/team/{completion.team_id}/progress/{completion.task_id}"
        await send(
            {
                "type": "http.response.start",
                "status": 201 if recorded.created else 200,
                "headers": [
                    (b"content-length", str(len(body)).encode("latin-1")),
                    (b"content-type", b"application/json"),
                    (b"location", location.encode("latin-1")),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _headers(scope: Scope) -> dict[bytes, bytes]:
    """The request's headers by lower-case name; a repeated one: its first value."""
    found: dict[bytes, bytes] = {}
    for name, value in scope["headers"]:
        found.setdefault(name, value)
    return found


async def _read_body(receive: Receive, received: list[Message]) -> bytes:
    """The whole body (at most ``MAX_BODY`` bytes, as its length said), every message
    kept in ``received`` for the route should it answer instead."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        received.append(message)
        if message["type"] != "http.request":
            raise _Decline  # the client went away: the route sees it too
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise _Decline
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(received: list[Message], receive: Receive) -> Receive:
    """``receive`` that first hands back what this path already read."""
    pending = list(received)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        message: Any = await receive()
        return message  # type: ignore[no-any-return]

    return replayed
