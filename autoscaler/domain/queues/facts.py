"""What Kueue's queues say, as plain values: quotas per ClusterQueue and the Workloads that
wait. The `PendingWork` port reads them; `domain/queues/contention.py` judges whether freeing an
idle workload would let a waiter in.

Quantities are integers in Kueue's canonical units: millicores for `cpu`, bytes for memory,
whole units for everything else (GPUs, pods).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from autoscaler.domain.models import WorkloadRef

FlavorResource = tuple[str, str]  # (ResourceFlavor name, resource name)


@dataclass(frozen=True)
class ResourceQuota:
    """One resource's quota in one flavor of a ClusterQueue (spec.resourceGroups)."""

    nominal: int
    borrowing_limit: int | None = None  # None: may borrow whatever the cohort lends
    lending_limit: int | None = None  # None: lends all of its unused nominal quota


@dataclass(frozen=True)
class FlavorQuotas:
    flavor: str
    resources: Mapping[str, ResourceQuota]


@dataclass(frozen=True)
class ResourceGroup:
    """Resources admitted together, and the flavors Kueue tries for them, in order."""

    covered: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


@dataclass(frozen=True)
class QueueQuota:
    """A ClusterQueue: its cohort, quotas and what its admitted workloads use now."""

    name: str
    cohort: str | None
    groups: tuple[ResourceGroup, ...]
    usage: Mapping[FlavorResource, int] = field(default_factory=dict)
    # Why Kueue's admission for this queue cannot be modelled (hierarchical cohorts, fair
    # sharing, topology-aware scheduling, admission checks, preemption within the cohort...).
    # Non-empty: "fit unknown", and nothing is freed for its waiters.
    unmodelled: tuple[str, ...] = ()


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


@dataclass(frozen=True)
class QueueFacts:
    """One cycle's read of the queues. `failure`: nothing is known about waiters, which is
    never "nobody waits" (and never "someone waits")."""

    queues: Mapping[str, QueueQuota] = field(default_factory=dict)
    waiters: tuple[Waiter, ...] = ()
    source: str = "workloads"  # "visibility" (Kueue's pendingworkloads API) or "workloads"
    failure: str | None = None
    notes: tuple[str, ...] = ()  # e.g. the visibility API is not served: read Workloads
