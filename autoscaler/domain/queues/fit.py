"""Would Kueue admit this pending Workload? Its quota fit, as Kueue's "Cluster Queue" concept
page documents it (kueue.sigs.k8s.io/docs/concepts/cluster_queue: "Resource Groups",
"Flavors and borrowing semantics", "BorrowingLimit", "LendingLimit"), for flat cohorts only.

    fit(waiter, queues, freed) -> Fit   # outcome FITS / DOES_NOT_FIT / UNKNOWN, with a reason

`freed` is what stopping some admitted workloads would give back: per ClusterQueue, per
(flavor, resource). The model, per (flavor, resource):
- each resource group of the waiter's ClusterQueue gets one flavor: the first, in the
  queue's order, where every requested resource of the group fits (flavorFungibility's
  default `whenCanBorrow: Borrow`: a fit by borrowing stops the search); a requested resource
  no group covers never fits;
- without a cohort, the queue has its unused nominal quota;
- in a cohort, each ClusterQueue keeps `nominal - lendingLimit` for itself (nothing without a
  lending limit) and lends the rest to the cohort's pool; usage beyond the kept part draws on
  the pool. The queue has its own unused kept part plus the pool's free part, and never more
  than `nominal + borrowingLimit` in all.
The waiter's requests are summed over its pod sets and fitted as one: when the sum fits,
Kueue fits each pod set too, so the model errs towards "does not fit", never towards freeing
in vain. Preemption, fair sharing, hierarchical cohorts and other flavor fungibility are not
modelled: the adapter marks such queues `unmodelled`, and their fit is UNKNOWN.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from autoscaler.domain.queues.facts import (
    FlavorResource,
    QueueQuota,
    ResourceGroup,
    ResourceQuota,
    Waiter,
)

Freed = Mapping[str, Mapping[FlavorResource, int]]  # ClusterQueue -> (flavor, resource) -> qty
NOTHING_FREED: Freed = {}


class FitOutcome(StrEnum):
    FITS = "fits"
    DOES_NOT_FIT = "does not fit"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Fit:
    """The outcome, why, and for a fit: the flavor of each requested resource and how much of
    each (flavor, resource) the admission would borrow beyond the queue's nominal quota."""

    outcome: FitOutcome
    reason: str
    flavors: Mapping[str, str] = field(default_factory=dict)  # resource -> flavor
    borrowing: Mapping[FlavorResource, int] = field(default_factory=dict)

    @property
    def fits(self) -> bool:
        return self.outcome is FitOutcome.FITS

    def charge(self, requests: Mapping[str, int]) -> dict[FlavorResource, int]:
        """What the admission would charge its ClusterQueue, per (flavor, resource)."""
        return {(flavor, name): requests[name] for name, flavor in self.flavors.items()}


def quota_of(queue: QueueQuota, key: FlavorResource) -> ResourceQuota | None:
    """The queue's quota for one (flavor, resource); None where the queue does not define it."""
    flavor, resource = key
    for group in queue.groups:
        for quotas in group.flavors:
            if quotas.flavor == flavor and resource in quotas.resources:
                return quotas.resources[resource]
    return None


def fit(waiter: Waiter, queues: Mapping[str, QueueQuota], freed: Freed = NOTHING_FREED) -> Fit:
    """Whether `waiter` fits its ClusterQueue once `freed` is given back (see the module)."""
    queue = queues.get(waiter.cluster_queue)
    if queue is None:
        return Fit(FitOutcome.UNKNOWN, f"ClusterQueue {waiter.cluster_queue} is not known")
    ledger = _Ledger(queue, _cohort_of(queue, queues), freed)
    doubts = [f"ClusterQueue {q.name}: {why}" for q in ledger.members for why in q.unmodelled]
    if doubts:
        return Fit(FitOutcome.UNKNOWN, "; ".join(doubts))
    requests = {name: qty for name, qty in sorted(waiter.requests.items()) if qty > 0}
    covered = {name for group in queue.groups for name in group.covered}
    uncovered = [name for name in requests if name not in covered]
    if uncovered:
        return Fit(FitOutcome.DOES_NOT_FIT, f"{queue.name} does not cover {', '.join(uncovered)}")
    flavors: dict[str, str] = {}
    for group in queue.groups:
        wanted = {name: requests[name] for name in group.covered if name in requests}
        if wanted:
            chosen = _first_flavor(group, wanted, ledger)
            if isinstance(chosen, _NoFlavor):
                return Fit(FitOutcome.DOES_NOT_FIT, chosen.reason)
            flavors.update({name: chosen for name in wanted})
    return _fits(flavors, requests, ledger)


