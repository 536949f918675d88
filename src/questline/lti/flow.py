"""The launch: third-party initiated login, then the ID token the platform posts back.

1. ``start_login`` (``/lti/login``): the platform names itself (``iss``, ``client_id``,
   ``lti_deployment_id``); a login row (state, nonce, target, the registration when the
   login names one unambiguously, the hash of a browser secret) goes into the database,
   the browser gets the secret in a short-lived partitioned cookie, and is sent to the
   platform's ``AuthLoginUrl`` (OIDC implicit flow, ``response_mode=form_post``).
2. ``spend_login`` (``/lti/launch``): the posted ``state`` spends that row, once
   (deleted in the statement that reads it, in a transaction of its own that commits
   whatever happens next: a replayed launch finds nothing), and the browser's cookie
   must be the login's (as single sign-on's ``state`` is bound to its browser). The
   nonce travels with the row, so it is spent with it.
3. ``launch_registration``: the registration whose key set verifies the ID token: the
   login's, else the one that registered the token's (not yet verified) deployment.
   ``claims.verify_launch`` then checks the token with that key set (no transaction is
   open while it is fetched).
4. ``sign_in``: the verified deployment must be that registration's, whose organization
   the launch enters only now; the member is found by e-mail, or by the platform's
   ``sub``; instructors and administrators become admins; the dashboard session starts
   as a sign-in link's does.

Every look-up of "which registration may this login or launch belong to" goes through
``registration_for``: several organizations may register one issuer and client id (one
Canvas developer key serves every school), so no look-up by issuer and client id alone
may pick one of them for a launch (docs/platforms.md, "Launch").
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from email_validator import EmailNotValidError, validate_email
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.auth import login_states, sessions
from questline.config import Settings
from questline.lti import claims as lti
from questline.lti.framing import ORIGIN
from questline.lti.models import LtiDeployment, LtiLoginState, LtiPerson, LtiPlatform
from questline.lti.refusals import LaunchRefused
from questline.members.models import Member, TeamMembership
from questline.members.service import audit_created, find_or_create
from questline.readmodel.versions import bump
from questline.storage import tenancy
from questline.storage.db import utcnow
from questline.storage.purging import delete_expired
from questline.storage.tenancy import finds_the_organization, sweeps_every_organization
from questline.web.identity import ACTING_CALLER, Caller, Role, Via

logger = logging.getLogger("questline.lti")

MAX_PARAMETER = 2048
LOGIN_COOKIE_PREFIX = "questline_lti_login_"
NO_EMAIL_DOMAIN = "lti.invalid"
"""Members known only by a platform's ``sub`` get ``<digest>@<platform>.lti.invalid``:
``.invalid`` is reserved (RFC 2606), so nothing is ever sent there."""


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def login_cookie_name(state_hash: str) -> str:
    """The cookie of one login under way (``auth.login_states``)."""
    return login_states.cookie_name(LOGIN_COOKIE_PREFIX, state_hash)


Bound = tuple[uuid.UUID, uuid.UUID]
"""A registration's primary key: ``(organization_id, platform_id)``."""


@dataclass(frozen=True, slots=True)
class LoginStart:
    redirect_url: str
    cookie_name: str
    cookie_value: str
    max_age: int


@dataclass(frozen=True, slots=True)
class SpentLogin:
    issuer: str
    client_id: str
    nonce: str
    target_link_uri: str
    bound: Bound | None
    """The registration the login named, if it named one unambiguously."""


@dataclass(frozen=True, slots=True)
class Launched:
    grant: sessions.Grant
    platform: LtiPlatform
    member_id: uuid.UUID
    team_ids: list[uuid.UUID]
    role: Role
    frame_origin: str


@sweeps_every_organization
async def _purge_expired(session: AsyncSession) -> None:
    await delete_expired(session, LtiLoginState.expires_at)


@finds_the_organization
async def _registrations(
    session: AsyncSession, *, issuer: str, client_id: str | None
) -> list[LtiPlatform]:
    """Every registration (of any organization) of an issuer (and client id)."""
    query = select(LtiPlatform).where(LtiPlatform.issuer == issuer)
    if client_id is not None:
        query = query.where(LtiPlatform.client_id == client_id)
    query = query.order_by(LtiPlatform.created_at, LtiPlatform.organization_id, LtiPlatform.id)
    return list((await session.scalars(query)).all())


def _deployment_of(platform: LtiPlatform, deployment_id: str) -> Any:
    return select(LtiDeployment.deployment_id).where(
        LtiDeployment.organization_id == platform.organization_id,
        LtiDeployment.platform_id == platform.id,
        LtiDeployment.issuer == platform.issuer,
        LtiDeployment.client_id == platform.client_id,
        LtiDeployment.deployment_id == deployment_id,
    )


