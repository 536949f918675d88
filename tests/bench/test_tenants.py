"""bench.dataset.tenants: the platform benchmark's organizations, reproducible from a seed."""

from __future__ import annotations

import statistics

from bench.dataset.tenants import tenants, zipf_sizes


def test_the_same_seed_gives_the_same_organizations() -> None:
    assert zipf_sizes(500, 50_000, seed=30) == zipf_sizes(500, 50_000, seed=30)
    assert tenants(50, 2_000, seed=7) == tenants(50, 2_000, seed=7)


def test_another_seed_gives_other_sizes() -> None:
    assert zipf_sizes(500, 50_000, seed=30) != zipf_sizes(500, 50_000, seed=31)


def test_sizes_follow_the_law_of_the_issue() -> None:
    sizes = zipf_sizes(500, 50_000, seed=30)
    assert sum(sizes) == 50_000
    assert min(sizes) >= 1
    # a few large organizations, most of them small: the largest far above the median
    assert max(sizes) > 50 * statistics.median(sizes)
    assert statistics.median(sizes) < 100
    assert sizes[0] == max(sizes)  # rank 0 is the largest (and the most requested)


def test_teams_are_numbered_organization_after_organization() -> None:
    found = tenants(20, 500, seed=1)
    owners = list(found.owner_rows())
    assert [n for n, _ in owners] == list(range(500))
    for rank, (first, size) in enumerate(zip(found.firsts, found.sizes, strict=True)):
        assert {org for n, org in owners[first : first + size]} == {found.org_ids[rank]}
        assert found.org_of(first) == rank
        assert found.org_of(first + size - 1) == rank
    assert len(set(found.org_ids)) == 20
