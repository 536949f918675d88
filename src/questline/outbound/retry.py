"""How long a failed delivery waits before its next attempt."""

from __future__ import annotations

import datetime as dt
import random


def backoff(base_seconds: float, attempts: int) -> dt.timedelta:
    """The wait after the ``attempts``-th failed attempt: base, 2 x base, 4 x base, ...
    with 0 to 25 % jitter (so that deliveries failed together do not retry together)."""
    seconds = base_seconds * 2 ** max(attempts - 1, 0)
    return dt.timedelta(seconds=seconds * random.uniform(1.0, 1.25))
