"""Deep linking (LTI Deep Linking 2.0): an instructor adds a Questline link to the
course. The launch (``LtiDeepLinkingRequest``) leaves a one-time ticket and shows the
picker (``pages.picker``); the picker's form spends the ticket and Questline answers
with the ``LtiDeepLinkingResponse``, signed with its own key, that the browser posts to
the platform's ``deep_link_return_url``.

The choices are target link URIs under ``/lti/view/``: ``leaderboard``,
``leaderboard?discipline=<id>`` and ``team`` (each learner's own team).
"""

from __future__ import annotations

import datetime as dt
import secrets
import time
import uuid
from dataclasses import dataclass
from typing import Any

from joserfc import jwt
from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.auth import sessions
from questline.config import Settings
from questline.disciplines.models import Discipline
from questline.lti import claims as lti
from questline.lti import keys
from questline.lti.models import LtiDeepLink, LtiPlatform
from questline.lti.refusals import LaunchRefused
from questline.storage.db import utcnow
from questline.storage.purging import delete_expired
from questline.storage.tenancy import finds_the_organization, sweeps_every_organization

TICKET_MINUTES = 30
"""The instructor's time to pick."""
RESPONSE_SECONDS = 300
"""The signed response's lifetime (``exp``): the browser posts it at once."""
CHOICES = ("leaderboard", "discipline", "team")


@dataclass(frozen=True, slots=True)
class Picked:
    title: str
    url: str


@sweeps_every_organization
async def _purge_expired(session: AsyncSession) -> None:
    await delete_expired(session, LtiDeepLink.expires_at)


async def open_ticket(
    session: AsyncSession, *, platform: LtiPlatform, verified: dict[str, Any], frame_origin: str
) -> str:
    """Remember the request (return URL, ``data``) for the picker: the ticket, once."""
    settings = lti.object_of(verified, lti.DEEP_LINKING)
    return_url = lti.text_of(settings.get("deep_link_return_url"), 2048)
    if return_url is None or not return_url.startswith(("https://", "http://")):
        raise LaunchRefused("invalid-token", "deep_link_return_url")
    now = utcnow()
    await _purge_expired(session)
    ticket = secrets.token_urlsafe(32)
    session.add(
        LtiDeepLink(
            ticket_hash=sessions.digest(ticket),
            organization_id=platform.organization_id,
            platform_id=platform.id,
            deployment_id=str(verified[lti.DEPLOYMENT_ID]),
            return_url=return_url,
            data=lti.text_of(settings.get("data"), 2048),
            frame_origin=frame_origin,
            created_at=now,
            expires_at=now + dt.timedelta(minutes=TICKET_MINUTES),
        )
    )
    await session.flush()
    return ticket


async def disciplines_of(session: AsyncSession, org_id: uuid.UUID) -> list[tuple[uuid.UUID, str]]:
    rows = await session.execute(
        select(Discipline.id, Discipline.title)
        .where(or_(Discipline.organization_id == org_id, Discipline.organization_id.is_(None)))
        .order_by(Discipline.title, Discipline.id)
        .limit(500)
    )
    return [(row.id, row.title) for row in rows]


@finds_the_organization
async def spend_ticket(session: AsyncSession, *, ticket: str) -> LtiDeepLink:
    if not ticket or len(ticket) > 200:
        raise LaunchRefused("deep-link")
    row = await session.get(LtiDeepLink, sessions.digest(ticket))
    if row is None or row.expires_at <= utcnow():
        raise LaunchRefused("deep-link")
    await session.delete(row)
    await session.flush()
    return row


async def pick(
    session: AsyncSession,
    *,
    link: LtiDeepLink,
    choice: str,
    discipline: str | None,
    public_url: str,
) -> Picked:
    base = f"{public_url}/lti/view"
    if choice == "team":
        return Picked("My team's progress", f"{base}/team")
    if choice == "discipline":
        try:
            discipline_id = uuid.UUID(discipline or "")
        except ValueError:
            raise LaunchRefused("deep-link", "discipline") from None
        title = await session.scalar(
            select(Discipline.title).where(
                Discipline.id == discipline_id,
                or_(
                    Discipline.organization_id == link.organization_id,
                    Discipline.organization_id.is_(None),
                ),
            )
        )
        if title is None:
            raise LaunchRefused("deep-link", "discipline")
        return Picked(
            f"Leaderboard: {title}"[:200], f"{base}/leaderboard?discipline={discipline_id}"
        )
    if choice == "leaderboard":
        return Picked("Leaderboard", f"{base}/leaderboard")
    raise LaunchRefused("deep-link", "choice")


async def signed_response(
    session: AsyncSession,
    *,
    link: LtiDeepLink,
    platform: LtiPlatform,
    picked: Picked,
    settings: Settings,
    signing_secret: str,
) -> str:
    """The ``LtiDeepLinkingResponse`` JWT (LTI Deep Linking 2.0 §4.2): from the tool
    (``iss`` = its client id) to the platform (``aud`` = the issuer)."""
    key = await keys.signing_key(session, settings=settings, signing_secret=signing_secret)
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": platform.client_id,
        "aud": platform.issuer,
        "iat": now,
        "exp": now + RESPONSE_SECONDS,
        "nonce": secrets.token_urlsafe(16),
        lti.MESSAGE_TYPE: "LtiDeepLinkingResponse",
        lti.VERSION: "1.3.0",
        lti.DEPLOYMENT_ID: link.deployment_id,
        lti.DL + "content_items": [
            {"type": "ltiResourceLink", "title": picked.title, "url": picked.url}
        ],
    }
    if link.data is not None:
        claims[lti.DL + "data"] = link.data
    return jwt.encode({"alg": keys.ALGORITHM, "kid": key.kid, "typ": "JWT"}, claims, key.key)
