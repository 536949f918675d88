"""Many organizations (``bench.platform``): how many teams each one has, drawn from a
Zipf-like law, reproducibly from a seed.

Every organization gets one team; each of the others goes to organization ``i`` (0-based
rank) with probability proportional to ``(i + 1) ** -exponent``. With the default
exponent 0.85, 10,000 organizations and 1,000,000 teams, the largest has about 48,000
teams and the median about 35 (issue 30: the largest about 50,000, the median under
100); 500 organizations and 50,000 teams give about 4,500 and 40. Teams are numbered
consecutively, organization after organization (team ``n`` of the dataset's rules), so
the organizations' first team numbers are running sums of the sizes. Rank 0 is the
largest and, in the traffic (bench/harness/lua/platform.lua), the most requested.
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from bench.dataset.rules import Kind
from bench.dataset.sqlgen import ident

SIZE_EXPONENT = 0.85


@dataclass(frozen=True, slots=True)
class Tenants:
    org_ids: list[uuid.UUID]
    sizes: list[int]
    """Teams of each organization, by rank."""

    @property
    def teams(self) -> int:
        return sum(self.sizes)

    @property
    def firsts(self) -> list[int]:
        """The number of each organization's first team."""
        return [0, *itertools.accumulate(self.sizes)][:-1]

    def owner_rows(self) -> Iterator[tuple[int, uuid.UUID]]:
        """(team number, organization id) for every team."""
        n = 0
        for org_id, size in zip(self.org_ids, self.sizes, strict=True):
            for _ in range(size):
                yield n, org_id
                n += 1

    def org_of(self, team: int) -> int:
        """The rank of team number ``team``'s organization."""
        for rank, (first, size) in enumerate(zip(self.firsts, self.sizes, strict=True)):
            if first <= team < first + size:
                return rank
        raise ValueError(f"no team {team}")


def zipf_sizes(orgs: int, teams: int, *, seed: int, exponent: float = SIZE_EXPONENT) -> list[int]:
    """Teams per organization: one each, the rest drawn from the Zipf-like law."""
    if teams < orgs:
        raise ValueError("at least one team an organization")
    rng = random.Random(seed)
    weights = list(itertools.accumulate((rank + 1) ** -exponent for rank in range(orgs)))
    drawn = Counter(rng.choices(range(orgs), cum_weights=weights, k=teams - orgs))
    return [1 + drawn[rank] for rank in range(orgs)]


def tenants(orgs: int, teams: int, *, seed: int) -> Tenants:
    return Tenants(
        org_ids=[ident(Kind.ORGANIZATION, rank) for rank in range(orgs)],
        sizes=zipf_sizes(orgs, teams, seed=seed),
    )
