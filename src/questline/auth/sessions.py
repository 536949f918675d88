"""The dashboard's sign-in: one-time sign-in codes, cookie sessions and CSRF.

* ``questline signin-link`` (and ``questline demo``) mint a **sign-in code**: random,
  one-time, valid ``QUESTLINE_SIGNIN_CODE_MINUTES`` (15). It travels in a URL fragment
  (``/ui/#code=…``), which browsers do not send to servers, so it stays out of logs.
* ``POST /auth/session`` exchanges a code (or an identity provider's ID token, or any
  token the service accepts as a bearer) for a **session**: the cookie
  ``questline_session`` — ``HttpOnly``, ``SameSite=Strict``, ``Secure`` when the service
  is reached over HTTPS, ``Path=/`` — valid ``QUESTLINE_SESSION_LIFETIME_HOURS`` (12).
* Writes made with the cookie need the session's **CSRF token** in ``X-CSRF-Token``
  (the dashboard reads it from ``GET /auth/session``; another site can neither read it
  nor send a custom header without a CORS preflight this service never grants) and, when
  the browser sends ``Origin``, an origin equal to the service's own.
* Bearer tokens keep working for the API: with an ``Authorization`` header the cookie
  is not looked at.

Codes and session ids are stored as SHA-256 digests; expired rows are purged whenever
a code is minted or a session created.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.auth.models import DashboardSession, SigninCode
from questline.config import Settings
from questline.storage.db import utcnow
from questline.storage.purging import delete_expired
from questline.storage.tenancy import finds_the_organization, sweeps_every_organization
from questline.web.errors import Forbidden, Unauthorized
from questline.web.identity import Caller, Role, Via

if TYPE_CHECKING:  # annotations only: the command line imports this without FastAPI
    from fastapi import Request, Response

SESSION_COOKIE = "questline_session"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
DASHBOARD_ROLES = frozenset({Role.MEMBER, Role.ADMIN})

DEACTIVATED = (
    "Your organization's directory has deactivated your account; ask its IT department "
    "to activate it again."
)

INVALID_CODE = (
    "This sign-in link is not valid: it was used already, has expired, or was never "
    "issued. Ask for a new one (`questline signin-link`)."
)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Grant:
    """A new session: the cookie value (shown once) and its row."""

    token: str
    row: DashboardSession


@sweeps_every_organization
async def _purge_expired(session: AsyncSession) -> None:
    await delete_expired(session, SigninCode.expires_at, DashboardSession.expires_at)


async def mint_signin_code(
    session: AsyncSession,
    *,
    settings: Settings,
    org_id: uuid.UUID,
    role: Role,
    subject: str,
    email: str | None = None,
    lifetime: dt.timedelta | None = None,
) -> str:
    """A new one-time sign-in code for ``subject`` in ``org_id`` (the code, once)."""
    if role not in DASHBOARD_ROLES:
        raise ValueError("sign-in links are for members and admins of an organization")
    await _purge_expired(session)
    code = secrets.token_urlsafe(32)
    now = utcnow()
    session.add(
        SigninCode(
            code_hash=digest(code),
            organization_id=org_id,
            role=role.value,
            subject=subject,
            email=email,
            created_at=now,
            expires_at=now + (lifetime or dt.timedelta(minutes=settings.signin_code_minutes)),
        )
    )
    await session.flush()
    return code


def signin_link(settings: Settings, code: str) -> str:
    """The dashboard URL that signs in with ``code`` (in the fragment: never logged):
    absolute on ``QUESTLINE_PUBLIC_URL``, else relative (``/ui/#code=…``) like every link
    of the service. The command line, which prints it for a person, names a public
    address first (``questline.cli.main``)."""
    return f"{(settings.public_url or '').rstrip('/')}/ui/#code={code}"


async def _new_session(
    session: AsyncSession,
    *,
    settings: Settings,
    org_id: uuid.UUID,
    role: Role,
    subject: str,
    email: str | None,
) -> Grant:
    await _purge_expired(session)
    token = secrets.token_urlsafe(32)
    now = utcnow()
    row = DashboardSession(
        id_hash=digest(token),
        organization_id=org_id,
        role=role.value,
        subject=subject,
        email=email,
        csrf_token=secrets.token_urlsafe(32),
        created_at=now,
        expires_at=now + dt.timedelta(hours=settings.session_lifetime_hours),
    )
    session.add(row)
    await session.flush()
    return Grant(token=token, row=row)


@finds_the_organization
async def exchange_code(session: AsyncSession, *, settings: Settings, code: str) -> Grant:
    """Spend a sign-in code (one time: deleted in the same statement that reads it)."""
    spent = (
        await session.execute(
            delete(SigninCode)
            .where(SigninCode.code_hash == digest(code.strip()))
            .returning(
                SigninCode.organization_id,
                SigninCode.role,
                SigninCode.subject,
                SigninCode.email,
                SigninCode.expires_at,
            )
        )
    ).one_or_none()
    if spent is None or spent.expires_at <= utcnow():
        raise Unauthorized(INVALID_CODE)
    await refuse_deactivated(session, org_id=spent.organization_id, email=spent.email)
    return await _new_session(
        session,
        settings=settings,
        org_id=spent.organization_id,
        role=Role(spent.role),
        subject=spent.subject,
        email=spent.email,
    )


async def session_for_caller(
    session: AsyncSession, *, settings: Settings, caller: Caller, email: str | None
) -> Grant:
    """A session for a verified token's caller (an identity provider's ID token)."""
    if caller.org_id is None or caller.role not in DASHBOARD_ROLES:
        raise Forbidden("The dashboard is for members and admins of an organization.")
    await refuse_deactivated(session, org_id=caller.org_id, email=email)
    return await _new_session(
        session,
        settings=settings,
        org_id=caller.org_id,
        role=caller.role,
        subject=caller.subject,
        email=email,
    )


async def refuse_deactivated(
    session: AsyncSession, *, org_id: uuid.UUID, email: str | None
) -> None:
    """No session for a member the organization's directory deactivated (SCIM)."""
    if email and await _is_deactivated(session, org_id=org_id, email=email):
        raise Unauthorized(DEACTIVATED)


