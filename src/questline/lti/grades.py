"""Assignment and Grade Services 2.0: each discipline is a line item of the course's
gradebook; when a team's progress in a discipline changes, each active member of the
team whom the platform knows (``lti_people``) gets a score: ``scoreGiven`` = the
team's points in the discipline, ``scoreMaximum`` = the discipline's total.

* **Consumer** of the outbox (``events.fanout``), as xAPI's: in the fan-out's
  transaction, ``progress.completed``/``progress.withdrawn`` events of organizations
  whose platform named its line items service (``lineitems`` of the AGS claim of a
  launch) become rows of ``lti_scores``: one per person and discipline, holding the
  latest value (a newer change rewrites it, bumps its ``version`` and makes it due).
  Rolled back → nothing; committed → sent, across restarts.
* **Dispatcher** (``GradesDispatcher``, ``outbound.loop.PassLoop``): claims due rows
  (``FOR UPDATE SKIP LOCKED`` on PostgreSQL, leased past the attempt's timeout), gets
  a client-credentials token per platform (``services``), finds or makes the
  discipline's line item (by ``resourceId``) and POSTs the score. 2xx → sent (unless
  the row was rewritten meanwhile: then due again with the new value); 400, 404, 409,
  422 → failed; anything else → retried with the outbox's backoff.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.config import Settings
from questline.disciplines.models import Discipline, Task
from questline.events import fanout
from questline.events.models import Event
from questline.lti import keys, services
from questline.lti.models import LtiLineItem, LtiPerson, LtiPlatform, LtiScore
from questline.members.models import Member, TeamMembership
from questline.outbound import retry
from questline.outbound.loop import PassLoop
from questline.progress.models import TaskCompletion
from questline.storage.db import Database, insert_ignoring_conflicts, utcnow

logger = logging.getLogger("questline.lti")

EVENT_TYPES = frozenset({"progress.completed", "progress.withdrawn"})
PENDING, SENT, FAILED = "Pending", "Sent", "Failed"
CLAIM_ROWS = 200
LEASE_MARGIN = dt.timedelta(seconds=30)
REFUSED = frozenset({400, 404, 409, 410, 415, 422})
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
LINE_ITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINE_ITEMS_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
RESOURCE_PREFIX = "questline-discipline-"


# The outbox consumer --------------------------------------------------------------------


def register_consumer(wake: Callable[[], None] | None = None) -> None:
    """Make scores of the outbox's progress events (``events.fanout``)."""
    fanout.register(fanout.Consumer(name="lti-ags", take=take_events, taken=wake))


async def take_events(
    session: AsyncSession, pending: Sequence[fanout.PendingEvent]
) -> set[uuid.UUID]:
    relevant = [e for e in pending if e.type in EVENT_TYPES]
    if not relevant:
        return set()
    platforms: dict[uuid.UUID, list[uuid.UUID]] = {}
    for org_id, platform_id in (
        await session.execute(
            select(LtiPlatform.organization_id, LtiPlatform.id).where(
                LtiPlatform.organization_id.in_({e.organization_id for e in relevant}),
                LtiPlatform.lineitems_url.is_not(None),
            )
        )
    ).all():
        platforms.setdefault(org_id, []).append(platform_id)
    wanted = [e for e in relevant if e.organization_id in platforms]
    if not wanted:
        return set()
    changes: dict[tuple[uuid.UUID, uuid.UUID, uuid.UUID], list[uuid.UUID]] = {}
    for row in (
        await session.execute(
            select(Event.organization_id, Event.id, Event.payload).where(
                Event.organization_id.in_(platforms), Event.id.in_([e.id for e in wanted])
            )
        )
    ).all():
        payload = row.payload if isinstance(row.payload, dict) else {}
        try:
            team_id = uuid.UUID(str(payload["TeamId"]))
            discipline_id = uuid.UUID(str(payload["DisciplineId"]))
        except (KeyError, ValueError):
            continue
        changes.setdefault((row.organization_id, team_id, discipline_id), []).append(row.id)
    taken: set[uuid.UUID] = set()
    for (org_id, team_id, discipline_id), event_ids in changes.items():
        made = await _score_team(
            session,
            org_id=org_id,
            team_id=team_id,
            discipline_id=discipline_id,
            platform_ids=platforms[org_id],
        )
        if made:
            taken.update(event_ids)
    return taken


async def _score_team(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    team_id: uuid.UUID,
    discipline_id: uuid.UUID,
    platform_ids: list[uuid.UUID],
) -> int:
    """The team's score in the discipline, for each of its active members the
    platforms know; the number of score rows written."""
    title = await session.scalar(select(Discipline.title).where(Discipline.id == discipline_id))
    if title is None:
        return 0  # deleted before the fan-out
    total = int(
        await session.scalar(
            select(func.coalesce(func.sum(Task.points), 0)).where(
                Task.discipline_id == discipline_id
            )
        )
        or 0
    )
    given = int(
        await session.scalar(
            select(func.coalesce(func.sum(TaskCompletion.points), 0)).where(
                TaskCompletion.organization_id == org_id,
                TaskCompletion.team_id == team_id,
                TaskCompletion.discipline_id == discipline_id,
            )
        )
        or 0
    )
    people = (
        await session.execute(
            select(LtiPerson.platform_id, LtiPerson.subject)
            .join(
                TeamMembership,
                and_(
                    TeamMembership.organization_id == LtiPerson.organization_id,
                    TeamMembership.member_id == LtiPerson.member_id,
                ),
            )
            .join(
                Member,
                and_(
                    Member.organization_id == LtiPerson.organization_id,
                    Member.id == LtiPerson.member_id,
                ),
            )
            .where(
                LtiPerson.organization_id == org_id,
                LtiPerson.platform_id.in_(platform_ids),
                TeamMembership.team_id == team_id,
                Member.active.is_not(False),
            )
        )
    ).all()
    now = utcnow()
    for platform_id, subject in people:
        row = await session.get(LtiScore, (org_id, platform_id, discipline_id, subject))
        if row is None:
            session.add(
                LtiScore(
                    organization_id=org_id,
                    platform_id=platform_id,
                    discipline_id=discipline_id,
                    subject=subject,
                    score_given=given,
                    score_maximum=max(total, given),
                    label=title[:500],
                    status=PENDING,
                    version=1,
                    attempts=0,
                    next_attempt_at=now,
                    updated_at=now,
                )
            )
        else:
            row.score_given = given
            row.score_maximum = max(total, given)
            row.label = title[:500]
            row.status = PENDING
            row.version += 1
            row.attempts = 0
            row.next_attempt_at = now
            row.last_error = None
            row.updated_at = now
    await session.flush()
    return len(people)


