"""The e-mails, built with the standard ``email`` package: plain text and HTML.

Header safety: every value that comes from data (a member's given name, the
organization's name) passes ``one_line`` before it reaches a header, so a CR, LF or
any other control or separator character becomes a space and cannot start a header of
its own; the ``email`` package then quotes and encodes (RFC 2047) what is left.
Addresses go in as ``Address`` objects, which refuse anything but one address. In the
HTML part every value is escaped.
"""

from __future__ import annotations

import datetime as dt
import html
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from email import policy
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid, parseaddr

from questline.mail.models import MailKind

PRODUCT = "Questline"
LINE_BREAKING = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
"""Control (CR, LF, NUL, …), format, line and paragraph separators, and the rest that
must not reach a header."""


def one_line(value: str, *, limit: int = 200) -> str:
    """``value`` safe for a header: each control, format or separator character becomes a
    space, runs of spaces one, trimmed and cut to ``limit`` characters."""
    cleaned = "".join(
        " " if unicodedata.category(char) in LINE_BREAKING else char for char in value
    )
    return " ".join(cleaned.split())[:limit]


def sender_address(mail_from: str) -> str:
    """The envelope sender (the bare address) of ``QUESTLINE_MAIL_FROM``; ValueError when
    it is not one address."""
    if one_line(mail_from, limit=10_000) != mail_from.strip():
        raise ValueError("QUESTLINE_MAIL_FROM holds a line break or control character.")
    _, address = parseaddr(mail_from)
    if "@" not in address:
        raise ValueError(
            f"QUESTLINE_MAIL_FROM is not an address: {mail_from!r} "
            "(write it as 'Questline <questline@example.org>')."
        )
    return address


@dataclass(frozen=True, slots=True)
class Letter:
    """What one e-mail says, before it is a message."""

    kind: MailKind
    to_email: str
    to_name: str
    organization_name: str | None
    link: str
    valid_for: dt.timedelta
    signin_page: str
    """The dashboard's sign-in page, where a new link can be asked for."""


def _duration(span: dt.timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    if minutes % 60 == 0 and minutes >= 120:
        return f"{minutes // 60} hours"
    return "1 minute" if minutes == 1 else f"{minutes} minutes"


def _subject(letter: Letter, organization: str) -> str:
    if letter.kind is MailKind.INVITE:
        return f"{organization} invites you to {PRODUCT}"
    return f"Your {PRODUCT} sign-in link for {organization}"


def _paragraphs(letter: Letter, organization: str) -> tuple[str, str]:
    """The lead paragraph and the closing one (plain text; escaped for HTML)."""
    valid = _duration(letter.valid_for)
    if letter.kind is MailKind.INVITE:
        lead = (
            f"{organization} invites you to {PRODUCT}, where you follow your team's "
            "progress and the leaderboard. Open this link to sign in:"
        )
        close = (
            f"The link works once, within {valid}. Later, ask for a new link on the "
            f"sign-in page: {letter.signin_page}"
        )
    else:
        lead = f"Open this link to sign in to {PRODUCT} ({organization}):"
        close = (
            f"The link works once, within {valid}. If you did not ask for it, ignore this "
            "e-mail: nobody can use the link without your mailbox."
        )
    return lead, close


def _headed(
    mail_from: str,
    *,
    to_name: str,
    to_email: str,
    organization_name: str | None,
    subject: Callable[[str], str],
    now: dt.datetime,
) -> tuple[EmailMessage, str, str]:
    """A message to one person with all its headers, each one safe line (``subject`` is
    given the organization's name); and that person's and organization's names."""
    name = one_line(to_name, limit=100)
    organization = one_line(organization_name or "", limit=100) or "your organization"
    sender = sender_address(mail_from)
    message = EmailMessage(policy=policy.SMTP)
    message["From"] = one_line(mail_from, limit=500)
    # ``Address`` refuses anything but one address (a comma, a second address, a break).
    message["To"] = Address(display_name=name, addr_spec=to_email)
    message["Subject"] = one_line(subject(organization), limit=250)
    message["Date"] = format_datetime(now)
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    message["Auto-Submitted"] = "auto-generated"  # RFC 3834: no auto-replies to it
    return message, name, organization


def build(letter: Letter, *, mail_from: str, now: dt.datetime) -> EmailMessage:
    """The message for ``letter``, from ``mail_from`` (``QUESTLINE_MAIL_FROM``)."""
    message, name, organization = _headed(
        mail_from,
        to_name=letter.to_name,
        to_email=letter.to_email,
        organization_name=letter.organization_name,
        subject=lambda organization: _subject(letter, organization),
        now=now,
    )
    lead, close = _paragraphs(letter, organization)
    greeting = f"Hello {name}," if name else "Hello,"
    message.set_content(f"{greeting}\n\n{lead}\n\n{letter.link}\n\n{close}\n\n-- \n{PRODUCT}\n")
    e = html.escape
    message.add_alternative(
        "<!doctype html>\n<html><body>\n"
        f"<p>{e(greeting)}</p>\n<p>{e(lead)}</p>\n"
        f'<p><a href="{e(letter.link)}">{e(_link_label(letter))}</a></p>\n'
        f'<p style="color:#555">{e(close)}</p>\n'
        f"<p>{e(PRODUCT)}</p>\n</body></html>\n",
        subtype="html",
    )
    return message


def _link_label(letter: Letter) -> str:
    return "Accept the invitation and sign in" if letter.kind is MailKind.INVITE else "Sign in"


@dataclass(frozen=True, slots=True)
class Notice:
    """News for a member: a subject, plain text and a link to the dashboard."""

    to_email: str
    to_name: str
    organization_name: str | None
    subject: str
    text: str
    link: str


def build_notice(notice: Notice, *, mail_from: str, now: dt.datetime) -> EmailMessage:
    """The message for ``notice``; the same headers as ``build``."""
    message, name, organization = _headed(
        mail_from,
        to_name=notice.to_name,
        to_email=notice.to_email,
        organization_name=notice.organization_name,
        subject=lambda organization: f"{notice.subject} ({organization})",
        now=now,
    )
    greeting = f"Hello {name}," if name else "Hello,"
    message.set_content(
        f"{greeting}\n\n{notice.text}\n\n{notice.link}\n\n-- \n{PRODUCT} ({organization})\n"
    )
    e = html.escape
    paragraphs = "".join(f"<p>{e(part)}</p>\n" for part in notice.text.split("\n\n"))
    message.add_alternative(
        "<!doctype html>\n<html><body>\n"
        f"<p>{e(greeting)}</p>\n{paragraphs}"
        f'<p><a href="{e(notice.link)}">{e("Open " + PRODUCT)}</a></p>\n'
        f"<p>{e(PRODUCT)}</p>\n</body></html>\n",
        subtype="html",
    )
    return message
