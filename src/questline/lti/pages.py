"""The few pages the launch flow shows itself, inside the platform's iframe: a
refusal, the deep-linking picker, and the form that posts the picked link back.

Plain HTML without styles or scripts of their own (but the one auto-posting script,
allowed by its hash), each with a policy that lets only the platform frame it.
"""

from __future__ import annotations

import base64
import hashlib
import html
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from fastapi.responses import HTMLResponse

from questline.lti.refusals import REASONS, LaunchRefused

NONE = "'none'"


def _policy(*, frame: str | None, form_action: str = "'none'", script: str | None = None) -> str:
    parts = [
        "default-src 'none'",
        f"frame-ancestors {frame or NONE}",
        "base-uri 'none'",
        f"form-action {form_action}",
    ]
    if script is not None:
        parts.append(f"script-src '{script}'")
    return "; ".join(parts)


def frame_only(origin: str) -> str:
    """The policy of a response with nothing to show, framed by ``origin`` only."""
    return _policy(frame=origin)


def _page(title: str, body: str, *, status: int, policy: str) -> HTMLResponse:
    document = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<meta name=viewport content='width=device-width'><title>{html.escape(title)}</title>"
        f"</head><body>{body}</body></html>"
    )
    return HTMLResponse(
        document,
        status_code=status,
        headers={
            "Content-Security-Policy": policy,
            "Cache-Control": "no-store",
            "Referrer-Policy": "no-referrer",
        },
    )


def refusal(refused: LaunchRefused) -> HTMLResponse:
    """The page of a refused login or launch: what went wrong, in words, and its code."""
    reason = REASONS[refused.reason]
    body = (
        "<main><h1>Questline could not open</h1>"
        f"<p id=message>{html.escape(reason.message)}</p>"
        f"<p><small>Reason: <code id=reason>{html.escape(refused.reason)}</code></small></p>"
        "</main>"
    )
    return _page(
        "Questline could not open",
        body,
        status=reason.status,
        policy=_policy(frame=refused.frame_origin),
    )


@dataclass(frozen=True, slots=True)
class Choice:
    value: str
    label: str


def picker(
    *,
    ticket: str,
    action: str,
    disciplines: Sequence[tuple[uuid.UUID, str]],
    context_title: str | None,
    frame_origin: str,
) -> HTMLResponse:
    """The instructor's choice of what the course's new link opens."""
    options = "".join(
        f"<option value='{d_id}'>{html.escape(title)}</option>" for d_id, title in disciplines
    )
    course = f" to <em>{html.escape(context_title)}</em>" if context_title else ""
    body = (
        f"<main><h1>Add Questline{course}</h1>"
        f"<form method=post action='{html.escape(action)}'>"
        f"<input type=hidden name=ticket value='{html.escape(ticket)}'>"
        "<p><label><input type=radio name=choice value=leaderboard checked> "
        "The leaderboard</label></p>"
        "<p><label><input type=radio name=choice value=discipline> "
        "A discipline's leaderboard:</label> "
        f"<select name=discipline aria-label=Discipline>{options}</select></p>"
        "<p><label><input type=radio name=choice value=team> "
        "My team's progress (each learner sees their own team)</label></p>"
        "<p><button type=submit>Add the link</button></p></form></main>"
    )
    return _page(
        "Add Questline",
        body,
        status=200,
        policy=_policy(frame=frame_origin, form_action="'self'"),
    )


_AUTO_POST = "document.forms[0].submit();"
_AUTO_POST_HASH = (
    "sha256-" + base64.b64encode(hashlib.sha256(_AUTO_POST.encode()).digest()).decode()
)


def post_back(*, return_url: str, jwt: str, frame_origin: str, return_origin: str) -> HTMLResponse:
    """The signed deep-linking response, posted to the platform by the browser."""
    body = (
        f"<form method=post action='{html.escape(return_url)}'>"
        f"<input type=hidden name=JWT value='{html.escape(jwt)}'>"
        "<noscript><button type=submit>Continue</button></noscript></form>"
        f"<script>{_AUTO_POST}</script>"
    )
    return _page(
        "Returning to the course",
        body,
        status=200,
        policy=_policy(frame=frame_origin, form_action=return_origin, script=_AUTO_POST_HASH),
    )
