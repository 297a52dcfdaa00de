"""ClusterQueue quotas and the arithmetic of borrowing within a cohort.

Quantities are integers in Kueue's canonical units: millicores for `cpu`, whole units for
everything else (GPUs, bytes, pods). One ResourceFlavor per ClusterQueue; its taints rule it
out for a pod set that does not tolerate them (`flavors.py`).

A queue's `preemption` policy is Kueue's `spec.preemption` (kueue apis/kueue/v1beta2
clusterqueue_types.go): which admitted workloads a pending one may evict, in its own queue
(`withinClusterQueue`) and from borrowers in its cohort (`reclaimWithinCohort`); the default
is Never for both, so a queue without the field never preempts. `fair_weight` is
`spec.fairSharing.weight` (default 1), used only when fair sharing is on.

Borrowing follows Kueue's flat-cohort rules:
- a queue's *guaranteed* quota is `nominal - lendingLimit` (0 without a lending limit) and is
  never lent; the rest of its nominal quota is *lendable* to the cohort;
- the cohort's pool is the sum of its members' lendable quota; a member draws from the pool
  whatever it uses beyond its guaranteed quota;
- `borrowingLimit` caps how far beyond its nominal quota a member may go.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from autoscaler.sim.flavors import Taint, Toleration

PODS = "pods"  # counted as a resource only by queues that cover it, as Kueue does


class QueueingStrategy(StrEnum):
    """How a queue treats a head workload that does not fit."""

    BEST_EFFORT_FIFO = "BestEffortFIFO"  # skip it: smaller workloads behind it may go first
    STRICT_FIFO = "StrictFIFO"  # wait for it: nothing behind it is admitted


class PreemptionPolicy(StrEnum):
    NEVER = "Never"
    LOWER_PRIORITY = "LowerPriority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "LowerOrNewerEqualPriority"
    ANY = "Any"


@dataclass(frozen=True)
class Preemption:
    """`spec.preemption`; `borrow_within_cohort`: its `borrowWithinCohort.policy` is
    LowerPriority (False: Never, the default), with `max_priority_threshold` its
    `maxPriorityThreshold` (None: no threshold)."""

    within_cluster_queue: PreemptionPolicy = PreemptionPolicy.NEVER
    reclaim_within_cohort: PreemptionPolicy = PreemptionPolicy.NEVER
    borrow_within_cohort: bool = False
    max_priority_threshold: int | None = None


@dataclass(frozen=True)
class ResourceQuota:
    nominal: int
    borrowing_limit: int | None = None  # None: may borrow all the cohort lends
    lending_limit: int | None = None  # None: lends all of its unused nominal quota

    @property
    def guaranteed(self) -> int:
        return 0 if self.lending_limit is None else self.nominal - self.lending_limit

    @property
    def lendable(self) -> int:
        return self.nominal - self.guaranteed


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    quotas: Mapping[str, ResourceQuota]  # the covered resources
    cohort: str | None = None  # spec.cohortName
    queueing_strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO
    flavor: str = "default-flavor"  # reported in podSetAssignments only
    preemption: Preemption = Preemption()
    fair_weight: float = 1.0  # spec.fairSharing.weight
    # The flavor's ResourceFlavor spec.nodeTaints and spec.tolerations (`flavors.py`).
    flavor_taints: tuple[Taint, ...] = ()
    flavor_tolerations: tuple[Toleration, ...] = ()

    @classmethod
    def from_nominal(
        cls, name: str, nominal: Mapping[str, int], *, cohort: str | None = None
    ) -> ClusterQueue:
        """A queue with these nominal quotas and no borrowing or lending limits."""
        quotas = {resource: ResourceQuota(amount) for resource, amount in nominal.items()}
        return cls(name=name, quotas=quotas, cohort=cohort)

    def charge(self, requests: Mapping[str, int], *, pods: int) -> dict[str, int]:
        """What admitting these requests would count against this queue."""
        charged = {resource: amount for resource, amount in requests.items() if amount > 0}
        if PODS in self.quotas:
            charged[PODS] = charged.get(PODS, 0) + pods
        return charged

    def uncovered(self, requests: Mapping[str, int]) -> tuple[str, ...]:
        """Requested resources this queue has no quota for (zero requests do not count)."""
        missing = (r for r, amount in requests.items() if amount > 0 and r not in self.quotas)
        return tuple(sorted(missing))


@dataclass(frozen=True)
class Shortfall:
    resource: str
    needed: int
    available: int

    @property
    def missing(self) -> int:
        return self.needed - self.available


@dataclass(frozen=True)
class Ledger:
    """Every queue's current usage, with the quota arithmetic over it."""

    queues: Mapping[str, ClusterQueue]
    usage: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def used(self, queue: str, resource: str) -> int:
        return self.usage.get(queue, {}).get(resource, 0)

    def borrowed(self, queue: str, resource: str) -> int:
        quota = self.queues[queue].quotas.get(resource)
        nominal = 0 if quota is None else quota.nominal
        return max(0, self.used(queue, resource) - nominal)

    def available(self, queue: str, resource: str) -> int:
        """How much more of `resource` the queue could admit right now."""
        cq = self.queues[queue]
        quota = cq.quotas.get(resource)
        if quota is None:
            return 0
        used = self.used(queue, resource)
        if cq.cohort is None:
            return max(0, quota.nominal - used)
        from_cohort = self._cohort_free(cq.cohort, resource)
        if quota.borrowing_limit is not None:
            drawn = max(0, used - quota.guaranteed)
            from_cohort = min(from_cohort, quota.lendable - drawn + quota.borrowing_limit)
        return max(0, quota.guaranteed - used) + max(0, from_cohort)

    def shortfalls(self, queue: str, charge: Mapping[str, int]) -> tuple[Shortfall, ...]:
        """The resources of `charge` that do not fit, in resource-name order."""
        gaps = (
            Shortfall(resource, amount, self.available(queue, resource))
            for resource, amount in sorted(charge.items())
        )
        return tuple(gap for gap in gaps if gap.missing > 0)

    def needs_borrowing(self, queue: str, charge: Mapping[str, int]) -> bool:
        quotas = self.queues[queue].quotas
        return any(
            self.used(queue, resource) + amount > quotas[resource].nominal
            for resource, amount in charge.items()
            if resource in quotas
        )

    def within_nominal(self, queue: str, resources: Iterable[str]) -> bool:
        """No usage above nominal quota in any of `resources` (kueue pkg/cache/scheduler/
        resource_node.go, IsWithinNominalInResources)."""
        quotas = self.queues[queue].quotas
        return all(
            self.used(queue, r) <= (quotas[r].nominal if r in quotas else 0) for r in resources
        )

    def potential_available(self, queue: str, resource: str) -> int:
        """The most the queue could ever hold with no usage anywhere (kueue resource_node.go,
        potentialAvailable): beyond it a workload never fits, preemption or not."""
        cq = self.queues[queue]
        quota = cq.quotas.get(resource)
        if quota is None:
            return 0
        if cq.cohort is None:
            return quota.nominal
        pool = sum(
            m.quotas[resource].lendable
            for m in self.cohort_members(cq.cohort)
            if resource in m.quotas
        )
        most = quota.guaranteed + pool
        if quota.borrowing_limit is not None:
            most = min(most, quota.nominal + quota.borrowing_limit)
        return most

    def discharged(self, queue: str, charge: Mapping[str, int]) -> Ledger:
        """A new ledger with `charge` taken off the queue's usage (a workload removed)."""
        return self.charged(queue, {resource: -amount for resource, amount in charge.items()})

    def charged(self, queue: str, charge: Mapping[str, int]) -> Ledger:
        """A new ledger with `charge` added to the queue's usage."""
        mine = dict(self.usage.get(queue, {}))
        for resource, amount in charge.items():
            mine[resource] = mine.get(resource, 0) + amount
        return Ledger(queues=self.queues, usage={**self.usage, queue: mine})

    def cohort_members(self, cohort: str) -> tuple[ClusterQueue, ...]:
        return tuple(cq for _, cq in sorted(self.queues.items()) if cq.cohort == cohort)

    def _cohort_free(self, cohort: str, resource: str) -> int:
        pool = 0
        drawn = 0
        for member in self.cohort_members(cohort):
            quota = member.quotas.get(resource)
            if quota is not None:
                pool += quota.lendable
                drawn += max(0, self.used(member.name, resource) - quota.guaranteed)
        return pool - drawn
