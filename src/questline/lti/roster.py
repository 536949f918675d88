"""Names and Role Provisioning Services 2.0: the course's roster → the organization's
members.

``POST /lti/platform/{id}/sync`` (and each launch that carries the NRPS claim, after
the launch's own transaction) reads the roster at the ``context_memberships_url`` the
latest launch named, page by page (``Link: <…>; rel="next"``, at most
``QUESTLINE_LTI_ROSTER_MAX_MEMBERS`` members and ``MAX_PAGES`` pages), then in one
transaction:

* each active member of the roster is found or made (by e-mail, else by ``user_id``),
  and remembered by its ``user_id``; one the roster had deactivated is active again;
* each member the platform made or saw before (``lti_people`` of this platform) that
  the roster no longer lists, or lists as ``Inactive``/``Deleted``, is deactivated:
  out of every team (their progress stays), signed out.

Running it twice changes nothing the second time. A roster cut short by the bounds
deactivates nobody (an incomplete list says nothing about who left).
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit
from questline.auth import sessions
from questline.config import Settings
from questline.lti import advantage, keys
from questline.lti.flow import Person, member_of
from questline.lti.models import LtiPerson, LtiPlatform
from questline.members.models import Member
from questline.readmodel.versions import bump
from questline.storage import tenancy
from questline.storage.db import Database, utcnow
from questline.teams import service as teams_service
from questline.web.errors import Conflict
from questline.web.identity import ACTING_CALLER, Caller

logger = logging.getLogger("questline.lti")

SYNC_EVERY = dt.timedelta(hours=1)
"""A launch with the roster claim syncs when the last sync is older than this."""
PAGE_SIZE = 1000
MAX_PAGES = 100
MEDIA_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"


@dataclass
class Outcome:
    read: int = 0
    added: int = 0
    reactivated: int = 0
    deactivated: int = 0
    complete: bool = True


@dataclass(frozen=True, slots=True)
class RosterEntry:
    subject: str
    email: str | None
    given_name: str
    active: bool


@dataclass
class Roster:
    entries: list[RosterEntry] = field(default_factory=list)
    complete: bool = True


def _entry(raw: Any) -> RosterEntry | None:
    if not isinstance(raw, dict):
        return None
    subject = raw.get("user_id")
    if not isinstance(subject, str) or not subject or len(subject) > 255:
        return None
    email = raw.get("email")
    if not isinstance(email, str) or "@" not in email or len(email) > 320:
        email = None
    name = raw.get("given_name") or raw.get("name")
    shown = (
        "".join(c for c in name if c.isprintable()).strip()[:100] if isinstance(name, str) else ""
    )
    status = raw.get("status", "Active")
    return RosterEntry(subject, email, shown or "Learner", status == "Active")


def _next_link(links: list[str]) -> str | None:
    """The ``rel="next"`` target of RFC 8288 ``Link`` headers, if any."""
    for part in links:
        for link in part.split(","):
            url, _, params = link.partition(";")
            relations = {p.replace(" ", "").replace('"', "") for p in params.split(";")}
            if "rel=next" in relations:
                return url.strip().strip("<>")
    return None


async def read_roster(
    *, settings: Settings, key: keys.SigningKey, platform: LtiPlatform, memberships_url: str
) -> Roster:
    roster = Roster()
    async with advantage.client(settings) as http:
        token = await advantage.access_token(
            http,
            settings=settings,
            key=key,
            client_id=platform.client_id,
            token_url=platform.auth_token_url,
            scopes=[advantage.NRPS_SCOPE],
        )
        separator = "&" if "?" in memberships_url else "?"
        url: str | None = f"{memberships_url}{separator}limit={PAGE_SIZE}"
        pages = 0
        while url is not None:
            if pages >= MAX_PAGES or len(roster.entries) >= settings.lti_roster_max_members:
                roster.complete = False
                break
            answer = await advantage.call(
                http,
                "GET",
                url,
                settings=settings,
                headers={"authorization": f"Bearer {token}", "accept": MEDIA_TYPE},
            )
            if answer.status_code != 200:
                raise advantage.ServiceFailed(
                    f"The platform's roster answered {answer.status_code}.",
                    status_code=answer.status_code,
                )
            document = answer.json()
            members = document.get("members") if isinstance(document, dict) else None
            for raw in members if isinstance(members, list) else []:
                entry = _entry(raw)
                if entry is not None:
                    roster.entries.append(entry)
            pages += 1
            url = _next_link(answer.links)
        del roster.entries[settings.lti_roster_max_members :]
    return roster


async def apply_roster(session: AsyncSession, *, platform: LtiPlatform, roster: Roster) -> Outcome:
    outcome = Outcome(read=len(roster.entries), complete=roster.complete)
    org_id = platform.organization_id
    listed: set[str] = set()
    for entry in roster.entries:
        if not entry.active:
            continue
        listed.add(entry.subject)
        found = await member_of(
            session,
            platform=platform,
            person=Person(subject=entry.subject, email=entry.email, given_name=entry.given_name),
        )
        outcome.added += int(found.created)
        outcome.reactivated += int(found.reactivated)
    if roster.complete:
        known = list(
            (
                await session.execute(
                    select(LtiPerson, Member)
                    .join(
                        Member,
                        (Member.organization_id == LtiPerson.organization_id)
                        & (Member.id == LtiPerson.member_id),
                    )
                    .where(
                        LtiPerson.organization_id == org_id,
                        LtiPerson.platform_id == platform.id,
                        LtiPerson.roster_deactivated.is_(False),
                    )
                )
            ).all()
        )
        for person, member in known:
            if person.subject in listed or member.active is False:
                continue
            person.roster_deactivated = True
            member.active = False
            await teams_service.remove_from_all_teams(session, org_id=org_id, member_id=member.id)
            await sessions.end_sessions_of(session, org_id=org_id, email=member.email)
            outcome.deactivated += 1
    platform.last_sync_at = utcnow()
    await session.flush()
    if outcome.added or outcome.reactivated or outcome.deactivated:
        await bump(session, org_id)
    await audit.record(
        session,
        organization_id=org_id,
        action="lti.roster_synced",
        target=("lti_platform", platform.id),
        after={
            "Read": outcome.read,
            "Added": outcome.added,
            "Reactivated": outcome.reactivated,
            "Deactivated": outcome.deactivated,
        },
    )
    return outcome


async def sync(
    db: Database,
    *,
    settings: Settings,
    signing_secret: str,
    org_id: uuid.UUID,
    platform_id: uuid.UUID,
    actor: Caller | None,
) -> Outcome:
    """Read the roster (no transaction open meanwhile), then apply it in one. Its
    transactions act for ``org_id`` (row-level security): the sync runs from an admin's
    request and after a launch's answer was sent, outside the request's boundary."""
    with tenancy.acting_for(org_id):
        async with db.session(write=True) as session:
            platform = await session.get(LtiPlatform, (org_id, platform_id))
            if platform is None:
                raise Conflict("The platform was removed.")
            if platform.memberships_url is None:
                raise Conflict(
                    "The platform has not named its roster service yet: launch Questline once "
                    "from the course, with the Names and Role Provisioning Services enabled."
                )
            memberships_url = platform.memberships_url
            key = await keys.signing_key(session, settings=settings, signing_secret=signing_secret)
            session.expunge(platform)
        roster = await read_roster(
            settings=settings, key=key, platform=platform, memberships_url=memberships_url
        )
        async with db.session(write=True) as session:
            if actor is not None:  # the audit entry names who asked (else: system)
                session.info[ACTING_CALLER] = actor
            current = await session.get(LtiPlatform, (org_id, platform_id), with_for_update=True)
            if current is None:
                raise Conflict("The platform was removed during the sync.")
            outcome = await apply_roster(session, platform=current, roster=roster)
        logger.info("LTI roster of %s synced: %s", platform_id, outcome)
        return outcome


def due(platform: LtiPlatform) -> bool:
    last = platform.last_sync_at
    return last is None or utcnow() - last >= SYNC_EVERY


async def sync_quietly(
    db: Database,
    *,
    settings: Settings,
    signing_secret: str,
    org_id: uuid.UUID,
    platform_id: uuid.UUID,
) -> None:
    """A launch's sync, after its answer was sent: a failure is logged (and the next
    launch, or an admin's ``POST …/sync``, tries again), never the launch's."""
    try:
        await sync(
            db,
            settings=settings,
            signing_secret=signing_secret,
            org_id=org_id,
            platform_id=platform_id,
            actor=None,
        )
    except (advantage.ServiceFailed, Conflict) as exc:
        logger.warning("LTI roster sync of %s after a launch failed: %s", platform_id, exc)
    except Exception:
        logger.exception("LTI roster sync of %s after a launch failed", platform_id)
