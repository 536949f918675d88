"""What other domains call when a change touches progress.

The discipline domain calls ``before_tasks_removed`` before it deletes tasks (a whole
discipline on DELETE, or tasks left out of a PUT document).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession


async def before_tasks_removed(
    session: AsyncSession,
    *,
    discipline_id: uuid.UUID,
    task_ids: Sequence[uuid.UUID],
    force: bool,
) -> None:
    """Refuse (409 naming how many teams are affected) when teams completed any of
    ``task_ids``, unless ``force``; with ``force``, withdraw that progress first
    (negative steps in the score history, scores lowered).

    Until progress exists this has nothing to check.
    """
    return None
