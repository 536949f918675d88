"""The problem vocabulary: errors as RFC 9457 problem documents (``application/problem+json``).

Services raise a ``Problem`` subclass; ``questline.web.error_handlers`` turns every error,
including validation errors, unknown routes and crashes, into one problem document shape.
This module imports no web framework and no database library, so that any layer (the
services, the plumbing, the command line) can import it cheaply and without a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_TYPE_PATH = "/problems/"
"""Where the problem types live on the service (``questline.web.problems`` serves them)."""


def problem_type_base(public_url: str | None) -> str:
    """The one base of every problem document's ``type`` (the application's answers,
    the server's own 408/414/431/503, the API document's examples): the service's
    ``/problems/``, absolute on ``QUESTLINE_PUBLIC_URL`` when that is set, else a
    relative reference (RFC 9457 §3.1.1 allows one; it resolves against the address the
    answer came from)."""
    return (public_url or "").rstrip("/") + PROBLEM_TYPE_PATH


MAX_LISTED_ERRORS = 100
"""A problem document lists at most this many ``errors`` (the first ones) and then gives
their total as ``errorCount``, so that a large file of bad rows cannot make an answer many
times its own size."""


class FieldError(BaseModel):
    field: str
    message: str


class ProblemDocument(BaseModel):
    """The body of every error response."""

    model_config = ConfigDict(populate_by_name=True)

    type: str
    title: str
    status: int
    detail: str
    instance: str | SkipJsonSchema[None] = Field(
        default=None,
        description="The request's path; absent when the server refused the request before "
        "routing it (408, 414, 431, and 503 at its connection limit).",
    )
    request_id: str | None = Field(default=None, alias="requestId")
    errors: list[FieldError] | None = None
    error_count: int | None = Field(
        default=None,
        alias="errorCount",
        description="How many problems there were, when more than the listed ones.",
    )


class Problem(Exception):
    """An error that knows its HTTP status and becomes a problem document."""

    status = 500
    slug = "internal-error"
    title = "Internal server error"

    def __init__(
        self,
        detail: str,
        *,
        errors: Sequence[FieldError] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.error_count: int | None = None
        if errors is not None and len(errors) > MAX_LISTED_ERRORS:
            self.error_count = len(errors)
            errors = errors[:MAX_LISTED_ERRORS]
        self.errors = list(errors) if errors is not None else None
        self.headers = dict(headers or {})


class BadRequest(Problem):
    status, slug, title = 400, "malformed-request", "Malformed request"


class Unauthorized(Problem):
    status, slug, title = 401, "unauthorized", "Authentication required"

    def __init__(self, detail: str) -> None:
        super().__init__(detail, headers={"WWW-Authenticate": 'Bearer realm="questline"'})


class Forbidden(Problem):
    status, slug, title = 403, "forbidden", "Not allowed"


class NotFound(Problem):
    status, slug, title = 404, "not-found", "Not found"


class Conflict(Problem):
    status, slug, title = 409, "conflict", "Conflict"


class AlreadyCompleted(Conflict):
    slug, title = "already-completed", "The team already completed the task"


class NoAttemptsLeft(Conflict):
    slug, title = "no-attempts-left", "No attempts left"


class Locked(Conflict):
    slug, title = "locked", "The level is locked"


class PreconditionFailed(Problem):
    status, slug, title = 412, "precondition-failed", "Precondition failed"


class RequestTimeout(Problem):
    status, slug, title = 408, "request-timeout", "Request timeout"


class PayloadTooLarge(Problem):
    status, slug, title = 413, "payload-too-large", "Payload too large"


class UnsupportedMediaType(Problem):
    status, slug, title = 415, "unsupported-media-type", "Unsupported media type"


class Unprocessable(Problem):
    status, slug, title = 422, "validation-error", "Invalid input"


class TooManyRequests(Problem):
    status, slug, title = 429, "rate-limited", "Too many requests"


class ServiceUnavailable(Problem):
    status, slug, title = 503, "service-unavailable", "Service unavailable"


class NotConfigured(Problem):
    """A write needs a facility this deployment has not set up (``detail`` names the
    setting). A 409, not a 503: nothing is down and no operator is paged for a client's
    choice; the same request succeeds once the setting is made."""

    status, slug, title = 409, "not-configured", "Not configured on this service"


class PublicUrlRequired(NotConfigured):
    """What must carry an absolute address (an xAPI activity's IRI) cannot be made on a
    guessed one: the operator names it (``QUESTLINE_PUBLIC_URL``)."""

    slug, title = "public-url-required", "The service's public address is not set"


def not_found(kind: str) -> NotFound:
    return NotFound(f"No {kind} with this id exists in your organization.")


def field_path(loc: Iterable[str | int]) -> str:
    """Where a validation error is, as a user reads it.

    ``("body", "Levels", 1, "Title")`` → ``Levels[1].Title``;
    ``("body", 3, "name")`` → ``[3].name``.
    """
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "body"


CONTROL_CHARACTERS_PATTERN = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
"""``web.schemas.PRINTABLE``: no control characters but tab and line breaks (PostgreSQL
refuses NUL in text); its refusals get a message a person can read."""


def _validation_message(error: Mapping[str, Any]) -> str:
    if error.get("type") == "extra_forbidden":
        return "Unknown field; it is not part of this request."
    ctx = error.get("ctx")
    if (
        error.get("type") == "string_pattern_mismatch"
        and isinstance(ctx, Mapping)
        and ctx.get("pattern") == CONTROL_CHARACTERS_PATTERN
    ):
        return "Control characters are not accepted (only tab and line breaks, in prose)."
    message = str(error.get("msg", "Invalid value"))
    return message.removeprefix("Value error, ")


def field_errors(raw: Iterable[Mapping[str, Any]]) -> list[FieldError]:
    """Pydantic's error list as ``FieldError`` entries (``[3].name``, ``Levels[1].Title``)."""
    return [FieldError(field=field_path(e["loc"]), message=_validation_message(e)) for e in raw]


def validation_problem(raw: Sequence[Mapping[str, Any]]) -> Problem:
    """The problem for pydantic's errors: 400 for a body that is not JSON, else 422
    naming the fields (the first ``MAX_LISTED_ERRORS`` of them, and their count)."""
    if any(error.get("type") == "json_invalid" for error in raw):
        ctx = next(e.get("ctx", {}) for e in raw if e.get("type") == "json_invalid")
        reason = ctx.get("error", "invalid JSON") if isinstance(ctx, dict) else "invalid JSON"
        return BadRequest(f"The body is not valid JSON: {reason}.")
    errors = field_errors(raw[:MAX_LISTED_ERRORS])
    names = ", ".join(dict.fromkeys(e.field for e in errors))
    problem = Unprocessable(f"Invalid input in: {names}.", errors=errors)
    if len(raw) > MAX_LISTED_ERRORS:
        problem.error_count = len(raw)
    return problem
