"""Questline inside the platform's iframe: the launch's cookies and who may frame.

Browsers send a cookie to a page in a cross-site iframe only when it is
``SameSite=None; Secure``, and (Chrome, with third-party cookies phased out) when it
is ``Partitioned``: kept apart for each top-level site, so the session a launch starts
inside Moodle's page exists only under Moodle's page. The dashboard's own sign-ins keep
their ``SameSite=Strict`` cookie; writes made with either still need the session's CSRF
token (``auth.sessions.check_csrf``).

The dashboard's pages refuse every frame (``frame-ancestors 'none'``) unless the
request carries the **frame cookie** of a launch: the platform's origin, signed (HMAC
under a key derived from the service's signing secret) so that nothing but a launch
sets it. ``FrameAncestors`` reads it for ``SecurityHeadersMiddleware``, which then
allows that origin only (and drops ``X-Frame-Options``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Callable

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from fastapi import Response
from starlette.requests import cookie_parser
from starlette.types import Scope

from questline.auth import sessions
from questline.config import Settings

FRAME_COOKIE = "questline_lti_frame"
ORIGIN = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?$")
"""What may go into a ``frame-ancestors`` directive: scheme, host, port; nothing else."""
_CONTEXT = b"questline lti frame cookie v1"


def usable_origin(value: str | None, *, settings: Settings) -> str | None:
    """``value`` when it is a plain http(s) origin (http only when allowed)."""
    if value is None or not ORIGIN.match(value):
        return None
    if value.startswith("http://") and not settings.lti_allow_http:
        return None
    return value.lower()


class FrameAncestors:
    """The origin a request's frame cookie allows to frame the dashboard, or None."""

    def __init__(self, signing_secret: Callable[[], str]) -> None:
        self._signing_secret = signing_secret
        self._key: bytes | None = None

    def _mac(self, origin: str) -> str:
        if self._key is None:
            self._key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_CONTEXT).derive(
                self._signing_secret().encode()
            )
        digest = hmac.new(self._key, origin.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")

    def cookie_value(self, origin: str) -> str:
        return f"{origin}|{self._mac(origin)}"

    def origin_of(self, cookie: str) -> str | None:
        origin, _, mac = cookie.rpartition("|")
        if not origin or not ORIGIN.match(origin):
            return None
        return origin if hmac.compare_digest(mac, self._mac(origin)) else None

    def __call__(self, scope: Scope) -> str | None:
        for name, value in scope.get("headers", ()):
            if name == b"cookie":
                found = cookie_parser(value.decode("latin-1")).get(FRAME_COOKIE)
                if found:
                    return self.origin_of(found)
        return None


def _partitioned(response: Response) -> None:
    """Python before 3.14 cannot write the ``Partitioned`` attribute: appended to the
    cookie just set."""
    name, value = response.raw_headers[-1]
    assert name == b"set-cookie"
    response.raw_headers[-1] = (name, value + b"; Partitioned")


def _set(response: Response, name: str, value: str, max_age: int, *, path: str = "/") -> None:
    response.set_cookie(
        name, value, max_age=max_age, path=path, secure=True, httponly=True, samesite="none"
    )
    _partitioned(response)


LOGIN_COOKIE_PATH = "/lti/"
"""The login cookie goes back to ``/lti/launch`` only."""


def set_login_cookie(response: Response, *, name: str, value: str, max_age: int) -> None:
    """The cookie that ties a login's ``state`` to the browser: partitioned like the
    session's, so that the platform's iframe keeps it from the login to the launch."""
    _set(response, name, value, max_age, path=LOGIN_COOKIE_PATH)


def clear_login_cookie(response: Response, name: str) -> None:
    _set(response, name, "", 0, path=LOGIN_COOKIE_PATH)


def set_launch_cookies(
    response: Response,
    *,
    grant: sessions.Grant,
    frame_origin: str,
    settings: Settings,
    framing: FrameAncestors,
) -> None:
    max_age = settings.session_lifetime_hours * 3600
    _set(response, sessions.SESSION_COOKIE, grant.token, max_age)
    _set(response, FRAME_COOKIE, framing.cookie_value(frame_origin), max_age)


def frame_policy(origin: str | None) -> str:
    """The ``frame-ancestors`` source list of a page of the launch flow."""
    return origin if origin is not None else "'none'"
