"""Queueing e-mail in the caller's transaction, and the rule that mail is configured.

Nothing here talks to an SMTP server: the request writes outbox rows and returns;
``questline.mail.dispatcher`` sends them after the commit (never inside a request).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import audit, events
from questline.config import Settings
from questline.mail.messages import sender_address
from questline.mail.models import MailJob, MailKind, MailStatus
from questline.mail.smtp import SmtpServer
from questline.members.models import Member
from questline.members.service import email_key
from questline.storage.db import new_id, utcnow
from questline.storage.many_rows import one_of
from questline.web.errors import NotConfigured

MAIL_TOPIC = "mail"
"""``events.on_committed``'s topic of a commit that queued mail: it wakes the sender,
which other commits (every progress write's event) do not."""


class MailNotConfigured(NotConfigured):
    slug, title = "mail-not-configured", "E-mail is not configured"


def configured_public_url(settings: Settings) -> str | None:
    """``QUESTLINE_PUBLIC_URL`` when it was set, else None.

    An e-mail is read on another machine: its link must be absolute and lead to this
    service. The built-in default (``http://127.0.0.1:8000``) would lead the reader's
    browser to their own computer, so mail is not sent on a guessed address."""
    if "public_url" not in settings.model_fields_set:
        return None
    url = settings.public_url
    return url.rstrip("/") if url else None


def missing_settings(settings: Settings) -> list[str]:
    """The settings e-mail needs and lacks, by name."""
    missing = []
    if not settings.smtp_url:
        missing.append("QUESTLINE_SMTP_URL")
    if not settings.mail_from:
        missing.append("QUESTLINE_MAIL_FROM")
    if configured_public_url(settings) is None:
        missing.append("QUESTLINE_PUBLIC_URL")
    return missing


def check_settings(settings: Settings) -> None:
    """Raise ``ValueError`` (for the start-up) when the mail settings given are unusable;
    settings left unset are fine (mail is then off)."""
    SmtpServer.of(settings)
    if settings.mail_from:
        sender_address(settings.mail_from)


def require_mail(settings: Settings) -> None:
    """409 (``mail-not-configured``) naming what to set, when e-mail cannot be sent."""
    missing = missing_settings(settings)
    if missing:
        raise MailNotConfigured(
            "This service sends no e-mail: set "
            + ", ".join(missing)
            + " (docs/operations.md, 'E-mail'). Meanwhile an operator can mint a sign-in "
            "link with `questline signin-link --org <ORG> --role member --email <E-MAIL>`."
        )


async def queue_signin_link(session: AsyncSession, *, org_id: uuid.UUID, email: str) -> None:
    """Queue a sign-in link for ``email`` in ``org_id``: whether it is a member's is
    decided when it is sent, so that this costs the same for anyone's address."""
    await _queue(session, org_id, [(MailKind.SIGNIN_LINK, email.strip(), None)])


async def queue_invites(
    session: AsyncSession, *, org_id: uuid.UUID, member_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, uuid.UUID]:
    """Queue an invitation for each of these members of ``org_id`` (once per member; ids
    of no member, and deactivated members, who may not sign in, are left out): the
    queued message's id by member id. Each invitation is in the audit log
    (``member.invited``: the address and the message's id; the link is minted only when
    it is sent, and is never recorded)."""
    wanted = list(dict.fromkeys(member_ids))
    if not wanted:
        return {}
    found = await session.execute(
        select(Member.id, Member.email).where(
            Member.organization_id == org_id,
            one_of(session, Member.id, wanted),
            Member.active.is_not(False),
        )
    )
    emails = dict(found.all())
    queued = await _queue(
        session,
        org_id,
        [
            (MailKind.INVITE, emails[member_id], member_id)
            for member_id in wanted
            if member_id in emails
        ],
    )
    invited = {
        member_id: (email, mail_id)
        for (_, email, member_id), mail_id in queued
        if member_id is not None
    }
    await audit.record_many(
        session,
        organization_id=org_id,
        changes=[
            audit.Change(
                "member.invited", ("member", member_id), None, {"Email": email, "MailId": mail_id}
            )
            for member_id, (email, mail_id) in invited.items()
        ],
    )
    return {member_id: mail_id for member_id, (_, mail_id) in invited.items()}


def is_configured(settings: Settings) -> bool:
    """Whether this service sends e-mail (a notice is then queued; else it is not)."""
    return not missing_settings(settings)


async def queue_notice(
    session: AsyncSession,
    *,
    org_id: uuid.UUID,
    member: Member,
    subject: str,
    text: str,
    path: str,
) -> uuid.UUID:
    """Queue news for ``member`` (``subject``, plain ``text``, and a link to the
    dashboard's ``path``, e.g. ``#/my-team``); it is sent when the member is still
    active then. The caller decides whether mail is configured (``is_configured``)."""
    [(_, mail_id)] = await _queue(
        session,
        org_id,
        [(MailKind.NOTICE, member.email, member.id)],
        content={"Subject": subject, "Text": text, "Path": path},
    )
    return mail_id


async def _queue(
    session: AsyncSession,
    org_id: uuid.UUID,
    items: Sequence[tuple[MailKind, str, uuid.UUID | None]],
    *,
    content: dict[str, str] | None = None,
) -> list[tuple[tuple[MailKind, str, uuid.UUID | None], uuid.UUID]]:
    """Insert the rows (one statement); each item with its message's id."""
    if not items:
        return []
    now = utcnow()
    ids = [new_id() for _ in items]
    rows = [
        {
            "organization_id": org_id,
            "id": mail_id,
            "kind": kind,
            "email": email[:320],
            "member_id": member_id,
            "status": MailStatus.PENDING,
            "attempts": 0,
            "next_attempt_at": now,
            "created_at": now,
            "content": content,
        }
        for (kind, email, member_id), mail_id in zip(items, ids, strict=True)
    ]
    await session.execute(insert(MailJob), rows)
    # Wakes this process's sender right after the commit (and never for a rollback).
    events.note_recorded(session, MAIL_TOPIC)
    return list(zip(items, ids, strict=True))


def address_key(org_id: uuid.UUID, email: str) -> str:
    """The rate-limit key of an address in an organization (no address in the clear)."""
    return hashlib.sha256(f"{org_id}\0{email_key(email)}".encode()).hexdigest()[:32]