@finds_the_organization
async def registration_for(
    session: AsyncSession,
    *,
    issuer: str,
    client_id: str | None,
    deployment_id: str | None,
    bound: Bound | None = None,
) -> LtiPlatform | None:
    """The one registration a login or launch may belong to, or None when several
    organizations registered the issuer and client id and nothing names one of them.

    * ``bound`` (the registration the login named): that one, as long as it still has
      the login's issuer and client id; a ``deployment_id`` must be one of its own.
    * else by ``deployment_id``: the registration that registered it for the issuer
      and client id (unique service-wide: at most one).
    * else the only registration of the issuer (and client id), if there is one.

    ``unknown-platform`` when no registration has the issuer (and client id) or a
    client id must be guessed; ``deployment`` when the deployment is not the
    registration's (or nobody's)."""
    if bound is not None:
        platform = await session.get(LtiPlatform, bound)
        if (
            platform is None
            or platform.issuer != issuer
            or (client_id is not None and platform.client_id != client_id)
        ):
            raise LaunchRefused("unknown-platform", issuer)
        if (
            deployment_id is not None
            and (await session.scalar(_deployment_of(platform, deployment_id))) is None
        ):
            raise LaunchRefused("deployment", deployment_id)
        return platform
    found = await _registrations(session, issuer=issuer, client_id=client_id)
    if not found or len({p.client_id for p in found}) > 1:
        # Several client ids of one issuer and no client_id sent: which one is unknown.
        raise LaunchRefused("unknown-platform", issuer)
    if deployment_id is not None:
        for platform in found:
            if await session.scalar(_deployment_of(platform, deployment_id)) is not None:
                return platform
        raise LaunchRefused("deployment", deployment_id)
    return found[0] if len(found) == 1 else None


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
    platform = await registration_for(
        session, issuer=issuer, client_id=client_id, deployment_id=deployment_id
    )
    if platform is not None:
        bound: Bound | None = (platform.organization_id, platform.id)
        chosen_client_id, login_url = platform.client_id, platform.auth_login_url
        # The login state is the registration's organization's row (row-level
        # security); it is read back only by the marked ``spend_login``.
        await tenancy.act_for(session, platform.organization_id)
    else:
        # Organizations sharing the issuer and client id, and no deployment named: the
        # launch's deployment will pick the registration. They must agree on where the
        # platform authenticates, or one of them would send the others' users elsewhere.
        shared = await _registrations(session, issuer=issuer, client_id=client_id)
        if len({p.auth_login_url for p in shared}) != 1:
            raise LaunchRefused("unknown-platform", f"{issuer}: lti_deployment_id needed")
        bound = None
        chosen_client_id, login_url = shared[0].client_id, shared[0].auth_login_url
    await _purge_expired(session)
    login = login_states.new_login()
    now = utcnow()
    lifetime = dt.timedelta(minutes=settings.lti_login_minutes)
    session.add(
        LtiLoginState(
            state_hash=login.state_hash,
            issuer=issuer,
            client_id=chosen_client_id,
            organization_id=bound[0] if bound else None,
            platform_id=bound[1] if bound else None,
            browser_hash=login.browser_hash,
            nonce=login.nonce,
            target_link_uri=target or default_target,
            created_at=now,
            expires_at=now + lifetime,
        )
    )
    await session.flush()
    query = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": chosen_client_id,
        "redirect_uri": redirect_uri,
        "login_hint": login_hint,
        "state": login.state,
        "nonce": login.nonce,
    }
    if message_hint is not None:
        query["lti_message_hint"] = message_hint
    separator = "&" if urlsplit(login_url).query else "?"
    return LoginStart(
        redirect_url=f"{login_url}{separator}{urlencode(query)}",
        cookie_name=login_cookie_name(login.state_hash),
        cookie_value=login.browser,
        max_age=int(lifetime.total_seconds()),
    )


@finds_the_organization
async def spend_login(
    session: AsyncSession, *, state: str, cookies: dict[str, str], launch_origin: str | None
) -> SpentLogin:
    """Spend the login of ``state``: once, only before it expires, and only in the
    browser that started it (its login cookie)."""
    state_hash = login_states.state_hash_of(state)
    if state_hash is None:
        raise LaunchRefused("state")
    spent = (
        await session.execute(
            delete(LtiLoginState)
            .where(LtiLoginState.state_hash == state_hash)
            .returning(
                LtiLoginState.issuer,
                LtiLoginState.client_id,
                LtiLoginState.organization_id,
                LtiLoginState.platform_id,
                LtiLoginState.browser_hash,
                LtiLoginState.nonce,
                LtiLoginState.target_link_uri,
                LtiLoginState.expires_at,
            )
        )
    ).one_or_none()
    if spent is None or spent.expires_at <= utcnow():
        raise LaunchRefused("state")
    bound = None
    if spent.organization_id is not None and spent.platform_id is not None:
        bound = (spent.organization_id, spent.platform_id)
    if not login_states.same_browser(
        cookies, prefix=LOGIN_COOKIE_PREFIX, state_hash=state_hash, browser_hash=spent.browser_hash
    ):
        # Shown inside the platform's frame (a browser that keeps no cookies there is
        # told to open a new window), so framable by the registration's origin.
        frame = await _login_frame_origin(
            session,
            issuer=spent.issuer,
            client_id=spent.client_id,
            bound=bound,
            launch_origin=launch_origin,
        )
        raise LaunchRefused("state-browser", frame_origin=frame)
    return SpentLogin(
        issuer=spent.issuer,
        client_id=spent.client_id,
        nonce=spent.nonce,
        target_link_uri=spent.target_link_uri,
        bound=bound,
    )


