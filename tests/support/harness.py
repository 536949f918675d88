"""What a test reaches inside an application: the boundary's state and the domains'
objects the application keeps on ``app.state`` (each behind its own accessor in the
service), in one place for the tests."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

from fastapi import FastAPI

from questline.auth.authentication import Identity
from questline.auth.tokens import TokenService
from questline.config import Settings
from questline.events.fanout import Consumer
from questline.progress.group_commit import GroupCommit
from questline.readmodel.service import ReadModel
from questline.storage.db import Database
from questline.web.state import AppState


@dataclass
class AppHarness:
    app: FastAPI

    @property
    def state(self) -> AppState:
        state: AppState = self.app.state.questline
        return state

    @property
    def settings(self) -> Settings:
        return self.state.settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        self.state.settings = settings

    def configure(self, **changes: object) -> None:
        """Change settings of the running application (its settings are frozen: a copy)."""
        self.state.settings = self.settings.model_copy(update=changes)

    @property
    def db(self) -> Database:
        return self.state.db

    @property
    def cancelled_requests(self) -> set[asyncio.Future[None]]:
        return self.state.cancelled_requests

    @property
    def identity(self) -> Identity:
        identity: Identity = self.app.state.identity
        return identity

    @property
    def tokens(self) -> TokenService:
        return self.identity.tokens

    @property
    def known_orgs(self) -> set[uuid.UUID]:
        return self.identity.known_orgs

    @property
    def readmodel(self) -> ReadModel:
        readmodel: ReadModel = self.app.state.readmodel
        return readmodel

    @property
    def outbox_consumers(self) -> tuple[Consumer, ...]:
        """Every consumer of the outbox the application built (``outbox_consumers``)."""
        consumers: tuple[Consumer, ...] = self.app.state.outbox_consumers
        return consumers

    @property
    def progress_writes(self) -> GroupCommit:
        writes: GroupCommit = self.app.state.progress_writes
        return writes


def fast_lane_answers(*methods: str) -> float:
    """How many requests the fast lane of this process answered so far (of ``methods``,
    or of any)."""
    from questline.web.fastlane import ANSWERED

    return sum(
        sample.value
        for metric in ANSWERED.collect()
        for sample in metric.samples
        if sample.name.endswith("_total") and (not methods or sample.labels["method"] in methods)
    )
