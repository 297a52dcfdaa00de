"""What the queues say, as plain values: quotas per ClusterQueue and the Workloads that
wait, and one read out of several queueing systems' (`merge_queue_facts`). The `PendingWork`
port reads them; `domain/queues/contention.py` judges whether freeing an idle workload would
let a waiter in.

Quantities are integers in Kueue's canonical units: millicores for `cpu`, bytes for memory,
whole units for everything else (GPUs, pods).

Kueue and KAI Scheduler may be read side by side. Each system's queues keep their own names
(KAI's are "kai/<queue>", which no Kueue ClusterQueue can be called), so their union is one
map and the planner never lets a waiter of one system be served by freeing a workload of the
other: their queues share no cohort. A failure of any source is the failure of the whole: the
planner then frees nothing for anyone, rather than judging one system's waiters while the
other's are unknown.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.queues.placement import ANY_NODE, ANYWHERE, FlavorNodes, Placement

FlavorResource = tuple[str, str]  # (ResourceFlavor name, resource name)


@dataclass(frozen=True)
class ResourceQuota:
    """One resource's quota in one flavor of a ClusterQueue (spec.resourceGroups)."""

    nominal: int
    borrowing_limit: int | None = None  # None: may borrow whatever the cohort lends
    lending_limit: int | None = None  # None: lends all of its unused nominal quota

    @property
    def kept(self) -> int:
        """The part of the nominal quota the ClusterQueue never lends (Kueue's localQuota)."""
        if self.lending_limit is None:
            return 0
        return max(0, self.nominal - self.lending_limit)


@dataclass(frozen=True)
class FlavorQuotas:
    flavor: str
    resources: Mapping[str, ResourceQuota]
    nodes: FlavorNodes = ANY_NODE  # the ResourceFlavor's node labels, taints and tolerations


@dataclass(frozen=True)
class ResourceGroup:
    """Resources admitted together, and the flavors Kueue tries for them, in order."""

    covered: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


TRY_NEXT_FLAVOR = "TryNextFlavor"
MAY_STOP_SEARCH = "MayStopSearch"  # v1beta1's "Borrow" and "Preempt" read as this
NEVER = "Never"


@dataclass(frozen=True)
class AdmissionPolicy:
    """A ClusterQueue's spec.flavorFungibility and spec.preemption, with Kueue's defaults."""

    when_can_borrow: str = MAY_STOP_SEARCH
    when_can_preempt: str = TRY_NEXT_FLAVOR
    preemption_over_borrowing: bool = False  # preference: PreemptionOverBorrowing
    within_cluster_queue: str = NEVER  # Never, LowerPriority, LowerOrNewerEqualPriority
    reclaim_within_cohort: str = NEVER  # Never, LowerPriority, Any
    borrow_within_cohort: str = NEVER  # Never, LowerPriority


@dataclass(frozen=True)
class QueueQuota:
    """A ClusterQueue: its cohort, quotas and what its admitted workloads use now."""

    name: str
    cohort: str | None
    groups: tuple[ResourceGroup, ...]
    usage: Mapping[FlavorResource, int] = field(default_factory=dict)
    # Why Kueue's admission for this queue cannot be modelled (hierarchical cohorts,
    # topology-aware scheduling, admission checks, preemption within the cohort...).
    # Non-empty: "fit unknown", and nothing is freed for its waiters.
    unmodelled: tuple[str, ...] = ()
    policy: AdmissionPolicy = AdmissionPolicy()
    # Fair sharing (domain/queues/fair_sharing.py): whether Kueue orders this queue's cohort
    # by dominant resource share, and the queue's spec.fairSharing.weight.
    fair_sharing: bool = False
    fair_weight: float = 1.0
    # Why Kueue's order of this queue's own waiters cannot be told (admission fair sharing):
    # "fit unknown" for its waiters, and for the waiters its head would compete with.
    order_unknown: tuple[str, ...] = ()

    def quotas(self) -> Iterator[tuple[FlavorResource, ResourceQuota]]:
        """Every (flavor, resource) the queue defines, with its quota, in spec order."""
        for group in self.groups:
            for flavor in group.flavors:
                for name, quota in flavor.resources.items():
                    yield (flavor.flavor, name), quota


@dataclass(frozen=True)
class PodSet:
    """One pod set of a Workload, in the Workload's order: its pod count, its requests for
    all of its pods (count × one pod's, Kueue's PodSetResources.Requests) and placement.
    `min_count`: partial admission may admit fewer pods (spec.podSets[].minCount)."""

    name: str
    count: int
    requests: Mapping[str, int]
    placement: Placement = ANYWHERE
    min_count: int | None = None


@dataclass(frozen=True)
class Waiter:
    """A Workload that waits for quota: active, not admitted, quota not reserved."""

    ref: WorkloadRef
    uid: str
    local_queue: str
    cluster_queue: str
    priority: int
    created_at: datetime
    requests: Mapping[str, int]  # the sum over its pod sets (count × per-pod request)
    # Kueue's pod sets, in order. Empty: `requests` is the whole charge as one demand, its
    # `pods` included where the queue counts them (the simulator's and KAI's waiters).
    pod_sets: tuple[PodSet, ...] = ()
    unmodelled: tuple[str, ...] = ()  # why Kueue's answer for this waiter is not modelled


@dataclass(frozen=True)
class FairSharingOrder:
    """How Kueue orders a fair-sharing cohort's heads (pkg/scheduler/fair_sharing_iterator.go
    `entryComparer.less`): its feature gates FairSharingPrioritizeNonBorrowing and
    PrioritySortingWithinCohort (both on by default at ff69552e), and which source said
    fair sharing is on (Kueue's Configuration, or the status Kueue writes)."""

    prioritize_non_borrowing: bool = True
    priority_sorting: bool = True
    source: str = ""  # e.g. "Kueue's Configuration kueue-system/kueue-manager-config"


@dataclass(frozen=True)
class QueueFacts:
    """One cycle's read of the queues. `failure`: nothing is known about waiters, which is
    never "nobody waits" (and never "someone waits")."""

    queues: Mapping[str, QueueQuota] = field(default_factory=dict)
    waiters: tuple[Waiter, ...] = ()
    source: str = "workloads"  # "visibility" (Kueue's pendingworkloads API) or "workloads"
    failure: str | None = None
    notes: tuple[str, ...] = ()  # e.g. the visibility API is not served: read Workloads
    fair_order: FairSharingOrder = FairSharingOrder()


def merge_queue_facts(facts: Sequence[QueueFacts]) -> QueueFacts:
    """The union of every source's queues and waiters; failed when any source failed, or
    when two sources name the same queue (their quotas cannot both hold)."""
    if len(facts) == 1:
        return facts[0]
    queues: dict[str, QueueQuota] = {}
    clashes: list[str] = []
    for each in facts:
        for name, queue in each.queues.items():
            if name in queues:
                clashes.append(name)
            queues[name] = queue
    failures = [f"{each.source}: {each.failure}" for each in facts if each.failure is not None]
    failures += [f"queue {name} is read from two sources" for name in sorted(set(clashes))]
    return QueueFacts(
        queues=queues,
        waiters=tuple(waiter for each in facts for waiter in each.waiters),
        source="+".join(each.source for each in facts),
        failure="; ".join(failures) or None,
        notes=tuple(note for each in facts for note in each.notes),
        # Only Kueue's queues are ordered by fair sharing; no two systems share a cohort.
        fair_order=next(
            (each.fair_order for each in facts if each.fair_order != FairSharingOrder()),
            FairSharingOrder(),
        ),
    )
