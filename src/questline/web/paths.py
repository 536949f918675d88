"""Path ids, and the optional ids of a query (``?season={id}``): a malformed id is a 404
like an unknown one (DESIGN §2), never a 422."""

import uuid
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Path, Query

from questline.web.errors import not_found


def id_or_not_found(raw: str, kind: str) -> uuid.UUID:
    """The id ``raw`` names; a malformed one names no ``kind``: 404, like an unknown one."""
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise not_found(kind) from None


def id_parser(kind: str, name: str):  # type: ignore[no-untyped-def]
    """The dependency that reads the path id ``name`` (``Depends(id_parser(...))`` in a
    domain's ``Annotated`` id type): a malformed one is 404 naming ``kind``."""

    # async: FastAPI runs a plain ``def`` dependency in its thread pool, a hand-off per
    # request that queues under load (docs/reliability.md).
    # Read as text (a malformed id is this 404, not the framework's 422) but documented
    # as what it is: a client, or a fuzzer, that follows the document sends UUIDs, and
    # ``/team/bulk`` is not taken for ``/team/{team_id}``.
    async def parse(
        raw: Annotated[
            str,
            Path(alias=name, description=f"Id of the {kind}", json_schema_extra={"format": "uuid"}),
        ],
    ) -> uuid.UUID:
        return id_or_not_found(raw, kind)

    return parse


def optional_id_query(
    kind: str, name: str, description: str
) -> Callable[[str | None], Awaitable[uuid.UUID | None]]:
    """The dependency that reads the optional query id ``name`` (absent: None), for a
    read that the ``kind`` narrows: a malformed id names no ``kind``, 404 like an
    unknown one. Read as text, at most 64 characters, for the same reason as a path
    id."""

    async def parse(
        raw: Annotated[
            str | None, Query(alias=name, max_length=64, description=description)
        ] = None,
    ) -> uuid.UUID | None:
        return None if raw is None else id_or_not_found(raw, kind)

    return parse


def canonical_uuid(text: str) -> uuid.UUID | None:
    """The id when ``text`` is its canonical lower-case form, else ``None``: the paths
    answered before routing (the read model's lean misses, the progress writes' fast
    path) take only that form and leave every other to the route."""
    if len(text) != 36:
        return None
    try:
        parsed = uuid.UUID(text)
    except ValueError:
        return None
    return parsed if str(parsed) == text else None


TeamId = Annotated[uuid.UUID, Depends(id_parser("team", "team_id"))]
MemberId = Annotated[uuid.UUID, Depends(id_parser("member", "member_id"))]
DisciplineId = Annotated[uuid.UUID, Depends(id_parser("discipline", "discipline_id"))]
TaskId = Annotated[uuid.UUID, Depends(id_parser("task", "task_id"))]
WebhookId = Annotated[uuid.UUID, Depends(id_parser("webhook", "webhook_id"))]
DeliveryId = Annotated[uuid.UUID, Depends(id_parser("delivery", "delivery_id"))]
SeasonId = Annotated[uuid.UUID, Depends(id_parser("season", "season_id"))]
PlatformId = Annotated[uuid.UUID, Depends(id_parser("LTI platform", "platform_id"))]
