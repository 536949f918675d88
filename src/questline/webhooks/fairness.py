"""How many webhook attempts a dispatcher may have in flight, and for whom.

Three bounds, all per process: every attempt (``webhooks_concurrency``), one
organization's (``webhooks_concurrency_per_organization``) and one receiving host's
(``webhooks_concurrency_per_host``, the URL's host name whatever the organization). The
dispatcher claims a delivery only when a slot of all three is free and starts its
attempt at once, so a claimed delivery never waits behind another organization's slow
receivers, and a receiver that accepts connections and never answers holds at most its
organization's and its host's share of the sends until the attempt's timeout.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import TypeVar

from questline.config import Settings

K = TypeVar("K")


@dataclass
class Slots:
    total: int
    per_organization: int
    per_host: int
    organizations: Counter[uuid.UUID] = field(default_factory=Counter)
    hosts: Counter[str] = field(default_factory=Counter)
    host_webhooks: dict[str, Counter[uuid.UUID]] = field(default_factory=dict)
    """For each host with attempts in flight: its webhooks in flight (to leave the
    webhooks of a full host out of the claim query)."""
    in_flight: int = 0

    @classmethod
    def of(cls, settings: Settings) -> Slots:
        return cls(
            total=max(settings.webhooks_concurrency, 1),
            per_organization=settings.webhooks_concurrency_per_organization,
            per_host=settings.webhooks_concurrency_per_host,
        )

    def room(self) -> int:
        return max(self.total - self.in_flight, 0)

    def organization_full(self, organization_id: uuid.UUID) -> bool:
        return self.organizations[organization_id] >= self.per_organization

    def host_full(self, host: str) -> bool:
        return self.hosts[host] >= self.per_host

    def full_organizations(self) -> set[uuid.UUID]:
        return {o for o, n in self.organizations.items() if n >= self.per_organization}

    def webhooks_of_full_hosts(self) -> set[uuid.UUID]:
        return {
            webhook
            for host, n in self.hosts.items()
            if n >= self.per_host
            for webhook in self.host_webhooks.get(host, ())
        }

    def take(self, organization_id: uuid.UUID, host: str, webhook_id: uuid.UUID) -> None:
        self.in_flight += 1
        self.organizations[organization_id] += 1
        self.hosts[host] += 1
        self.host_webhooks.setdefault(host, Counter())[webhook_id] += 1

    def give_back(self, organization_id: uuid.UUID, host: str, webhook_id: uuid.UUID) -> None:
        self.in_flight -= 1
        _decrement(self.organizations, organization_id)
        _decrement(self.hosts, host)
        webhooks = self.host_webhooks.get(host)
        if webhooks is not None:
            _decrement(webhooks, webhook_id)
            if not webhooks:
                del self.host_webhooks[host]


def _decrement(counter: Counter[K], key: K) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]
