"""Kueue's dominant resource share (DRS), the order fair sharing serves a cohort's heads in.

Follows kubernetes-sigs/kueue at ff69552e, pkg/cache/scheduler/fair_sharing.go
(dominantResourceShare, CompareDRS), for a flat cohort: for each resource the queue would
use beyond its nominal quota with the head's usage added, the ratio of that excess to what
the cohort can lend of the resource (the cohort's potential available: the sum of its members'
lendable quota), times 1000; the largest ratio is the queue's share, divided by its
`spec.fairSharing.weight`. A queue that borrows nothing has share 0; a queue with weight 0
that borrows ranks after every other. A queue outside any cohort has share 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from autoscaler.sim.quota import ClusterQueue, Ledger


@dataclass(frozen=True)
class DominantResourceShare:
    weight: float
    unweighted_ratio: float  # per mille of the cohort's lendable quota
    resource: str  # the dominant resource; "" when not borrowing
    borrowed: frozenset[str]  # resources used beyond nominal quota

    @property
    def weighted(self) -> float:
        """PreciseWeightedShare: +inf for a borrowing queue with weight 0."""
        if self.unweighted_ratio == 0:
            return 0.0
        return math.inf if self.weight == 0 else self.unweighted_ratio / self.weight

    @property
    def sort_key(self) -> tuple[int, float]:
        """Lower is served first (CompareDRS): zero-weight borrowers last, among themselves
        by unweighted ratio."""
        if self.weight == 0 and self.unweighted_ratio != 0:
            return (1, self.unweighted_ratio)
        return (0, self.weighted)

    def borrowing_on(self, requested: Mapping[str, int]) -> bool:
        """DRS.IsBorrowingOn: borrowing on a resource the head requests."""
        return any(requested.get(resource, 0) > 0 for resource in self.borrowed)


def dominant_resource_share(
    book: Ledger, cq: ClusterQueue, added: Mapping[str, int]
) -> DominantResourceShare:
    """The queue's share with `added` usage on top of what it holds now."""
    if cq.cohort is None:
        return DominantResourceShare(cq.fair_weight, 0.0, "", frozenset())
    borrowed = {
        resource: excess
        for resource, quota in cq.quotas.items()
        if (excess := added.get(resource, 0) + book.used(cq.name, resource) - quota.nominal) > 0
    }
    ratio, dominant = 0.0, ""
    for resource, excess in sorted(borrowed.items()):
        lendable = _cohort_lendable(book, cq.cohort, resource)
        if lendable > 0 and (share := excess * 1000.0 / lendable) > ratio:
            ratio, dominant = share, resource
    return DominantResourceShare(cq.fair_weight, ratio, dominant, frozenset(borrowed))


def _cohort_lendable(book: Ledger, cohort: str, resource: str) -> int:
    """calculateLendable on the cohort root: its SubtreeQuota, the members' lendable quota."""
    return sum(
        member.quotas[resource].lendable
        for member in book.cohort_members(cohort)
        if resource in member.quotas
    )
