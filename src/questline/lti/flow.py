"""The launch: third-party initiated login, then the ID token the platform posts back.

1. ``start_login`` (``/lti/login``): the platform names itself (``iss``, ``client_id``);
   a login row (state, nonce, target) goes into the database and the browser is sent
   to the platform's ``AuthLoginUrl`` (OIDC implicit flow, ``response_mode=form_post``).
2. ``spend_login`` (``/lti/launch``): the posted ``state`` spends that row, once
   (deleted in the statement that reads it, in a transaction of its own that commits
   whatever happens next: a replayed launch finds nothing). The nonce travels with
   the row, so it is spent with it.
3. ``claims.verify_launch``: the ID token, with the platform's keys (no transaction is
   open while they are fetched).
4. ``sign_in``: the deployment must be registered (it names the organization); the
   member is found by e-mail, or by the platform's ``sub``; instructors and
   administrators become admins; the dashboard session starts as a sign-in link's does.

The login is not bound to the browser by a cookie as single sign-on's is: inside the
platform's iframe browsers drop third-party cookies, and the launch is signed by the
platform for this login's nonce (docs/platforms.md, "Launch").
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import secrets
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from email_validator import EmailNotValidError, validate_email
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.auth import sessions
from questline.config import Settings
from questline.lti import claims as lti
from questline.lti.models import LtiDeployment, LtiLoginState, LtiPerson, LtiPlatform
from questline.lti.refusals import LaunchRefused
from questline.members.models import Member, TeamMembership
from questline.members.service import find_or_create
from questline.readmodel.versions import bump
from questline.storage.db import utcnow
from questline.web.identity import Caller, Role

logger = logging.getLogger("questline.lti")

MAX_PARAMETER = 2048
NO_EMAIL_DOMAIN = "lti.invalid"
"""Members known only by a platform's ``sub`` get ``<digest>@<platform>.lti.invalid``:
``.invalid`` is reserved (RFC 2606), so nothing is ever sent there."""


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


@dataclass(frozen=True, slots=True)
class LoginStart:
    redirect_url: str


@dataclass(frozen=True, slots=True)
class SpentLogin:
    issuer: str
    client_id: str
    nonce: str
    target_link_uri: str


@dataclass(frozen=True, slots=True)
class Launched:
    grant: sessions.Grant
    platform: LtiPlatform
    member_id: uuid.UUID
    team_ids: list[uuid.UUID]
    role: Role
    frame_origin: str


async def _purge_expired(session: AsyncSession) -> None:
    await session.execute(delete(LtiLoginState).where(LtiLoginState.expires_at <= utcnow()))


async def platforms_of(
    session: AsyncSession, *, issuer: str, client_id: str | None, deployment_id: str | None
) -> list[LtiPlatform]:
    """The registrations (of any organization) that a login's parameters may name."""
    query = select(LtiPlatform).where(LtiPlatform.issuer == issuer)
    if client_id:
        query = query.where(LtiPlatform.client_id == client_id)
    if deployment_id:
        query = query.join(
            LtiDeployment,
            (LtiDeployment.organization_id == LtiPlatform.organization_id)
            & (LtiDeployment.platform_id == LtiPlatform.id),
        ).where(LtiDeployment.deployment_id == deployment_id)
    return list((await session.scalars(query.order_by(LtiPlatform.created_at))).all())


def _optional(params: dict[str, str], name: str) -> str | None:
    value = params.get(name)
    if not value:
        return None
    if len(value) > MAX_PARAMETER or any(ord(c) < 0x20 for c in value):
        raise LaunchRefused("login-request", f"{name} malformed")
    return value


def _required(params: dict[str, str], name: str) -> str:
    value = _optional(params, name)
    if value is None:
        raise LaunchRefused("login-request", f"no {name}")
    return value


