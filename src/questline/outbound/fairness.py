"""How many attempts a dispatcher may have in flight, and for whom.

Three bounds, all per process and per dispatcher: every attempt (for webhooks
``webhooks_concurrency``), one organization's (``webhooks_concurrency_per_organization``)
and one receiving host's (``webhooks_concurrency_per_host``, the URL's host name
whatever the organization). A *target* is what an attempt is sent for (a webhook, an
organization's LRS): the claim query leaves out the targets of full hosts. The
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

K = TypeVar("K")


@dataclass
class Slots:
    total: int
    per_organization: int
    per_host: int
    organizations: Counter[uuid.UUID] = field(default_factory=Counter)
    hosts: Counter[str] = field(default_factory=Counter)
    host_targets: dict[str, Counter[uuid.UUID]] = field(default_factory=dict)
    """For each host with attempts in flight: its targets in flight (to leave the
    targets of a full host out of the claim query)."""
    in_flight: int = 0

    @classmethod
    def of(cls, total: int, *, per_organization: int, per_host: int) -> Slots:
        return cls(total=max(total, 1), per_organization=per_organization, per_host=per_host)

    def room(self) -> int:
        return max(self.total - self.in_flight, 0)

    def organization_full(self, organization_id: uuid.UUID) -> bool:
        return self.organizations[organization_id] >= self.per_organization

    def host_full(self, host: str) -> bool:
        return self.hosts[host] >= self.per_host

    def full_organizations(self) -> set[uuid.UUID]:
        return {o for o, n in self.organizations.items() if n >= self.per_organization}

    def targets_of_full_hosts(self) -> set[uuid.UUID]:
        return {
            target
            for host, n in self.hosts.items()
            if n >= self.per_host
            for target in self.host_targets.get(host, ())
        }

    def targets_in_flight(self) -> set[uuid.UUID]:
        return {target for targets in self.host_targets.values() for target in targets}

    def take(self, organization_id: uuid.UUID, host: str, target_id: uuid.UUID) -> None:
        self.in_flight += 1
        self.organizations[organization_id] += 1
        self.hosts[host] += 1
        self.host_targets.setdefault(host, Counter())[target_id] += 1

    def give_back(self, organization_id: uuid.UUID, host: str, target_id: uuid.UUID) -> None:
        self.in_flight -= 1
        _decrement(self.organizations, organization_id)
        _decrement(self.hosts, host)
        targets = self.host_targets.get(host)
        if targets is not None:
            _decrement(targets, target_id)
            if not targets:
                del self.host_targets[host]


def _decrement(counter: Counter[K], key: K) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]
