"""One POST of statements to an LRS, and what its answer means for them."""

from __future__ import annotations

import asyncio
import base64
import enum
import json
from dataclasses import dataclass
from typing import Any

from questline import __version__
from questline.config import Settings
from questline.outbound import addresses, calls
from questline.xapi import sealing
from questline.xapi.models import LrsConnection
from questline.xapi.statements import XAPI_VERSION

ANSWER_BYTES = 2048
NOT_THE_STATEMENTS = frozenset({401, 403, 404, 405, 407, 408, 425, 429})
"""4xx answers about the connection, not the statements (wrong credentials or
endpoint, throttling): retried with backoff, never blamed on a statement."""


class Verdict(enum.Enum):
    STORED = "stored"
    """2xx: the LRS stored them (or already had them: same ids)."""
    REFUSED = "refused"
    """A 4xx about the statements: one of them is bad (send alone to find which)."""
    RETRY = "retry"
    """No answer, 5xx, or a 4xx about the connection: try again later."""


@dataclass(frozen=True, slots=True)
class Answer:
    verdict: Verdict
    status_code: int | None
    text: str | None
    """The start of the LRS's answer, or why there was none."""


def statements_url(endpoint: str) -> str:
    return endpoint.rstrip("/") + "/statements"


def authorization(settings: Settings, lrs: LrsConnection) -> str:
    """The ``Authorization`` header (``sealing.Unreadable`` when the secret is not)."""
    organization = str(lrs.organization_id)
    if lrs.token:
        return "Bearer " + sealing.unseal(settings, lrs.token, organization=organization)
    password = sealing.unseal(settings, lrs.password or "", organization=organization)
    pair = f"{lrs.username or ''}:{password}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


def verdict_of(status_code: int) -> Verdict:
    if 200 <= status_code < 300:
        return Verdict.STORED
    if 400 <= status_code < 500 and status_code not in NOT_THE_STATEMENTS:
        return Verdict.REFUSED
    return Verdict.RETRY


async def post_statements(
    http: calls.Caller,
    *,
    endpoint: str,
    authorization: str,
    statements: list[Any],
    seconds: float,
    allow_private: bool,
) -> Answer:
    """POST the statements (an array) to ``<endpoint>/statements``. The credentials go
    in a header only: no message here or in the logs carries them."""
    body = json.dumps(statements, separators=(",", ":"), ensure_ascii=False).encode()
    headers = {
        "content-type": "application/json",
        "user-agent": f"Questline-xAPI/{__version__}",
        "x-experience-api-version": XAPI_VERSION,
        "authorization": authorization,
    }
    try:
        async with asyncio.timeout(seconds):
            answer = await calls.post(
                http,
                statements_url(endpoint),
                content=body,
                headers=headers,
                allow_private=allow_private,
                read_at_most=ANSWER_BYTES,
            )
    except addresses.UnsafeUrl as exc:
        return Answer(Verdict.RETRY, None, str(exc)[:500])
    except TimeoutError:
        return Answer(Verdict.RETRY, None, "The LRS did not answer in time.")
    except calls.CallFailed as exc:
        return Answer(Verdict.RETRY, None, str(exc)[:500])
    text = answer.body.decode("utf-8", errors="replace")
    return Answer(verdict_of(answer.status_code), answer.status_code, text)
