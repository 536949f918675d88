"""Assignment and Grade Services 2.0, the scores to send: each discipline is a line item
of the course's gradebook; when a team's progress in a discipline changes, each active
member of the team whom the platform knows (``lti_people``) gets a score:
``scoreGiven`` = the team's points in the discipline, ``scoreMaximum`` = the
discipline's total.

The **consumer** of the outbox (``events.fanout``), as xAPI's: in the fan-out's
transaction, ``progress.completed``/``progress.withdrawn`` events of organizations whose
platform named its line items service (``lineitems`` of the AGS claim of a launch)
become rows of ``lti_scores``: one per person and discipline, holding the latest value
(a newer change rewrites it, bumps its ``version`` and makes it due). Rolled back →
nothing; committed → sent, across restarts, by ``grades_dispatcher``.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import events
from questline.disciplines.models import Discipline, Task
from questline.events import fanout
from questline.events.models import Event
from questline.lti.models import SCORE_PENDING, LtiPerson, LtiPlatform, LtiScore
from questline.members.models import Member, TeamMembership
from questline.progress.models import TaskCompletion
from questline.storage.db import utcnow

EVENT_TYPES = frozenset({"progress.completed", "progress.withdrawn"})


GRADES_TOPIC = "lti-grades"
"""``events.on_committed``'s topic of a fan-out that made scores: it wakes this
process's grades dispatcher."""


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
                    status=SCORE_PENDING,
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
            row.status = SCORE_PENDING
            row.version += 1
            row.attempts = 0
            row.next_attempt_at = now
            row.last_error = None
            row.updated_at = now
    await session.flush()
    return len(people)


CONSUMER = fanout.Consumer(
    name="lti-ags",
    take=take_events,
    listens="EXISTS (SELECT 1 FROM lti_platforms AS p "
    "WHERE p.organization_id = {organization} AND p.lineitems_url IS NOT NULL)",
    taken=functools.partial(events.announce_committed, GRADES_TOPIC),
)
"""Makes scores of the outbox's progress events (``events.fanout``; the application lists
it in ``questline.app.outbox_consumers``); a fan-out that committed scores announces
``GRADES_TOPIC`` (the dispatcher's wake-up)."""
