"""How many answers one actor may send a minute (``QUESTLINE_ATTEMPTS_PER_MINUTE``),
counted from the stored attempts, so every process agrees.

An actor at its limit has its ``limit``-th latest attempt within the last minute; the
wait is until that one leaves the window. A batch reads, for each actor with ``k`` answers
in it, only the stored attempts that can be that one (``window``): the ``limit``-th to
the ``limit - k + 1``-th latest, since the batch's own answers are newer than any stored.
"""

from __future__ import annotations

import datetime as dt
import math

from questline.web.errors import TooManyRequests

RATE_WINDOW = dt.timedelta(seconds=60)


def window(limit: int, answers: int) -> tuple[int, int]:
    """(offset, count) of the stored attempts, latest first, that an actor's ``answers``
    answers of one batch may find at their limit."""
    count = min(answers, limit)
    return limit - count, count


def rate_refusal(
    limit_th: dt.datetime | None, *, now: dt.datetime, limit: int
) -> TooManyRequests | None:
    """429 with ``Retry-After`` when ``limit_th``, the actor's ``limit``-th latest
    attempt (None: it has fewer), is within the last minute."""
    if limit_th is None or limit_th <= now - RATE_WINDOW:
        return None
    wait = max(1, math.ceil((limit_th + RATE_WINDOW - now).total_seconds()))
    return TooManyRequests(
        f"At most {limit} answers a minute from one member; retry in {wait} seconds.",
        headers={"Retry-After": str(wait)},
    )
