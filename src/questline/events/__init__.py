"""Events: the transactional outbox that feeds webhooks and the live leaderboard.

``record`` writes one row in the caller's transaction: a rolled-back change leaves
no event, and a committed one is never lost (it waits in the table until delivered).
"""

from questline.events.service import (
    announce_committed,
    note_recorded,
    on_committed,
    record,
    record_many,
)

__all__ = ["announce_committed", "note_recorded", "on_committed", "record", "record_many"]
