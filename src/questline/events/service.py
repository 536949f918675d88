"""Recording events inside the transaction of the change they describe."""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Callable, Iterable
from typing import Any, Literal, get_args

from pydantic import BaseModel
from sqlalchemy import Insert, bindparam, insert, select, text
from sqlalchemy import event as sa_event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from questline.events.fanout import EVERYONE, LISTENERS, Listeners
from questline.events.models import PLATFORM_ORG, Event
from questline.storage.db import new_id, utcnow

EventType = Literal[
    "team.created",
    "team.updated",
    "team.deleted",
    "team.admin_changed",
    "member.added",
    "member.removed",
    "progress.completed",
    "progress.withdrawn",
    "discipline.created",
    "discipline.updated",
    "discipline.deleted",
    "bulk.completed",
    "team.adjusted",
    "team.adjustment_withdrawn",
    "attempt.created",
    "hint.unlocked",
    "submission.created",
    "submission.approved",
    "submission.rejected",
]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)
_SESSION_TOPICS = "questline_committed_topics"
_LISTENED = "questline_listened_organizations"
EVENTS = "events"
"""The topic of the outbox's events (``on_committed``); a domain with an outbox of its
own (mail) notes its own topic, so that its sender is not woken by every event."""

_listeners: dict[str, set[Callable[[], None]]] = {}
_listeners_lock = threading.Lock()


def as_payload(data: Any) -> Any:
    """The JSON the API returns for ``data`` (pydantic models by their wire names)."""
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json", by_alias=True)
    if isinstance(data, dict):
        return {key: as_payload(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [as_payload(item) for item in data]
    if isinstance(data, uuid.UUID):
        return str(data)
    return data


async def record(
    session: AsyncSession, *, organization_id: uuid.UUID | None, type: str, data: Any
) -> None:
    """Append an event to the outbox, in ``session``'s transaction.

    ``organization_id=None`` is a global discipline's event: every organization's
    webhooks that subscribe to its type receive it.
    """
    await record_many(session, organization_id=organization_id, type=type, items=[data])


async def record_many(
    session: AsyncSession, *, organization_id: uuid.UUID | None, type: str, items: Iterable[Any]
) -> None:
    if type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type!r}")
    items = list(items)
    if not items:
        return
    listeners: Listeners = session.info.get(LISTENERS, EVERYONE)
    known: dict[uuid.UUID, bool] = session.info.setdefault(_LISTENED, {})
    # The organization to ask the consumers about (none: a global discipline's event,
    # every organization's; or a session not given them).
    asked = None if listeners.conditions is None else organization_id
    if asked is not None and (not listeners.conditions or known.get(asked) is False):
        return  # no consumer, or none listens to this organization
    now = utcnow()
    rows = [
        {
            "organization_id": organization_id or PLATFORM_ORG,
            "id": new_id(),
            "type": type,
            "payload": as_payload(item),
            "created_at": now,
            "pending": True,
        }
        for item in items
    ]
    if asked is not None and asked not in known:
        # Asked in the statement that inserts: an organization no consumer listens to
        # records nothing (an event a pass would read only to delete).
        connection = await session.connection()  # Core: no ORM work for one row
        first = await connection.execute(_insert_if_listened(listeners), rows[0])
        known[asked] = first.rowcount > 0
        if not known[asked]:
            return
        rows = rows[1:]
    if rows:
        await session.execute(insert(Event), rows)
    note_recorded(session)


@functools.lru_cache(maxsize=8)
def _insert_if_listened(listeners: Listeners) -> Insert:
    """Insert one event (its columns as parameters) if ``listeners`` listen to its
    organization."""
    columns = Event.__table__.columns
    values = [bindparam(name, type_=columns[name].type) for name in _COLUMNS]
    listened = text(listeners.sql(":organization_id")).bindparams(
        bindparam("organization_id", type_=columns["organization_id"].type)
    )
    return insert(Event).from_select(_COLUMNS, select(*values).where(listened))


_COLUMNS = ("organization_id", "id", "type", "payload", "created_at", "pending")


def outbox_sql(dialect: str, *, rows: str = "", created_at: str = "", when: str = "true") -> str:
    """``record_many`` as hand SQL, for writes that run their own statements (the
    progress ledger, where a progress write is one or two statements in all); the only
    place that SQL is written.

    PostgreSQL: insert the rows of the JSON array ``rows`` (a parameter such as ``$6``:
    objects with ``organization_id``, ``id``, ``type`` and ``payload``, the JSON text)
    at ``created_at`` (a parameter) when ``when`` holds; usable as a data-modifying
    CTE. SQLite: one event, parameters (organization, id, type, payload, created_at).
    The caller then calls ``note_recorded`` (or ``announce_committed`` after its own
    commit) so the dispatcher wakes.
    """
    if dialect == "sqlite":
        return (
            "INSERT INTO events (organization_id, id, type, payload, created_at, pending) "
            "VALUES (?, ?, ?, ?, ?, 1)"
        )
    return f"""INSERT INTO events (organization_id, id, type, payload, created_at, pending)
    SELECT r.organization_id, r.id, r.type, CAST(r.payload AS json),
           CAST({created_at} AS timestamptz), true
    FROM json_to_recordset(CAST({rows} AS json)) AS r(
        organization_id uuid, id uuid, type text, payload text)
    WHERE {when}"""


def note_recorded(session: AsyncSession, topic: str = EVENTS) -> None:
    """Rows of ``topic`` were inserted by a statement of the caller's own (the progress
    writes, the mail outbox): wake that topic's listeners after the commit."""
    session.info.setdefault(_SESSION_TOPICS, set()).add(topic)


def on_committed(listener: Callable[[], None], topic: str = EVENTS) -> Callable[[], None]:
    """Call ``listener`` after every commit (in this process) that recorded rows of
    ``topic``; returns the function that removes it. Listeners must be quick and
    thread-safe."""
    with _listeners_lock:
        _listeners.setdefault(topic, set()).add(listener)

    def remove() -> None:
        with _listeners_lock:
            _listeners.get(topic, set()).discard(listener)

    return remove


@sa_event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    session.info.pop(_LISTENED, None)
    for topic in session.info.pop(_SESSION_TOPICS, ()):
        announce_committed(topic)


def announce_committed(topic: str = EVENTS) -> None:
    """Rows of ``topic`` were committed (by a transaction of this process): call its
    listeners. Sessions do it after their commit; writes made outside a session (the
    progress group commit) call it themselves."""
    with _listeners_lock:
        listeners = list(_listeners.get(topic, ()))
    for listener in listeners:
        listener()


@sa_event.listens_for(Session, "after_rollback")
def _after_rollback(session: Session) -> None:
    session.info.pop(_LISTENED, None)
    session.info.pop(_SESSION_TOPICS, None)
