"""Limits of ``POST /auth/signin-link``, on top of the writes limit every caller has.

Two counters, both checked before anything is queued: one per e-mail address in an
organization (nobody's mailbox is flooded, whoever asks) and one per client address
(one client cannot walk through addresses). They count members' and strangers'
addresses alike, so a refusal tells nothing about membership. The counters live where
the other limits do (``QUESTLINE_RATE_LIMIT_STORAGE``: memory, or Redis shared by every
process) and are off with them (``QUESTLINE_RATE_LIMIT_ENABLED=false``).
"""

from __future__ import annotations

import uuid
from functools import lru_cache

from fastapi import Request
from limits import RateLimitItem, parse

from questline.config import Settings
from questline.mail.service import address_key
from questline.web.errors import TooManyRequests
from questline.web.ratelimit import counter_storage, window_hit
from questline.web.state import app_state

_APP_KEY = "questline_mail_limits"


@lru_cache(maxsize=16)
def _item(text: str) -> RateLimitItem:
    return parse(text)


class SigninLimits:
    def __init__(self, settings: Settings) -> None:
        self.storage = counter_storage(settings)

    async def check(self, request: Request, *, org_id: uuid.UUID, email: str) -> None:
        """429 with ``Retry-After`` when either counter is spent (both are counted)."""
        settings = app_state(request).settings
        if not settings.rate_limit_enabled:
            return
        client = request.client.host if request.client else "unknown"
        hits = [
            (
                "signin-link-address",
                _item(settings.mail_signin_limit_per_address),
                address_key(org_id, email),
            ),
            ("signin-link-client", _item(settings.mail_signin_limit_per_client), client),
        ]
        for scope, item, key in hits:
            verdict = await window_hit(self.storage, item, scope, key)
            if not verdict.allowed:
                wait = verdict.reset_seconds
                whose = "for this address" if scope.endswith("address") else "from this client"
                raise TooManyRequests(
                    f"Too many sign-in links asked for {whose} ({item}); retry in {wait} s.",
                    headers={"Retry-After": str(wait)},
                )


def limits_of(request: Request) -> SigninLimits:
    """The application's counters (made on first use, kept on ``app.state``)."""
    found = getattr(request.app.state, _APP_KEY, None)
    if found is None:
        found = SigninLimits(app_state(request).settings)
        setattr(request.app.state, _APP_KEY, found)
    assert isinstance(found, SigninLimits)
    return found