async def end_sessions_of(session: AsyncSession, *, org_id: uuid.UUID, email: str) -> None:
    """Sign a person out everywhere: its sessions and unspent sign-in codes in the
    organization go. Every path that deactivates or deletes a member calls this, in the
    transaction of the change (SCIM PATCH/PUT/DELETE, a platform's roster)."""
    # Both sides lower-cased by the database, alike (SQLite's lower() folds ASCII only).
    key = func.lower(email.strip())
    for table in (DashboardSession, SigninCode):
        await session.execute(
            delete(table).where(table.organization_id == org_id, func.lower(table.email) == key)
        )


@finds_the_organization
async def find_session(session: AsyncSession, token: str) -> DashboardSession | None:
    """The live session of a cookie value, or None (unknown, expired, or its member
    deactivated).

    The member's state is read here too (one look-up on the members' unique
    ``(organization, e-mail)`` key): a session a deactivation path failed to end stops
    working on its next request all the same."""
    row = (
        await session.execute(
            select(DashboardSession).where(DashboardSession.id_hash == digest(token))
        )
    ).scalar_one_or_none()
    if row is None or row.expires_at <= utcnow():
        return None
    if row.email and await _is_deactivated(session, org_id=row.organization_id, email=row.email):
        return None
    return row


async def _is_deactivated(session: AsyncSession, *, org_id: uuid.UUID, email: str) -> bool:
    # Imported here: `questline signin-link` imports this module without the web stack.
    from questline.members.service import is_deactivated

    return await is_deactivated(session, org_id=org_id, email=email)


@finds_the_organization
async def end_session(session: AsyncSession, token: str) -> None:
    await session.execute(delete(DashboardSession).where(DashboardSession.id_hash == digest(token)))


def caller_of(row: DashboardSession) -> Caller:
    return Caller(
        subject=row.subject,
        role=Role(row.role),
        org_id=row.organization_id,
        email=row.email,
        via=Via.SESSION,
    )


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def check_csrf(request: Request, row: DashboardSession, settings: Settings) -> None:
    """A write made with the cookie: the CSRF header must match, and Origin (when sent)
    must be the service's own (the address it was reached at, or its public URL)."""
    if request.method in SAFE_METHODS:
        return
    sent = request.headers.get(CSRF_HEADER, "")
    if not hmac.compare_digest(sent.encode(), row.csrf_token.encode()):
        raise Forbidden(
            f"A change made with the dashboard's session cookie needs the session's CSRF "
            f"token in the {CSRF_HEADER} header (GET /auth/session returns it)."
        )
    check_origin(request, settings)


def check_origin(request: Request, settings: Settings) -> None:
    """A browser's ``Origin``, when sent, must be the service's own."""
    origin = request.headers.get("origin")
    if origin is not None:
        allowed = {_origin_of(str(request.base_url))}
        if settings.public_url:
            allowed.add(_origin_of(settings.public_url))
        if origin.lower() not in allowed:
            raise Forbidden(f"Cross-site request refused (Origin {origin!r}).")


def is_https(request: Request, settings: Settings) -> bool:
    public = (settings.public_url or "").lower()
    return request.url.scheme == "https" or public.startswith("https://")


def set_cookie(response: Response, request: Request, settings: Settings, grant: Grant) -> None:
    response.set_cookie(
        SESSION_COOKIE,
        grant.token,
        max_age=settings.session_lifetime_hours * 3600,
        path="/",
        secure=is_https(request, settings),
        httponly=True,
        samesite="strict",
    )


def clear_cookie(response: Response, request: Request, settings: Settings) -> None:
    response.delete_cookie(
        SESSION_COOKIE,
        path="/",
        secure=is_https(request, settings),
        httponly=True,
        samesite="strict",
    )