async def start_login(
    session: AsyncSession,
    *,
    params: dict[str, str],
    redirect_uri: str,
    default_target: str,
    settings: Settings,
) -> LoginStart:
    """Record the login and build the platform's authentication request."""
    issuer = _required(params, "iss")
    login_hint = _required(params, "login_hint")
    client_id = _optional(params, "client_id")
    deployment_id = _optional(params, "lti_deployment_id")
    message_hint = _optional(params, "lti_message_hint")
    target = _optional(params, "target_link_uri")
    found = await platforms_of(
        session, issuer=issuer, client_id=client_id, deployment_id=deployment_id
    )
    client_ids = {p.client_id for p in found}
    if not found or len(client_ids) > 1:
        # Several client ids of one issuer and no client_id sent: which one is unknown.
        raise LaunchRefused("unknown-platform", issuer)
    platform = found[0]
    await _purge_expired(session)
    state = secrets.token_urlsafe(32)
    nonce = secrets.token_urlsafe(32)
    now = utcnow()
    session.add(
        LtiLoginState(
            state_hash=sessions.digest(state),
            issuer=issuer,
            client_id=platform.client_id,
            nonce=nonce,
            target_link_uri=target or default_target,
            created_at=now,
            expires_at=now + dt.timedelta(minutes=settings.lti_login_minutes),
        )
    )
    await session.flush()
    query = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": platform.client_id,
        "redirect_uri": redirect_uri,
        "login_hint": login_hint,
        "state": state,
        "nonce": nonce,
    }
    if message_hint is not None:
        query["lti_message_hint"] = message_hint
    separator = "&" if urlsplit(platform.auth_login_url).query else "?"
    return LoginStart(redirect_url=f"{platform.auth_login_url}{separator}{urlencode(query)}")


async def spend_login(session: AsyncSession, *, state: str) -> SpentLogin:
    """Spend the login of ``state``: once, and only before it expires."""
    if not state or len(state) > 200:
        raise LaunchRefused("state")
    spent = (
        await session.execute(
            delete(LtiLoginState)
            .where(LtiLoginState.state_hash == sessions.digest(state))
            .returning(
                LtiLoginState.issuer,
                LtiLoginState.client_id,
                LtiLoginState.nonce,
                LtiLoginState.target_link_uri,
                LtiLoginState.expires_at,
            )
        )
    ).one_or_none()
    if spent is None or spent.expires_at <= utcnow():
        raise LaunchRefused("state")
    return SpentLogin(
        issuer=spent.issuer,
        client_id=spent.client_id,
        nonce=spent.nonce,
        target_link_uri=spent.target_link_uri,
    )


async def key_set_url_of(session: AsyncSession, login: SpentLogin) -> str:
    """The key set of the login's platform (registrations sharing an issuer and client
    id share the platform, so any of them names it)."""
    found = await platforms_of(
        session, issuer=login.issuer, client_id=login.client_id, deployment_id=None
    )
    if not found:
        raise LaunchRefused("unknown-platform", login.issuer)
    return found[0].key_set_url


async def platform_of_deployment(
    session: AsyncSession, *, issuer: str, client_id: str, deployment_id: str
) -> LtiPlatform:
    platform = await session.scalar(
        select(LtiPlatform)
        .join(
            LtiDeployment,
            (LtiDeployment.organization_id == LtiPlatform.organization_id)
            & (LtiDeployment.platform_id == LtiPlatform.id),
        )
        .where(
            LtiDeployment.issuer == issuer,
            LtiDeployment.client_id == client_id,
            LtiDeployment.deployment_id == deployment_id,
        )
    )
    if platform is None:
        raise LaunchRefused("deployment", deployment_id)
    return platform


@dataclass(frozen=True, slots=True)
class Person:
    subject: str | None
    email: str | None
    given_name: str


def person_of(verified: dict[str, Any]) -> Person:
    email: str | None = None
    raw = verified.get("email")
    if isinstance(raw, str) and len(raw) <= 320:
        try:
            email = validate_email(raw, check_deliverability=False).normalized
        except EmailNotValidError:
            email = None
    subject = lti.text_of(verified.get("sub"), 255)
    if email is None and subject is None:
        raise LaunchRefused("invalid-token", "neither email nor sub")
    name = (
        lti.text_of(verified.get("given_name"), 100)
        or lti.text_of(verified.get("name"), 100)
        or (email.split("@", 1)[0] if email else "Learner")
    )
    shown = "".join(c for c in name if c.isprintable()).strip() or "Learner"
    return Person(subject=subject, email=email, given_name=shown[:100])


def placeholder_email(platform_id: uuid.UUID, subject: str) -> str:
    digest = hashlib.sha256(subject.encode()).hexdigest()[:24]
    return f"{digest}@{platform_id}.{NO_EMAIL_DOMAIN}"


@dataclass(frozen=True, slots=True)
class FoundPerson:
    member: Member
    created: bool
    reactivated: bool
    """The roster had deactivated it; the platform now lists it (or it launched)."""