# The dispatcher -------------------------------------------------------------------------


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
    """The due scores of one platform, and what it needs to send them."""

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


class GradesDispatcher:
    def __init__(self, settings: Settings, db: Database, signing_secret: Callable[[], str]) -> None:
        self.settings = settings
        self.db = db
        self.signing_secret = signing_secret
        self._key: keys.SigningKey | None = None
        """Read by each claim that found work (sends run outside any transaction)."""
        self.loop = PassLoop(
            name="questline-lti-grades",
            run_once=self.run_once,
            poll_seconds=settings.lti_grades_poll_seconds,
            lock_path=(settings.ensure_data_dir() / "lti-grades.lock") if db.is_sqlite else None,
            logger=logger,
        )

    def start(self) -> None:
        self.loop.start()

    def wake(self) -> None:
        self.loop.wake()

    async def stop(self) -> None:
        await self.loop.stop()

    async def run_once(self) -> bool:
        groups, full = await self.claim()
        if not groups:
            return False
        results = await asyncio.gather(*(self._send(g) for g in groups.values()))
        await self.record([outcome for outcomes in results for outcome in outcomes])
        return full

    async def claim(self) -> tuple[dict[tuple[uuid.UUID, uuid.UUID], Group], bool]:
        now = utcnow()
        lease = dt.timedelta(seconds=self.settings.lti_http_timeout_seconds * 4) + LEASE_MARGIN
        async with self.db.session(write=False) as session:
            due = select(LtiScore.subject).where(
                LtiScore.status == PENDING, LtiScore.next_attempt_at <= now
            )
            if await session.scalar(due.limit(1)) is None:
                return {}, False  # an idle pass takes no write lock
        groups: dict[tuple[uuid.UUID, uuid.UUID], Group] = {}
        async with self.db.session(write=True) as session:
            query = (
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
                )
                .where(LtiScore.status == PENDING, LtiScore.next_attempt_at <= now)
                .order_by(LtiScore.next_attempt_at)
                .limit(CLAIM_ROWS)
            )
            if not self.db.is_sqlite:
                query = query.with_for_update(of=LtiScore, skip_locked=True)
            rows = (await session.execute(query)).all()
            for score, platform, line_item in rows:
                if platform.lineitems_url is None:  # cannot happen today: never unset
                    score.status = FAILED
                    score.last_error = "The platform names no line items service."
                    continue
                score.attempts += 1
                score.next_attempt_at = now + lease
                group = groups.setdefault(
                    (score.organization_id, score.platform_id),
                    Group(platform.client_id, platform.auth_token_url, platform.lineitems_url),
                )
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
            if groups:
                key = await keys.signing_key(
                    session, settings=self.settings, signing_secret=self.signing_secret()
                )
                self._key = key
        return groups, len(rows) >= CLAIM_ROWS

    async def _send(self, group: Group) -> list[Outcome]:
        outcomes: list[Outcome] = []
        assert self._key is not None
        try:
            async with services.client(self.settings) as http:
                token = await services.access_token(
                    http,
                    settings=self.settings,
                    key=self._key,
                    client_id=group.client_id,
                    token_url=group.token_url,
                    scopes=[services.AGS_LINEITEM_SCOPE, services.AGS_SCORE_SCOPE],
                )
                items: dict[uuid.UUID, str] = {}
                for score in group.scores:
                    outcomes.append(await self._send_one(http, group, token, score, items))
        except services.ServiceFailed as exc:
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
                "timestamp": utcnow().isoformat().replace("+00:00", "Z"),
            }
            answer = await services.call(
                http,
                "POST",
                _under(line_item, "/scores"),
                settings=self.settings,
                headers={**auth, "content-type": SCORE_TYPE},
                content=json.dumps(body).encode(),
            )
        except services.ServiceFailed as exc:
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
        found = await services.call(
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
        made = await services.call(
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
            raise services.ServiceFailed(
                f"The platform did not make the line item ({made.status_code}).",
                status_code=made.status_code,
            )
        return item_id

    async def record(self, outcomes: Sequence[Outcome]) -> None:
        now = utcnow()
        async with self.db.session(write=True) as session:
            for outcome in outcomes:
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
                    row.status = SENT
                elif code in REFUSED or row.attempts >= self.settings.lti_grades_max_attempts:
                    row.status = FAILED
                else:
                    row.next_attempt_at = now + retry.backoff(
                        self.settings.lti_grades_retry_base_seconds, row.attempts
                    )


def _under(url: str, suffix: str) -> str:
    """``<line item>/scores``: the path extended, the query kept (AGS 2.0 §3.4)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + suffix))


def _with_query(url: str, params: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode(params)) if q)
    return urlunsplit(parts._replace(query=query))