def _cohort_of(queue: QueueQuota, queues: Mapping[str, QueueQuota]) -> tuple[QueueQuota, ...]:
    if queue.cohort is None:
        return (queue,)
    others = (q for q in queues.values() if q.cohort == queue.cohort and q.name != queue.name)
    return (queue, *sorted(others, key=lambda q: q.name))


@dataclass(frozen=True)
class _NoFlavor:
    reason: str


def _first_flavor(
    group: ResourceGroup, wanted: Mapping[str, int], ledger: _Ledger
) -> str | _NoFlavor:
    misses: list[str] = []
    for quotas in group.flavors:
        shortfalls = [
            miss
            for name, qty in wanted.items()
            if (miss := ledger.shortfall((quotas.flavor, name), qty)) is not None
        ]
        if not shortfalls:
            return quotas.flavor
        misses.append("; ".join(shortfalls))
    return _NoFlavor("; ".join(misses) or "the resource group has no flavor")


def _fits(flavors: Mapping[str, str], requests: Mapping[str, int], ledger: _Ledger) -> Fit:
    borrowing = {
        (flavor, name): borrowed
        for name, flavor in flavors.items()
        if (borrowed := ledger.borrowing((flavor, name), requests[name])) > 0
    }
    by_flavor: dict[str, list[str]] = {}
    for name, flavor in flavors.items():
        by_flavor.setdefault(flavor, []).append(name)
    parts = [f"flavor {flavor} for {', '.join(names)}" for flavor, names in by_flavor.items()]
    lent = [f"{qty} {name} in {flavor}" for (flavor, name), qty in borrowing.items()]
    reason = "fits: " + "; ".join(parts) + (f", borrowing {', '.join(lent)}" if lent else "")
    return Fit(FitOutcome.FITS, reason, flavors, borrowing)


@dataclass(frozen=True)
class _Ledger:
    """Quota and usage, after the frees, of one ClusterQueue and its cohort's members."""

    queue: QueueQuota
    members: tuple[QueueQuota, ...]  # the queue first; only the queue without a cohort
    freed: Freed

    def used(self, member: QueueQuota, key: FlavorResource) -> int:
        given_back = self.freed.get(member.name, {}).get(key, 0)
        return max(0, member.usage.get(key, 0) - given_back)

    def available(self, key: FlavorResource, quota: ResourceQuota) -> int:
        used = self.used(self.queue, key)
        if self.queue.cohort is None:
            return max(0, quota.nominal - used)
        own = max(0, _kept(quota) - used)
        available = own + self._pool_free(key)
        if quota.borrowing_limit is not None:
            available = min(available, max(0, quota.nominal + quota.borrowing_limit - used))
        return available

    def _pool_free(self, key: FlavorResource) -> int:
        lent, drawn = 0, 0
        for member in self.members:
            quota = quota_of(member, key)
            if quota is not None:
                lent += quota.nominal - _kept(quota)
                drawn += max(0, self.used(member, key) - _kept(quota))
        return max(0, lent - drawn)

    def shortfall(self, key: FlavorResource, qty: int) -> str | None:
        """None when `qty` fits in this (flavor, resource), else why not, with the numbers."""
        flavor, name = key
        quota = quota_of(self.queue, key)
        if quota is None:
            return f"flavor {flavor} has no quota for {name}"
        available = self.available(key, quota)
        if qty <= available:
            return None
        return f"needs {qty} {name} in flavor {flavor}, {available} available: " + self._numbers(
            key, quota, available
        )

    def _numbers(self, key: FlavorResource, quota: ResourceQuota, available: int) -> str:
        used = self.used(self.queue, key)
        numbers = f"nominal {quota.nominal}, used {used}"
        if self.queue.cohort is None:
            return numbers + ", no cohort"
        unused = max(0, quota.nominal - used)
        numbers += f", cohort lends {max(0, available - unused)}"
        if unused > available:
            numbers += f", {unused - available} of its unused quota lent to the cohort"
        if quota.borrowing_limit is not None:
            numbers += f", borrowing limit {quota.borrowing_limit}"
        return numbers

    def borrowing(self, key: FlavorResource, qty: int) -> int:
        quota = quota_of(self.queue, key)
        nominal = quota.nominal if quota is not None else 0
        used = self.used(self.queue, key)
        return max(0, used + qty - nominal) - max(0, used - nominal)


def _kept(quota: ResourceQuota) -> int:
    """The part of the nominal quota a ClusterQueue never lends (its guaranteed part)."""
    if quota.lending_limit is None:
        return 0
    return max(0, quota.nominal - quota.lending_limit)
