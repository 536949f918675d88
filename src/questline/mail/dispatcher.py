"""The sender: queued e-mail (``mail_outbox``) → SMTP, at least once, with retries.

Every server process runs one when mail is configured (``Postman.start`` in the app's
lifespan). A pass:

1. **Claim** due messages, oldest due first, as many as free sending slots
   (``QUESTLINE_MAIL_CONCURRENCY``), in one write transaction: ``FOR UPDATE SKIP
   LOCKED`` on PostgreSQL, so processes never take the same row; on SQLite the write
   transaction holds the database's one write lock. Claiming counts the attempt and
   moves ``next_attempt_at`` past the attempt's timeout (a lease): a process that dies
   mid-send leaves the message to be sent again once the lease is over.
   In the same transaction the recipient is decided: a sign-in link asked for an
   address that is no member's of the organization, or a member's the directory
   deactivated, is dropped here (nothing is sent, the row is deleted: the request was
   answered alike for all), an invitation of a member deleted or deactivated since it
   was queued is ``Skipped``, and for an active member a fresh one-time sign-in code is
   minted
   (``questline.auth.sessions.mint_signin_code``, the codes of ``questline
   signin-link``), so the outbox row itself never holds a secret.
2. **Send** each claimed message in a task of its own, outside any transaction,
   bounded by ``QUESTLINE_SMTP_TIMEOUT_SECONDS``.
3. **Record** the outcomes: accepted → ``Sent``; a 5xx refusal → ``Failed``; anything
   else (4xx, connection, timeout) waits ``base * 2^(attempts-1)`` (+0 to 25 % jitter)
   and is tried again, up to ``QUESTLINE_MAIL_MAX_ATTEMPTS``. A retry mints a new code:
   a code whose message never arrived is known to nobody and expires unused.

A commit that queued mail wakes this process's sender (``questline.events``' commit
signal); mail queued by other processes is found by polling every
``QUESTLINE_MAIL_POLL_SECONDS``: the outbox dispatcher (``outbound.outbox``) that
webhooks, xAPI and grades run too, with the mail kind (``Letters``). Requests never
wait for any of this.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

import aiosmtplib
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from questline import events
from questline.auth import sessions
from questline.config import Settings
from questline.mail import messages
from questline.mail.models import MailJob, MailKind, MailStatus
from questline.mail.service import MAIL_TOPIC, configured_public_url
from questline.mail.smtp import SmtpServer, is_permanent
from questline.members.models import Member
from questline.members.service import email_key
from questline.organizations.models import Organization
from questline.outbound import outbox, retry
from questline.outbound.fairness import Slots
from questline.outbound.outbox import Outbox, Slot, delete_settled
from questline.storage.db import Database, utcnow
from questline.web.identity import Role

logger = logging.getLogger("questline.mail")

LEASE_MARGIN = dt.timedelta(seconds=30)


def backoff(settings: Settings, attempts: int) -> dt.timedelta:
    """The wait after the ``attempts``-th failed attempt: base, 2 x base, 4 x base, ..."""
    return retry.backoff(settings.mail_retry_base_seconds, attempts)


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A claimed message, ready to send."""

    organization_id: uuid.UUID
    job_id: uuid.UUID
    recipient: str
    message: EmailMessage


@dataclass(frozen=True, slots=True)
class Outcome:
    outgoing: Outgoing
    error: str | None
    permanent: bool = False


def subject_of(member: Member) -> str:
    """Who a session from an e-mailed link is (shown in the dashboard, kept in audits)."""
    return member.email if len(member.email) <= 200 else f"member:{member.id}"


SMTP_HOST = "smtp"
"""The one receiving host of mail (the configured SMTP server)."""


