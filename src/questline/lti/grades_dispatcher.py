"""Assignment and Grade Services 2.0, the scores sent: the **dispatcher**
(``GradesDispatcher``: ``outbound.outbox`` with the kind ``Grades``) of the rows
``grades_consumer`` wrote to ``lti_scores``. It claims a platform's due rows (``FOR
UPDATE SKIP LOCKED`` on PostgreSQL, leased past the attempt's timeout), gets a
client-credentials token for the attempt (``advantage``), finds or makes each
discipline's line item (by ``resourceId``) and POSTs the scores, four at a time.
2xx → sent (unless the row was rewritten meanwhile: then due again with the new
value); 400, 404, 409, 422 → failed; anything else → retried with the outbox's backoff.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import json
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from sqlalchemy import and_, not_, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import events
from questline.config import Settings
from questline.lti import advantage, keys
from questline.lti.grades_consumer import GRADES_TOPIC
from questline.lti.models import (
    SCORE_FAILED,
    SCORE_PENDING,
    SCORE_SENT,
    LtiLineItem,
    LtiPlatform,
    LtiScore,
)
from questline.outbound import calls, outbox, retry
from questline.outbound.fairness import Slots
from questline.outbound.outbox import Outbox, Slot
from questline.storage.db import Database, insert_ignoring_conflicts, utcnow
from questline.timeformat import rfc3339

logger = logging.getLogger("questline.lti")

CLAIM_ROWS = 200
PLATFORMS_IN_FLIGHT = 8
"""Attempts (a platform's due scores each) in flight in one process; one per
organization at a time."""
REQUESTS_PER_PLATFORM = 4
"""Scores of one attempt sent at once: an organization's share of the platform, as a
webhook's organization has four attempts in flight."""
LEASE_MARGIN = dt.timedelta(seconds=30)
REFUSED = frozenset({400, 404, 409, 410, 415, 422})
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
LINE_ITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINE_ITEMS_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
RESOURCE_PREFIX = "questline-discipline-"


@dataclass(frozen=True, slots=True)
class Claimed:
    organization_id: uuid.UUID
    platform_id: uuid.UUID
    discipline_id: uuid.UUID
    subject: str
    version: int
    score_given: int
    score_maximum: int
    label: str
    line_item: str | None


@dataclass
class Group:
    """The due scores of one platform, and what it needs to send them: one attempt."""

    organization_id: uuid.UUID
    platform_id: uuid.UUID
    host: str
    key: keys.SigningKey = field(repr=False)
    client_id: str
    token_url: str
    lineitems_url: str
    scores: list[Claimed] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Outcome:
    score: Claimed
    status_code: int | None
    error: str | None
    line_item: str | None


class Grades:
    """The LTI grades' kind of outbound work (``outbound.outbox.Kind``): score rows, one
    platform's due scores an attempt (one access token; the scores of a discipline
    after its line item is known, ``REQUESTS_PER_PLATFORM`` at a time)."""

    name = "lti-grades"

    def __init__(self, settings: Settings, db: Database, signing_secret: Callable[[], str]) -> None:
        self.settings = settings
        self.db = db
        self.signing_secret = signing_secret

    async def prepare(self) -> bool:
        return False

    def slot(self, group: Group) -> Slot:
        return Slot(group.organization_id, group.host, group.platform_id)

    def crashed(self, group: Group, exc: Exception) -> list[Outcome]:
        error = f"Internal error: {type(exc).__name__}"
        return [Outcome(score, None, error, None) for score in group.scores]

    async def close(self) -> None:
        return None

    async def purge(self, session: AsyncSession, now: dt.datetime) -> None:
        """Scores are one row per member and discipline, rewritten in place: none to
        purge."""

    def _due(self, query: Any, now: dt.datetime, slots: Slots) -> Any:
        query = query.where(LtiScore.status == SCORE_PENDING, LtiScore.next_attempt_at <= now)
        # A platform's scores go in one attempt at a time (its line items are found
        # or made by that attempt alone).
        platforms, organizations = slots.targets_in_flight(), slots.full_organizations()
        if platforms:
            query = query.where(not_(LtiScore.platform_id.in_(platforms)))
        if organizations:
            query = query.where(not_(LtiScore.organization_id.in_(organizations)))
        return query

    async def has_due(self, session: AsyncSession, now: dt.datetime, slots: Slots) -> bool:
        query = self._due(select(LtiScore.subject), now, slots)
        return await session.scalar(query.limit(1)) is not None

    async def claim(
        self, session: AsyncSession, now: dt.datetime, slots: Slots, claimed: list[Group]
    ) -> bool:
        lease = dt.timedelta(seconds=self.settings.lti_http_timeout_seconds * 4) + LEASE_MARGIN
        groups: dict[tuple[uuid.UUID, uuid.UUID], Group] = {}
        query = (
            self._due(
                select(LtiScore, LtiPlatform, LtiLineItem.url)
                .join(
                    LtiPlatform,
                    and_(
                        LtiPlatform.organization_id == LtiScore.organization_id,
                        LtiPlatform.id == LtiScore.platform_id,
                    ),
                )
                .outerjoin(
                    LtiLineItem,
                    and_(
                        LtiLineItem.organization_id == LtiScore.organization_id,
                        LtiLineItem.platform_id == LtiScore.platform_id,
                        LtiLineItem.discipline_id == LtiScore.discipline_id,
                    ),
                ),
                now,
                slots,
            )
            .order_by(LtiScore.next_attempt_at)
            .limit(CLAIM_ROWS)
        )
        if not self.db.is_sqlite:
            query = query.with_for_update(of=LtiScore, skip_locked=True)
        rows = (await session.execute(query)).all()
        key: keys.SigningKey | None = None
        for score, platform, line_item in rows:
            if platform.lineitems_url is None:  # cannot happen today: never unset
                score.status = SCORE_FAILED
                score.last_error = "The platform names no line items service."
                continue
            group = groups.get((score.organization_id, score.platform_id))
            if group is None:
                host = calls.receiving_host(platform.lineitems_url)
                if (
                    slots.room() <= 0
                    or slots.organization_full(score.organization_id)
                    or slots.host_full(host)
                ):
                    continue  # left for a later pass, unclaimed
                if key is None:
                    key = await keys.signing_key(
                        session, settings=self.settings, signing_secret=self.signing_secret()
                    )
                group = groups[(score.organization_id, score.platform_id)] = Group(
                    organization_id=score.organization_id,
                    platform_id=score.platform_id,
                    host=host,
                    key=key,
                    client_id=platform.client_id,
                    token_url=platform.auth_token_url,
                    lineitems_url=platform.lineitems_url,
                )
                slots.take(score.organization_id, host, score.platform_id)
                claimed.append(group)
            outbox.lease(score, now, lease)
            group.scores.append(
                Claimed(
                    organization_id=score.organization_id,
                    platform_id=score.platform_id,
                    discipline_id=score.discipline_id,
                    subject=score.subject,
                    version=score.version,
                    score_given=score.score_given,
                    score_maximum=score.score_maximum,
                    label=score.label,
                    line_item=line_item,
                )
            )
        return len(rows) >= CLAIM_ROWS

    async def send(self, group: Group) -> list[Outcome]:
        outcomes: list[Outcome] = []
        try:
            async with advantage.client(self.settings) as http:
                token = await advantage.access_token(
                    http,
                    settings=self.settings,
                    key=group.key,
                    client_id=group.client_id,
                    token_url=group.token_url,
                    scopes=[advantage.AGS_LINEITEM_SCOPE, advantage.AGS_SCORE_SCOPE],
                )
                items: dict[uuid.UUID, str] = {}
                by_discipline: dict[uuid.UUID, list[Claimed]] = {}
                for score in group.scores:
                    by_discipline.setdefault(score.discipline_id, []).append(score)
                gate = asyncio.Semaphore(REQUESTS_PER_PLATFORM)

                async def one(score: Claimed) -> Outcome:
                    async with gate:
                        return await self._send_one(http, group, token, score, items)

                for scores in by_discipline.values():
                    # The first finds or makes the line item; the others then use it.
                    first = await self._send_one(http, group, token, scores[0], items)
                    outcomes.append(first)
                    outcomes += await asyncio.gather(*(one(s) for s in scores[1:]))
        except advantage.ServiceFailed as exc:
            done = {(o.score.discipline_id, o.score.subject) for o in outcomes}
            outcomes += [
                Outcome(s, exc.status_code, str(exc)[:1000], None)
                for s in group.scores
                if (s.discipline_id, s.subject) not in done
            ]
        return outcomes

    async def _send_one(
        self, http: Any, group: Group, token: str, score: Claimed, items: dict[uuid.UUID, str]
    ) -> Outcome:
        auth = {"authorization": f"Bearer {token}"}
        line_item = score.line_item or items.get(score.discipline_id)
        try:
            if line_item is None:
                line_item = await self._line_item(http, group, auth, score)
                items[score.discipline_id] = line_item
            body = {
                "userId": score.subject,
                "scoreGiven": score.score_given,
                "scoreMaximum": score.score_maximum,
                "activityProgress": "Completed"
                if score.score_maximum and score.score_given >= score.score_maximum
                else "InProgress",
                "gradingProgress": "FullyGraded",
                "timestamp": rfc3339(utcnow()),
            }
            answer = await advantage.call(
                http,
                "POST",
                _under(line_item, "/scores"),
                settings=self.settings,
                headers={**auth, "content-type": SCORE_TYPE},
                content=json.dumps(body).encode(),
            )
        except advantage.ServiceFailed as exc:
            return Outcome(score, exc.status_code, str(exc)[:1000], line_item)
        error = (
            None if 200 <= answer.status_code < 300 else answer.body[:500].decode(errors="replace")
        )
        return Outcome(score, answer.status_code, error, line_item)

    async def _line_item(
        self, http: Any, group: Group, auth: dict[str, str], score: Claimed
    ) -> str:
        """The discipline's line item: found by its ``resourceId``, else made."""
        resource = f"{RESOURCE_PREFIX}{score.discipline_id}"
        found = await advantage.call(
            http,
            "GET",
            _with_query(group.lineitems_url, {"resource_id": resource}),
            settings=self.settings,
            headers={**auth, "accept": LINE_ITEMS_TYPE},
        )
        if found.status_code == 200:
            listed = found.json()
            for item in listed if isinstance(listed, list) else []:
                found_id = item.get("id") if isinstance(item, dict) else None
                if isinstance(found_id, str) and item.get("resourceId") == resource:
                    return found_id
        made = await advantage.call(
            http,
            "POST",
            group.lineitems_url,
            settings=self.settings,
            headers={**auth, "content-type": LINE_ITEM_TYPE, "accept": LINE_ITEM_TYPE},
            content=json.dumps(
                {
                    "scoreMaximum": max(score.score_maximum, 1),
                    "label": score.label,
                    "resourceId": resource,
                    "tag": "questline",
                }
            ).encode(),
        )
        item_id = made.json().get("id") if made.status_code in (200, 201) else None
        if not isinstance(item_id, str):
            raise advantage.ServiceFailed(
                f"The platform did not make the line item ({made.status_code}).",
                status_code=made.status_code,
            )
        return item_id

    async def record(
        self, session: AsyncSession, finished: Sequence[list[Outcome]], now: dt.datetime
    ) -> None:
        for outcome in (o for outcomes in finished for o in outcomes):
            score = outcome.score
            if outcome.line_item is not None:
                await session.execute(
                    insert_ignoring_conflicts(
                        session,
                        LtiLineItem.__table__,
                        ["organization_id", "platform_id", "discipline_id"],
                    ).values(
                        organization_id=score.organization_id,
                        platform_id=score.platform_id,
                        discipline_id=score.discipline_id,
                        url=outcome.line_item,
                        created_at=now,
                    )
                )
            row = await session.get(
                LtiScore,
                (score.organization_id, score.platform_id, score.discipline_id, score.subject),
            )
            if row is None:
                continue
            row.last_status_code = outcome.status_code
            row.last_error = outcome.error
            code = outcome.status_code
            if row.version != score.version:
                row.next_attempt_at = now  # rewritten meanwhile: send the new value
            elif outcome.error is None and code is not None and 200 <= code < 300:
                row.status = SCORE_SENT
            elif code in REFUSED or row.attempts >= self.settings.lti_grades_max_attempts:
                row.status = SCORE_FAILED
            else:
                row.next_attempt_at = now + retry.backoff(
                    self.settings.lti_grades_retry_base_seconds, row.attempts
                )


class GradesDispatcher(Outbox[Group, list[Outcome]]):
    """The grades' outbox dispatcher (``outbound.outbox``), woken when this process's
    fan-out made scores (``GRADES_TOPIC``); scores of other processes come with the
    poll."""

    def __init__(self, settings: Settings, db: Database, signing_secret: Callable[[], str]) -> None:
        super().__init__(
            Grades(settings, db, signing_secret),
            settings=settings,
            db=db,
            slots=Slots.of(PLATFORMS_IN_FLIGHT, per_organization=1, per_host=PLATFORMS_IN_FLIGHT),
            poll_seconds=settings.lti_grades_poll_seconds,
            lock_name="lti-grades.lock",
            logger=logger,
            listen=functools.partial(events.on_committed, topic=GRADES_TOPIC),
        )


def _under(url: str, suffix: str) -> str:
    """``<line item>/scores``: the path extended, the query kept (AGS 2.0 §3.4)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + suffix))


def _with_query(url: str, params: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode(params)) if q)
    return urlunsplit(parts._replace(query=query))
