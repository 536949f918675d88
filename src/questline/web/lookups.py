"""One row of the caller's organization, or the 404 that says it is not there.

Every service's ``get_…`` reads a row by its id within one organization, optionally
locks it for a read-modify-write, and answers the same ``not_found`` problem when the
row is missing (or belongs to another organization: the two must look alike). Here,
so that the lock and the answer are written once.
"""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession

from questline.web.errors import not_found

T = TypeVar("T")


async def one_or_not_found(
    session: AsyncSession, query: Select[T], *, kind: str, for_update: bool = False
) -> T:
    """The row ``query`` selects, or ``not_found(kind)``.

    ``for_update`` locks the row (PostgreSQL) so that a version check, or a change
    computed from the row, sees the latest committed value; on SQLite writers already
    queue.
    """
    if for_update:
        query = query.with_for_update()
    found = await session.scalar(query)
    if found is None:
        raise not_found(kind)
    return found