async def member_of(session: AsyncSession, *, platform: LtiPlatform, person: Person) -> FoundPerson:
    """The member the platform's user is: by e-mail, else by ``sub`` (found or made);
    the ``sub`` is remembered for the next launch and the roster."""
    org_id = platform.organization_id
    email = person.email
    if email is None:
        assert person.subject is not None
        known = await session.scalar(
            select(Member)
            .join(
                LtiPerson,
                (LtiPerson.organization_id == Member.organization_id)
                & (LtiPerson.member_id == Member.id),
            )
            .where(
                LtiPerson.organization_id == org_id,
                LtiPerson.platform_id == platform.id,
                LtiPerson.subject == person.subject,
            )
        )
        email = known.email if known is not None else placeholder_email(platform.id, person.subject)
    found = await find_or_create(session, org_id=org_id, email=email, given_name=person.given_name)
    reactivated = False
    if person.subject is not None:
        remembered = await remember_person(
            session, platform=platform, subject=person.subject, member_id=found.member.id
        )
        if remembered.roster_deactivated:
            # The roster had left it out; the platform now says it is in the course.
            remembered.roster_deactivated = False
            if found.member.active is False:
                found.member.active = None
                reactivated = True
    return FoundPerson(found.member, found.created, reactivated)


async def remember_person(
    session: AsyncSession, *, platform: LtiPlatform, subject: str, member_id: uuid.UUID
) -> LtiPerson:
    row = await session.get(LtiPerson, (platform.organization_id, platform.id, subject))
    if row is None:
        row = LtiPerson(
            organization_id=platform.organization_id,
            platform_id=platform.id,
            subject=subject,
            member_id=member_id,
            roster_deactivated=False,
            created_at=utcnow(),
        )
        session.add(row)
    else:
        row.member_id = member_id
    await session.flush()
    return row


def _remember_context(platform: LtiPlatform, verified: dict[str, Any]) -> None:
    context = lti.object_of(verified, lti.CONTEXT)
    title = lti.text_of(context.get("title"), 500) or lti.text_of(context.get("label"), 500)
    if title is not None:
        platform.context_title = title
    context_id = lti.text_of(context.get("id"), 255)
    if context_id is not None:
        platform.context_id = context_id
    memberships = lti.text_of(
        lti.object_of(verified, lti.NRPS).get("context_memberships_url"), 2048
    )
    if memberships is not None:
        platform.memberships_url = memberships
    lineitems = lti.text_of(lti.object_of(verified, lti.AGS).get("lineitems"), 2048)
    if lineitems is not None:
        platform.lineitems_url = lineitems


async def sign_in(
    session: AsyncSession,
    *,
    platform: LtiPlatform,
    verified: dict[str, Any],
    settings: Settings,
    previous_cookie: str | None,
    launch_origin: str | None,
) -> Launched:
    """Find or create the member, keep the course's title and service URLs, and start
    the dashboard session."""
    person = person_of(verified)
    org_id = platform.organization_id
    found = await member_of(session, platform=platform, person=person)
    member, created = found.member, found.created
    if member.active is False:  # the directory's word (or the roster's) wins: no session
        raise LaunchRefused("deactivated", frame_origin=origin_of(platform.issuer))
    _remember_context(platform, verified)
    platform.updated_at = utcnow()
    if created:
        await bump(session, org_id)
    if previous_cookie:  # this browser's earlier session in this partition
        await sessions.end_session(session, previous_cookie)
    role = Role.ADMIN if lti.is_admin(verified) else Role.MEMBER
    subject = member.email if len(member.email) <= 200 else str(member.id)
    grant = await sessions.session_for_caller(
        session,
        settings=settings,
        caller=Caller(subject=subject, role=role, org_id=org_id),
        email=member.email,
    )
    team_ids = list(
        (
            await session.scalars(
                select(TeamMembership.team_id)
                .where(
                    TeamMembership.organization_id == org_id,
                    TeamMembership.member_id == member.id,
                )
                .order_by(TeamMembership.created_at, TeamMembership.team_id)
            )
        ).all()
    )
    logger.info(
        "LTI launch: %s signed in to %s as %s%s",
        member.id,
        org_id,
        role.value,
        " (new member)" if created else "",
    )
    return Launched(
        grant=grant,
        platform=platform,
        member_id=member.id,
        team_ids=team_ids,
        role=role,
        frame_origin=launch_origin or frame_origin_of(platform),
    )


def frame_origin_of(platform: LtiPlatform) -> str:
    """The origin that may frame Questline when the launch's ``Origin`` is not known:
    that of the platform's login URL (Moodle's pages and login URL share it; Canvas
    posts launches from the school's own domain, which the launch's ``Origin`` names)."""
    return origin_of(platform.auth_login_url)
