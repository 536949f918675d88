"""Why a launch from a platform ends on a page of its own: one code per reason.

The browser's routes (``browser``) answer every refusal with a small HTML page that
names the reason (``pages.refusal``), never a JSON error and never a 5xx; docs/platforms.md
lists the codes.
"""

from __future__ import annotations

from dataclasses import dataclass


class LaunchRefused(Exception):
    """A login or launch that ends on the refusal page."""

    def __init__(self, reason: str, detail: str = "", *, frame_origin: str | None = None) -> None:
        assert reason in REASONS, reason
        super().__init__(f"{reason}: {printable(detail)}" if detail else reason)
        self.reason = reason
        self.frame_origin = frame_origin
        """The platform's origin once known: the page may show inside its iframe."""


@dataclass(frozen=True, slots=True)
class Reason:
    status: int
    message: str


REASONS: dict[str, Reason] = {
    "not-configured": Reason(
        400, "This Questline has no public address (QUESTLINE_PUBLIC_URL); ask its operator."
    ),
    "unknown-platform": Reason(
        400,
        "No organization registered this learning platform (issuer and client id), or "
        "several did and the login named no deployment (lti_deployment_id). An admin "
        "registers it with POST /lti/platform.",
    ),
    "login-request": Reason(400, "The platform's login request misses iss or login_hint."),
    "state": Reason(
        400,
        "This launch is unknown, used already or expired (a replayed or late launch). "
        "Open the link in your course again.",
    ),
    "state-browser": Reason(
        403,
        "This launch did not start in this browser, or the browser keeps no cookies inside "
        "the course's frame (Safari, or blocked third-party cookies). Open Questline in a "
        "new window from the course.",
    ),
    "platform-error": Reason(
        400, "The platform answered the login with an error (you may need to sign in to it)."
    ),
    "keys-unreachable": Reason(
        400, "The platform's public keys could not be fetched; try again in a moment."
    ),
    "signature": Reason(401, "The launch is not signed by the platform's keys."),
    "issuer": Reason(401, "The launch comes from another platform than the login did."),
    "audience": Reason(401, "The launch is meant for another tool (aud/azp)."),
    "expired": Reason(401, "The launch has expired (or is not valid yet). Open the link again."),
    "nonce": Reason(401, "The launch's nonce is not this login's (a replayed launch)."),
    "deployment": Reason(
        403,
        "This deployment of the tool is not registered for this platform's registration: "
        "an admin adds its deployment id to the platform's registration.",
    ),
    "invalid-token": Reason(
        400, "The launch is malformed: its LTI version, message type or claims are wrong."
    ),
    "deactivated": Reason(
        403,
        "Your organization's directory has deactivated your account; ask its IT "
        "department to activate it again.",
    ),
    "not-instructor": Reason(
        403, "Only instructors and administrators of the course can add Questline links."
    ),
    "deep-link": Reason(
        400, "This choice of link is unknown, used already or expired. Start again from the course."
    ),
}


def printable(text: str, limit: int = 100) -> str:
    """A value from the request or the platform, fit for a log line."""
    return "".join(c if c.isprintable() else "?" for c in text[:limit])