class Letters:
    """The mail kind of outbound work (``outbound.outbox.Kind``): queued messages, one
    SMTP send an attempt."""

    name = "mail"

    def __init__(self, settings: Settings, db: Database) -> None:
        server = SmtpServer.of(settings)
        public_url = configured_public_url(settings)
        if server is None or not settings.mail_from or public_url is None:
            raise ValueError("mail is not configured (questline.mail.service.missing_settings)")
        self.settings = settings
        self.db = db
        self.server = server
        self.public_url = public_url
        self.sender = messages.sender_address(settings.mail_from)

    async def prepare(self) -> bool:
        return False

    def slot(self, outgoing: Outgoing) -> Slot:
        return Slot(outgoing.organization_id, SMTP_HOST, outgoing.job_id)

    async def send(self, outgoing: Outgoing) -> Outcome:
        try:
            await self.server.send(
                outgoing.message, sender=self.sender, recipient=outgoing.recipient
            )
        except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
            return Outcome(outgoing, _describe(exc), is_permanent(exc))
        return Outcome(outgoing, None)

    def crashed(self, outgoing: Outgoing, exc: Exception) -> Outcome:
        return Outcome(outgoing, f"Internal error: {type(exc).__name__}")

    async def close(self) -> None:
        return None

    def _locking(self, query: Any) -> Any:
        return query if self.db.is_sqlite else query.with_for_update(skip_locked=True)

    async def has_due(self, session: AsyncSession, now: dt.datetime, slots: Slots) -> bool:
        due = (MailJob.status == MailStatus.PENDING, MailJob.next_attempt_at <= now)
        return await session.scalar(select(MailJob.id).where(*due).limit(1)) is not None

    async def claim(
        self, session: AsyncSession, now: dt.datetime, slots: Slots, claimed: list[Outgoing]
    ) -> bool:
        room = slots.room()
        due = (MailJob.status == MailStatus.PENDING, MailJob.next_attempt_at <= now)
        lease = dt.timedelta(seconds=self.settings.smtp_timeout_seconds) + LEASE_MARGIN
        jobs = list(
            (
                await session.scalars(
                    self._locking(
                        select(MailJob).where(*due).order_by(MailJob.next_attempt_at).limit(room)
                    )
                )
            ).all()
        )
        names = await _organization_names(session, {job.organization_id for job in jobs})
        for job in jobs:
            outbox.lease(job, now, lease)
            job.last_attempt_at = now
            member = await _recipient(session, job)
            if member is None or member.active is False:
                await self._nobody(session, job, deactivated=member is not None)
                continue
            try:
                outgoing = await self._prepare(session, job, member, names.get(job.organization_id))
            except ValueError as exc:  # an address or name no message can carry
                job.status = MailStatus.FAILED
                job.last_error = f"Cannot build the message: {exc}"[:500]
                continue
            slots.take(outgoing.organization_id, SMTP_HOST, outgoing.job_id)
            claimed.append(outgoing)
        return bool(jobs) and len(jobs) >= room

    async def _nobody(self, session: AsyncSession, job: MailJob, *, deactivated: bool) -> None:
        """No member to write to (none, or one who may not sign in). A sign-in link asked
        for a stranger's or a deactivated member's address leaves nothing behind (the
        address was typed by anyone, and the two must look alike); an invitation of a
        member deleted or deactivated since stays, as Skipped, for the admin who sent it."""
        if job.kind is MailKind.SIGNIN_LINK:
            await session.delete(job)
        else:
            job.status = MailStatus.SKIPPED
            job.last_error = (
                "The member was deactivated: it may not sign in."
                if deactivated
                else "The member no longer exists."
            )

    async def _prepare(
        self, session: AsyncSession, job: MailJob, member: Member, organization: str | None
    ) -> Outgoing:
        if job.kind is MailKind.NOTICE:
            return self._notice(job, member, organization)
        invite = job.kind is MailKind.INVITE
        lifetime = (
            dt.timedelta(hours=self.settings.mail_invite_link_hours)
            if invite
            else dt.timedelta(minutes=self.settings.signin_code_minutes)
        )
        code = await sessions.mint_signin_code(
            session,
            settings=self.settings,
            org_id=job.organization_id,
            role=Role.MEMBER,
            subject=subject_of(member),
            email=member.email,
            lifetime=lifetime,
        )
        letter = messages.Letter(
            kind=job.kind,
            to_email=member.email,
            to_name=member.given_name,
            organization_name=organization,
            link=sessions.signin_link(self.settings, code),
            valid_for=lifetime,
            signin_page=f"{self.public_url}/ui/#/signin",
        )
        message = messages.build(letter, mail_from=self.settings.mail_from or "", now=utcnow())
        return Outgoing(job.organization_id, job.id, member.email, message)

    def _notice(self, job: MailJob, member: Member, organization: str | None) -> Outgoing:
        """News with a plain link to the dashboard: it mints no sign-in code."""
        content = job.content or {}
        path = str(content.get("Path") or "")
        notice = messages.Notice(
            to_email=member.email,
            to_name=member.given_name,
            organization_name=organization,
            subject=str(content.get("Subject") or "News"),
            text=str(content.get("Text") or ""),
            link=f"{self.public_url}/ui/{path}",
        )
        message = messages.build_notice(
            notice, mail_from=self.settings.mail_from or "", now=utcnow()
        )
        return Outgoing(job.organization_id, job.id, member.email, message)

    async def record(
        self, session: AsyncSession, outcomes: Sequence[Outcome], now: dt.datetime
    ) -> None:
        jobs = {
            job.id: job
            for job in (
                await session.scalars(
                    select(MailJob).where(
                        MailJob.organization_id.in_({o.outgoing.organization_id for o in outcomes}),
                        MailJob.id.in_([o.outgoing.job_id for o in outcomes]),
                    )
                )
            ).all()
        }
        for outcome in outcomes:
            job = jobs.get(outcome.outgoing.job_id)
            if job is not None:
                self._apply(job, outcome, now)

    def _apply(self, job: MailJob, outcome: Outcome, now: dt.datetime) -> None:
        if outcome.error is None:
            job.status = MailStatus.SENT
            job.sent_at = now
            job.last_error = None
            return
        job.last_error = outcome.error[:500]
        if outcome.permanent or job.attempts >= self.settings.mail_max_attempts:
            job.status = MailStatus.FAILED
            logger.warning(
                "e-mail failed for good after %s attempts: %s",
                job.attempts,
                job.last_error,
                extra={"mail_id": str(job.id), "organization_id": str(job.organization_id)},
            )
        else:
            job.next_attempt_at = now + backoff(self.settings, job.attempts)

    async def purge(self, session: AsyncSession, now: dt.datetime) -> None:
        await delete_settled(
            session, self.settings, now, MailJob.created_at, MailJob.status, MailStatus.PENDING
        )


