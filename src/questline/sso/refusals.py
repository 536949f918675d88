"""Why a login through the provider ends on the sign-in page: one code per reason.

The endpoint sends the browser to ``/ui/#/signin?sso-error=<code>``; the dashboard
(``frontend/src/views/sso.ts``) shows the message for the code, and docs/identity.md
lists them.
"""

from __future__ import annotations


class LoginRefused(Exception):
    """A login that ends on the sign-in page, with a reason code (``REASONS``)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        assert reason in REASONS, reason
        super().__init__(f"{reason}: {printable(detail)}" if detail else reason)
        self.reason = reason


REASONS: dict[str, str] = {
    "not-configured": "the organization has no (enabled) single sign-on",
    "provider-unreachable": "the provider's discovery document, keys or token endpoint "
    "could not be reached",
    "state": "the login is unknown, used already or expired (a replayed callback), or the "
    "organization's configuration changed since it started",
    "browser": "the callback came to another browser than the one that started the login",
    "provider-error": "the provider answered with an error (the person cancelled, or the "
    "provider refused)",
    "token": "the provider refused to exchange the code, or sent no ID token",
    "signature": "the ID token's signature does not verify with the provider's keys",
    "issuer": "the ID token names another issuer",
    "audience": "the ID token is for another client (aud/azp)",
    "expired": "the ID token has expired (or is not valid yet)",
    "nonce": "the ID token's nonce is not this login's",
    "invalid-token": "the ID token is malformed or misses a required claim",
    "email-unverified": "the provider does not say the e-mail address is verified",
    "email-domain": "the e-mail address is not of one of the organization's allowed domains",
    "deactivated": "the organization's directory (SCIM) has deactivated this member",
    "not-provisioned": "the organization's directory (SCIM) provisions its members and has "
    "not provisioned (or has deleted) this one",
    "email-missing": "the ID token carries no usable e-mail address",
    "misconfigured": "the stored client secret cannot be read (the signing secret changed)",
    "rate-limited": "too many requests from this client address to the login or callback "
    "(the rate limit of reads); the browser is told to wait and start again",
}


def printable(text: str, limit: int = 100) -> str:
    """A value from the request or the provider, fit for a log line (no line breaks or
    control characters, bounded)."""
    return "".join(c if c.isprintable() else "?" for c in text[:limit])