async def _login_frame_origin(
    session: AsyncSession,
    *,
    issuer: str,
    client_id: str,
    bound: Bound | None,
    launch_origin: str | None,
) -> str | None:
    """Who may frame the refusal page of a login's launch: its registration's origin
    (registrations sharing the login: the login URL they share)."""
    try:
        platform = await registration_for(
            session, issuer=issuer, client_id=client_id, deployment_id=None, bound=bound
        )
    except LaunchRefused:
        return None
    if platform is not None:
        return frame_origin_of(platform, launch_origin)
    shared = await _registrations(session, issuer=issuer, client_id=client_id)
    return origin_of(shared[0].auth_login_url) if shared else None


async def launch_registration(
    session: AsyncSession, *, login: SpentLogin, id_token: str
) -> LtiPlatform:
    """The registration whose key set must verify the launch: the login's, else (the
    login named none of the registrations sharing its issuer and client id) the one of
    the token's deployment, read before the signature is checked only to choose whose
    keys check it. Its organization is used only once that key set verified the token."""
    deployment = None if login.bound is not None else lti.unverified_deployment(id_token)
    platform = await registration_for(
        session,
        issuer=login.issuer,
        client_id=login.client_id,
        deployment_id=deployment,
        bound=login.bound,
    )
    if platform is None:  # not reached: a deployment id names at most one
        raise LaunchRefused("unknown-platform", login.issuer)
    return platform


async def verified_registration(
    session: AsyncSession, *, login: SpentLogin, verifier: LtiPlatform, verified: dict[str, Any]
) -> LtiPlatform:
    """The registration of a verified launch: the one whose key set verified it, which
    must hold the verified deployment."""
    platform = await registration_for(
        session,
        issuer=login.issuer,
        client_id=login.client_id,
        deployment_id=str(verified[lti.DEPLOYMENT_ID]),
        bound=(verifier.organization_id, verifier.id),
    )
    assert platform is not None  # bound: the registration or a refusal
    if platform.key_set_url != verifier.key_set_url:  # re-registered meanwhile
        raise LaunchRefused("signature", "key set changed during the launch")
    # Its key set verified the launch: the rest of the transaction acts for its
    # organization (row-level security), and for no other.
    await tenancy.act_for(session, platform.organization_id)
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
    frame_origin = frame_origin_of(platform, launch_origin)
    found = await member_of(session, platform=platform, person=person)
    member, created = found.member, found.created
    if member.active is False:  # the directory's word (or the roster's) wins: no session
        raise LaunchRefused("deactivated", frame_origin=frame_origin)
    _remember_context(platform, verified)
    platform.updated_at = utcnow()
    role = Role.ADMIN if lti.is_admin(verified) else Role.MEMBER
    if created:
        await _audit_created(session, platform=platform, member=member, role=role)
        await bump(session, org_id)
    if previous_cookie:  # this browser's earlier session in this partition
        await sessions.end_session(session, previous_cookie)
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
        frame_origin=frame_origin,
    )


async def _audit_created(
    session: AsyncSession, *, platform: LtiPlatform, member: Member, role: Role
) -> None:
    """A member made by a launch: recorded as every member creation is, the platform
    (its issuer, as single sign-on's provider) being the actor."""
    acting = session.info.get(ACTING_CALLER)
    session.info[ACTING_CALLER] = Caller(
        subject=platform.issuer[:255], role=role, org_id=platform.organization_id, via=Via.PROVIDER
    )
    try:
        await audit_created(session, member, LtiPlatformId=platform.id)
    finally:
        if acting is None:
            session.info.pop(ACTING_CALLER, None)
        else:
            session.info[ACTING_CALLER] = acting


def frame_origins_of(platform: LtiPlatform) -> list[str]:
    """The origins the registration names (its admin's word, never a request's): its
    login URL's, its issuer's, then its ``FrameOrigins``."""
    named = [origin_of(platform.auth_login_url), origin_of(platform.issuer)]
    named += [o.lower() for o in platform.frame_origins or []]
    return [o for o in dict.fromkeys(named) if ORIGIN.match(o)]


def frame_origin_of(platform: LtiPlatform, launch_origin: str | None) -> str:
    """The origin that may frame Questline after a launch: the launch's ``Origin`` when
    it is one of the registration's origins (``frame_origins_of``), else the login
    URL's. The request only chooses among what the registration names: any other
    origin (a page that posted a launch it got hold of) frames nothing."""
    allowed = frame_origins_of(platform)
    if launch_origin is not None and launch_origin.lower() in allowed:
        return launch_origin.lower()
    return allowed[0] if allowed else origin_of(platform.auth_login_url)
