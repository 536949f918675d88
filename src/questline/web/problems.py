"""The problem types: every `type` URI of a problem document resolves to a page here.

A problem document's `type` is `/problems/<slug>` (absolute on `QUESTLINE_PUBLIC_URL` when
that is set: ``questline.web.errors.problem_type_base``, the one base); `GET
/problems/<slug>` explains that problem (what it means, what to do) as a small HTML page,
and `GET /problems` lists them all. The catalogue is also what the OpenAPI document
names for each 4xx and 5xx response.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from questline.web.errors import NotFound, problem_type_base
from questline.web.state import app_state


@dataclass(frozen=True, slots=True)
class ProblemType:
    slug: str
    status: int
    title: str
    meaning: str
    remedy: str


CATALOGUE: tuple[ProblemType, ...] = (
    ProblemType(
        "malformed-request",
        400,
        "Malformed request",
        "The body could not be read: it is not valid JSON (or CSV), or it nests deeper "
        "than allowed.",
        "Send well-formed JSON (UTF-8) as the body; `detail` says where reading stopped.",
    ),
    ProblemType(
        "unauthorized",
        401,
        "Authentication required",
        "No valid credential came with the request: no `Authorization: Bearer <JWT>` "
        "header and no dashboard session, or the token is expired, forged, for another "
        "audience or issuer, or names no known role or organization.",
        "Send a valid token (`questline token create`), or sign in to the dashboard again "
        "(`questline signin-link`). The `WWW-Authenticate` header is set.",
    ),
    ProblemType(
        "forbidden",
        403,
        "Not allowed",
        "The caller is known but may not do this: writes need an admin of the "
        "organization, operators have no organization, and a change made with the "
        "dashboard's session cookie needs its CSRF token (`X-CSRF-Token`) from the "
        "service's own origin.",
        "Use a token with the needed role, or make the change from the dashboard.",
    ),
    ProblemType(
        "not-found",
        404,
        "Not found",
        "No such resource in the caller's organization. Another organization's ids, ids "
        "that are not UUIDs and unknown ids are answered alike.",
        "Check the id; list the collection to find it.",
    ),
    ProblemType(
        "request-timeout",
        408,
        "Request timeout",
        "The body did not arrive within the server's deadline "
        "(`QUESTLINE_SERVER_BODY_TIMEOUT_SECONDS`).",
        "Send the body at once, or over a faster connection; then retry.",
    ),
    ProblemType(
        "http-408",
        408,
        "Request timeout",
        "The request's headers did not arrive within the server's deadline "
        "(`QUESTLINE_SERVER_HEADER_TIMEOUT_SECONDS`); the server closed the connection.",
        "Send the whole head of the request at once; then retry on a new connection.",
    ),
    ProblemType(
        "http-404",
        404,
        "Not found",
        "There is no route at this path.",
        "Check the path against the API document at `/docs`.",
    ),
    ProblemType(
        "http-405",
        405,
        "Method not allowed",
        "The path exists but does not take this method; `Allow` lists those it takes.",
        "Use one of the methods in the `Allow` header.",
    ),
    ProblemType(
        "conflict",
        409,
        "Conflict",
        "The request conflicts with the current state: a team name already used in the "
        "organization (names ignore case), an archived team asked to take members or "
        "progress, or a discipline change that would remove completed tasks without "
        "`?force=true`.",
        "Read `detail`: choose another name, restore the team, or repeat with "
        "`?force=true` when withdrawing the teams' progress is meant.",
    ),
    ProblemType(
        "precondition-failed",
        412,
        "Precondition failed",
        "`If-Match` named an `ETag` that is no longer current: someone changed the "
        "resource since you read it. Nothing was changed.",
        "Read the resource again (new `ETag`), re-apply your change, and send it again.",
    ),
    ProblemType(
        "payload-too-large",
        413,
        "Payload too large",
        "The body is over the limit (5 MiB; 32 MiB for `/team/bulk`), or a bulk request "
        "has more teams than allowed.",
        "Send less at once, e.g. split a bulk upload into several requests.",
    ),
    ProblemType(
        "unsupported-media-type",
        415,
        "Unsupported media type",
        "The body was sent with a media type this operation does not read.",
        "Send `Content-Type: application/json` (or `text/csv` with UTF-8 where offered).",
    ),
    ProblemType(
        "http-414",
        414,
        "URI too long",
        "The request line or the query string is longer than the server takes "
        "(`QUESTLINE_SERVER_MAX_REQUEST_LINE_BYTES`, `QUESTLINE_SERVER_MAX_QUERY_BYTES`); "
        "the server closed the connection.",
        "Send shorter query parameters: page with `limit` and `after` rather than long lists.",
    ),
    ProblemType(
        "validation-error",
        422,
        "Invalid input",
        "The input was read but is not valid. `errors` lists each problem with the "
        "`field` a user reads (`name`, `tags[0]`, `Levels[1].Quests[0].Tasks[2].Title`, "
        "`[3].name`, `line 7: email`) and a `message`.",
        "Correct each field named in `errors`; nothing was written.",
    ),
    ProblemType(
        "http-431",
        431,
        "Request header fields too large",
        "A header line, or the headers together, are larger than the server takes "
        "(`QUESTLINE_SERVER_MAX_HEADER_LINE_BYTES`, `QUESTLINE_SERVER_MAX_HEADER_BYTES`); "
        "the server closed the connection.",
        "Send fewer or smaller headers (cookies included).",
    ),
    ProblemType(
        "rate-limited",
        429,
        "Too many requests",
        "The caller sent more requests than its share in the current window.",
        "Wait the seconds given in `Retry-After`; see the `RateLimit-*` headers.",
    ),
    ProblemType(
        "internal-error",
        500,
        "Internal server error",
        "Something unexpected failed. No stack trace is shown; the log has it under the "
        "request id.",
        "Retry later; report the `requestId` if it persists.",
    ),
    ProblemType(
        "service-unavailable",
        503,
        "Service unavailable",
        "The database is unreachable, the request ran out of time, or this server "
        "handles as many requests as it takes.",
        "Retry after the seconds given in `Retry-After`.",
    ),
    ProblemType(
        "already-completed",
        409,
        "The team already completed the task",
        "The task is complete for this team (maybe a teammate's answer arrived first); "
        "nothing was counted.",
        "Nothing to do: the completion is in `GET /team/{id}/progress`.",
    ),
    ProblemType(
        "no-attempts-left",
        409,
        "No attempts left",
        "The team used every attempt the task allows (`MaxAttempts`, counted for all its "
        "members together); this one was not counted.",
        "Ask an admin: they can record the task, or raise `MaxAttempts`.",
    ),
    ProblemType(
        "locked",
        409,
        "The level is locked",
        "The discipline is sequential and the task's level opens only once the team has "
        "completed every task of the previous level; `detail` names it. Nothing was "
        "changed.",
        "Complete the level named in `detail` first.",
    ),
    ProblemType(
        "not-configured",
        409,
        "Not configured on this service",
        "The operation needs a facility this deployment has not set up; `detail` names "
        "the setting. Nothing was changed.",
        "Ask the operator to make the setting named (docs/operations.md).",
    ),
    ProblemType(
        "submission-pending",
        409,
        "A submission is pending",
        "The team already has work waiting for review for this task (`detail` names the "
        "submission); a team has at most one pending submission a task.",
        "Wait for an admin to approve or reject it, then submit again if it was rejected.",
    ),
    ProblemType(
        "submission-decided",
        409,
        "The submission was decided",
        "The submission is approved or rejected already (perhaps by another admin a moment "
        "ago); a decision is made once.",
        "Read the submission (`GET /submission/{id}`) to see its state and comment.",
    ),
    ProblemType(
        "public-url-required",
        409,
        "The service's public address is not set",
        "The operation hands out absolute addresses of this service (xAPI activity IRIs, "
        "LTI and single sign-on callback URLs) "
        "and `QUESTLINE_PUBLIC_URL` is not set: the service never guesses its address "
        "from a request's `Host`. Nothing was changed.",
        "Set `QUESTLINE_PUBLIC_URL` to the address clients reach the service at and "
        "restart (docs/operations.md).",
    ),
    ProblemType(
        "mail-not-configured",
        409,
        "E-mail is not configured",
        "The operation sends e-mail (a sign-in link, an invitation) and this service has "
        "no SMTP server, no sender, or no public address to put in links; `detail` names "
        "the settings missing. Nothing was changed or queued.",
        "Set `QUESTLINE_SMTP_URL`, `QUESTLINE_MAIL_FROM` and `QUESTLINE_PUBLIC_URL` and "
        "restart (docs/operations.md); meanwhile `questline signin-link` mints links.",
    ),
    ProblemType(
        "http-503",
        503,
        "Service unavailable",
        "This server has as many open connections as it takes "
        "(`QUESTLINE_SERVER_MAX_CONNECTIONS`); it closed this one at once.",
        "Retry shortly on a new connection.",
    ),
)
BY_SLUG: dict[str, ProblemType] = {p.slug: p for p in CATALOGUE}


def slugs_for(status: int) -> list[str]:
    """The problem types a response with this status can carry."""
    return [p.slug for p in CATALOGUE if p.status == status]


def type_base(public_url: str | None) -> str:
    return problem_type_base(public_url)


def example_problem(public_url: str | None, status: int, instance: str = "/team") -> dict[str, Any]:
    """A valid problem document of this status, for the API document."""
    slug = next(iter(slugs_for(status)), f"http-{status}")
    known = BY_SLUG.get(slug)
    document: dict[str, Any] = {
        "type": type_base(public_url) + slug,
        "title": known.title if known else "Request failed",
        "status": status,
        "detail": known.meaning.split(":")[0].split(".")[0] + "." if known else "Failed.",
        "instance": instance,
        "requestId": "5f0c6c1e9a8b4d2f8e1a7b3c2d4e6f80",
    }
    if status == 422:
        document["errors"] = [
            {"field": "name", "message": "String should have at least 1 character"}
        ]
    return document


router = APIRouter(prefix="/problems", tags=["operations"], include_in_schema=False)

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;"
    "line-height:1.5;color:#1b1d28;background:#fff}code{background:#eceef5;padding:0 .2em}"
    "@media (prefers-color-scheme:dark){body{color:#e9eaf2;background:#121420}"
    "code{background:#262a3c}a{color:#b9a6ff}}"
)
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "Cache-Control": "public, max-age=3600",
}


def _code(text: str) -> str:
    """Escape, then show `backticked` spans as code."""
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} · Questline</title><style>{_STYLE}</style></head>"
        f"<body><main>{body}</main></body></html>",
        headers=_HEADERS,
    )


@router.get("")
async def list_problem_types() -> HTMLResponse:
    items = "".join(
        f'<li><a href="problems/{p.slug}">{p.slug}</a> ({p.status}): {html.escape(p.title)}</li>'
        for p in CATALOGUE
    )
    return _page(
        "Problem types",
        "<h1>Problem types</h1><p>Every error of the Questline API is an RFC 9457 problem "
        "document (<code>application/problem+json</code>) whose <code>type</code> is one "
        f"of these pages.</p><ul>{items}</ul>",
    )


@router.get("/{slug}")
async def explain_problem_type(slug: str, request: Request) -> HTMLResponse:
    problem = BY_SLUG.get(slug)
    if problem is None:
        raise NotFound(f"There is no problem type {slug!r}; GET /problems lists them.")
    # The URI documents carry, not the request's (whose host any client chooses).
    type_uri = problem_type_base(app_state(request).settings.public_url) + problem.slug
    return _page(
        problem.title,
        f'<p><a href="../problems">All problem types</a></p><h1>{html.escape(problem.title)}'
        f"</h1><p>HTTP status <strong>{problem.status}</strong> · type <code>"
        f"{html.escape(type_uri)}</code></p><h2>What it means</h2><p>"
        f"{_code(problem.meaning)}</p><h2>What to do</h2><p>{_code(problem.remedy)}</p>"
        "<p>The document also has <code>title</code>, <code>status</code>, <code>detail</code>"
        " (this occurrence), <code>instance</code> (the path) and <code>requestId</code> "
        "(also in <code>X-Request-Id</code>).</p>",
    )
