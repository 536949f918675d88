"""The read model's one table: a version per organization, bumped by every write."""

from __future__ import annotations

import uuid

from sqlalchemy import BigInteger, ForeignKey
from sqlalchemy.orm import Mapped, mapped_column

from questline.storage.db import Base


class ReadModelVersion(Base):
    """``version`` grows by one in every transaction that changes what the read model
    serves for the organization (leaderboards, graphs, overviews, team lists, team and
    discipline documents). The row lock taken by the increment orders the versions
    like the commits: version ``n`` is committed before ``n + 1`` is handed out."""

    __tablename__ = "readmodel_versions"

    organization_id: Mapped[uuid.UUID] = mapped_column(
        ForeignKey("organizations.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(BigInteger, default=0)