class Postman(Outbox[Outgoing, Outcome]):
    """The mail outbox dispatcher (``outbound.outbox``), woken by the commits that
    queued mail (``MAIL_TOPIC``). Every process sends (no lock): mail queued here is
    sent from here at once."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.letters = Letters(settings, db)
        concurrency = settings.mail_concurrency
        super().__init__(
            self.letters,
            settings=settings,
            db=db,
            # One SMTP server, no organization's cap of its own: the sends in flight.
            slots=Slots.of(concurrency, per_organization=concurrency, per_host=concurrency),
            poll_seconds=settings.mail_poll_seconds,
            lock_name=None,
            logger=logger,
            listen=functools.partial(events.on_committed, topic=MAIL_TOPIC),
        )

    def start(self) -> None:
        super().start()
        logger.info("sending e-mail through %s", self.letters.server.describe())


def _describe(exc: BaseException) -> str:
    if isinstance(exc, aiosmtplib.SMTPResponseException):
        return f"The SMTP server answered {exc.code}: {exc.message}"
    if isinstance(exc, aiosmtplib.SMTPRecipientsRefused):
        return "The SMTP server refused the recipient: " + "; ".join(
            f"{e.code} {e.message}" for e in exc.recipients
        )
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def _recipient(session: AsyncSession, job: MailJob) -> Member | None:
    query = select(Member).where(Member.organization_id == job.organization_id)
    if job.member_id is not None:
        query = query.where(Member.id == job.member_id)
    else:
        query = query.where(Member.email_key == email_key(job.email))
    return (await session.scalars(query)).one_or_none()


async def _organization_names(
    session: AsyncSession, org_ids: set[uuid.UUID]
) -> dict[uuid.UUID, str | None]:
    if not org_ids:
        return {}
    rows = await session.execute(
        select(Organization.id, Organization.name).where(Organization.id.in_(org_ids))
    )
    return dict(rows.all())
