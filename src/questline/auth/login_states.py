"""A sign-in under way at another party (an OpenID provider, a learning platform),
bound to the browser that started it, so that nobody can finish their own sign-in in
someone else's browser (login CSRF, RFC 6749 §10.12).

Starting one makes a ``state`` and a ``nonce`` for the other party and a secret for the
browser's cookie; the login's row keeps only the digests of the state and of that
secret. Finishing it spends the row of the state's digest once, and only with the cookie
of the browser that started it. There is one cookie per login under way, named after
its state, so two logins in two tabs or frames do not collide. Single sign-on
(``sso.flow``) and LTI (``lti.flow``) keep their own rows, cookie names and attributes;
these rules are theirs both.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from questline.auth import sessions

MAX_STATE = 200
"""A longer ``state`` was not made here (``token_urlsafe(32)`` is 43 characters)."""


@dataclass(frozen=True, slots=True)
class NewLogin:
    """What a login under way is made of: ``state``, ``nonce`` and ``browser`` (the
    cookie's value) leave; only the two digests are kept."""

    state: str
    state_hash: str
    nonce: str
    browser: str
    browser_hash: str


def new_login() -> NewLogin:
    state = secrets.token_urlsafe(32)
    browser = secrets.token_urlsafe(32)
    return NewLogin(
        state=state,
        state_hash=sessions.digest(state),
        nonce=secrets.token_urlsafe(32),
        browser=browser,
        browser_hash=sessions.digest(browser),
    )


def cookie_name(prefix: str, state_hash: str) -> str:
    """The browser's cookie of one login under way."""
    return prefix + state_hash[:16]


def state_hash_of(state: str) -> str | None:
    """The digest a login's row is kept under; None for a state no login made."""
    if not state or len(state) > MAX_STATE:
        return None
    return sessions.digest(state)


def same_browser(
    cookies: Mapping[str, str], *, prefix: str, state_hash: str, browser_hash: str
) -> bool:
    """Whether the browser sending ``cookies`` started the login (compared in constant
    time)."""
    browser = cookies.get(cookie_name(prefix, state_hash), "")
    return secrets.compare_digest(sessions.digest(browser), browser_hash)
