"""Kueue's objects as frozen values, and the transitions a user or controller makes on them.

`KueueState` never changes in place: every method returns a new state. Admission itself
(`admit_pending`) lives in `admission.py`; this module only records what happened.

A workload's life: PENDING -> ADMITTED -> FINISHED, and any time before it finishes
`spec.active=false` moves it to INACTIVE (evicting it if admitted, which releases its quota).
Reactivating puts it back to PENDING with its original creation time, so it keeps its place
in the queue order, as Kueue does. Kueue's preemption (admission.py) takes an ADMITTED
workload back to PENDING, requeued, with a `Preempted` record naming its preemptor.

`KueueFeatures` are the emulated Kueue's feature gates and configuration that change its
decisions, with Kueue's defaults at commit ff69552e (pkg/features/kube_features.go).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum

from autoscaler.domain.models import WorkloadRef
from autoscaler.sim.flavors import Toleration
from autoscaler.sim.quota import ClusterQueue

LocalQueueKey = tuple[str, str]  # (namespace, name)
DEACTIVATED_MESSAGE = "The workload is deactivated"


class Phase(StrEnum):
    PENDING = "pending"
    ADMITTED = "admitted"
    INACTIVE = "inactive"  # spec.active=false: evicted if it was admitted
    FINISHED = "finished"


class EventKind(StrEnum):
    ADMITTED = "Admitted"
    EVICTED = "Evicted"  # an admitted workload was deactivated: its quota is free again
    PREEMPTED = "Preempted"  # Kueue evicted an admitted workload for another: requeued
    DEACTIVATED = "Deactivated"  # a pending workload was deactivated
    REQUEUED = "Requeued"  # reactivated: pending again
    FINISHED = "Finished"


@dataclass(frozen=True)
class Event:
    kind: EventKind
    workload: WorkloadRef
    at: datetime
    cluster_queue: str | None
    message: str


Step = tuple["KueueState", tuple[Event, ...]]


@dataclass(frozen=True)
class KueueFeatures:
    """`priority_boost`: the PriorityBoost gate (alpha, off by default since v0.17): when on, the
    Workload annotation `kueue.x-k8s.io/priority-boost` is added to the priority everywhere
    Kueue orders or preempts by priority (kueue pkg/util/priority/priority.go,
    EffectivePriority). `fair_sharing`: Kueue's Configuration `fairSharing.enable` (off by
    default): heads across a cohort are served by dominant resource share."""

    priority_boost: bool = False
    fair_sharing: bool = False


@dataclass(frozen=True)
class Preempted:
    """Why and by whom an admitted workload was preempted: the `Evicted` (reason Preempted),
    `Preempted` and `Requeued` conditions Kueue writes (pkg/scheduler/preemption/
    preemption.go, IssuePreemptions; pkg/controller/jobframework/reconciler.go)."""

    reason: str  # InClusterQueue, InCohortReclamation, InCohortReclaimWhileBorrowing
    message: str
    at: datetime


@dataclass(frozen=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str

    @property
    def key(self) -> LocalQueueKey:
        return (self.namespace, self.name)


@dataclass(frozen=True)
class PodSet:
    name: str
    count: int
    requests: Mapping[str, int]  # per pod, canonical units (see quota.py)
    tolerations: tuple[Toleration, ...] = ()  # the pod template's, against flavor taints

    @property
    def total(self) -> dict[str, int]:
        return {resource: amount * self.count for resource, amount in self.requests.items()}


@dataclass(frozen=True)
class Admission:
    cluster_queue: str
    at: datetime  # QuotaReserved and Admitted lastTransitionTime
    usage: Mapping[str, int]  # what the admission counts against the queue


@dataclass(frozen=True)
class Workload:
    namespace: str
    name: str
    queue_name: str  # the LocalQueue, in the workload's namespace
    created_at: datetime
    pod_sets: tuple[PodSet, ...]
    priority: int = 0
    priority_class: str | None = None
    phase: Phase = Phase.PENDING
    phase_since: datetime | None = None  # None: since creation
    admission: Admission | None = None  # kept when an admitted workload finishes
    evicted_at: datetime | None = None  # last deactivation
    requeued_at: datetime | None = None  # last reactivation
    priority_boost: int = 0  # the kueue.x-k8s.io/priority-boost annotation, gate or not
    uid: str | None = None  # metadata.uid, named in preemption messages
    job_uid: str | None = None  # the kueue.x-k8s.io/job-uid label
    preempted: Preempted | None = None  # last preemption, kept until admitted again
    awaiting_preemption: str | None = None  # QuotaReserved message while its victims go

    def __post_init__(self) -> None:
        if self.phase is Phase.ADMITTED and self.admission is None:
            raise ValueError(f"workload {self.ref}: an admitted workload needs an admission")
        if self.phase in (Phase.PENDING, Phase.INACTIVE) and self.admission is not None:
            raise ValueError(f"workload {self.ref}: a {self.phase} workload holds no admission")

    @property
    def ref(self) -> WorkloadRef:
        return WorkloadRef(self.namespace, self.name)

    @property
    def active(self) -> bool:
        return self.phase is not Phase.INACTIVE

    @property
    def requests(self) -> dict[str, int]:
        """Sum over pod sets of count x per-pod requests."""
        total: dict[str, int] = {}
        for pod_set in self.pod_sets:
            for resource, amount in pod_set.total.items():
                total[resource] = total.get(resource, 0) + amount
        return total

    @property
    def pod_count(self) -> int:
        return sum(pod_set.count for pod_set in self.pod_sets)

    @property
    def evicted_by_preemption(self) -> bool:
        """Its last eviction was a preemption and it holds no quota since (Evicted=True with
        reason Preempted still stands)."""
        return (
            self.preempted is not None
            and self.admission is None
            and self.evicted_at == self.preempted.at
        )

    def admitted(self, admission: Admission) -> Workload:
        return replace(
            self,
            phase=Phase.ADMITTED,
            phase_since=admission.at,
            admission=admission,
            awaiting_preemption=None,
        )


@dataclass(frozen=True)
class KueueState:
    cluster_queues: Mapping[str, ClusterQueue] = field(default_factory=dict)
    local_queues: Mapping[LocalQueueKey, LocalQueue] = field(default_factory=dict)
    priority_classes: Mapping[str, int] = field(default_factory=dict)  # name -> value
    workloads: Mapping[WorkloadRef, Workload] = field(default_factory=dict)
    features: KueueFeatures = KueueFeatures()

    # Configuration and objects: upserts.

    def with_cluster_queue(self, cq: ClusterQueue) -> KueueState:
        return replace(self, cluster_queues={**self.cluster_queues, cq.name: cq})

    def with_local_queue(self, lq: LocalQueue) -> KueueState:
        return replace(self, local_queues={**self.local_queues, lq.key: lq})

    def with_priority_class(self, name: str, value: int) -> KueueState:
        return replace(self, priority_classes={**self.priority_classes, name: value})

    def with_workload(self, workload: Workload) -> KueueState:
        return self.with_workloads((workload,))

    def with_workloads(self, workloads: Iterable[Workload]) -> KueueState:
        """Many at once: one copy of the table, not one a workload."""
        return replace(self, workloads={**self.workloads, **{w.ref: w for w in workloads}})

    def without_workload(self, ref: WorkloadRef) -> KueueState:
        """The workload deleted; whatever quota it held is free again."""
        return replace(self, workloads={k: w for k, w in self.workloads.items() if k != ref})

    # Lookups.

    def workload(self, ref: WorkloadRef) -> Workload:
        return self.workloads[ref]

    def effective_priority(self, workload: Workload) -> int:
        """Priority plus the boost annotation when the PriorityBoost gate is on
        (kueue pkg/util/priority/priority.go, EffectivePriority)."""
        boost = workload.priority_boost if self.features.priority_boost else 0
        return workload.priority + boost

    def priority_value(self, class_name: str | None) -> int:
        """A WorkloadPriorityClass's value; 0 for none or an unknown class."""
        return 0 if class_name is None else self.priority_classes.get(class_name, 0)

    def cluster_queue_name(self, workload: Workload) -> str | None:
        """The ClusterQueue the workload's LocalQueue points at, if the LocalQueue exists."""
        lq = self.local_queues.get((workload.namespace, workload.queue_name))
        return None if lq is None else lq.cluster_queue

    def in_phase(self, phase: Phase, cluster_queue: str | None = None) -> tuple[Workload, ...]:
        """Workloads in `phase` (optionally only those routed to `cluster_queue`), by ref."""
        return tuple(
            w
            for _, w in sorted(self.workloads.items())
            if w.phase is phase and (cluster_queue is None or self._queue_of(w) == cluster_queue)
        )

    # Transitions made by users and job controllers.

    def set_active(self, ref: WorkloadRef, *, active: bool, now: datetime) -> Step:
        """Kueue's reaction to writing `spec.active`; no-op when nothing changes."""
        workload = self.workload(ref)
        if workload.phase is Phase.FINISHED or workload.active == active:
            return self, ()
        if active:
            changed = replace(workload, phase=Phase.PENDING, phase_since=now, requeued_at=now)
            event = Event(EventKind.REQUEUED, ref, now, None, "The workload was reactivated")
            return self.with_workload(changed), (event,)
        return self._deactivated(workload, now)

    def preempt(self, ref: WorkloadRef, *, reason: str, message: str, now: datetime) -> Step:
        """Kueue evicted the admitted workload for a preemptor: its quota is released and it is
        requeued pending (kueue pkg/workload/evict/evict.go and the job reconciler, which
        sets Requeued=True for reason Preempted)."""
        workload = self.workload(ref)
        if workload.phase is not Phase.ADMITTED or workload.admission is None:
            return self, ()
        queue = workload.admission.cluster_queue
        changed = replace(
            workload,
            phase=Phase.PENDING,
            phase_since=now,
            admission=None,
            evicted_at=now,
            preempted=Preempted(reason, message, now),
        )
        event = Event(EventKind.PREEMPTED, ref, now, queue, message)
        return self.with_workload(changed), (event,)

    def finish(self, ref: WorkloadRef, *, now: datetime) -> Step:
        """The job finished: its quota is released and it never runs again."""
        workload = self.workload(ref)
        if workload.phase is Phase.FINISHED:
            return self, ()
        changed = replace(workload, phase=Phase.FINISHED, phase_since=now)
        queue = None if workload.admission is None else workload.admission.cluster_queue
        event = Event(EventKind.FINISHED, ref, now, queue, "Workload has finished")
        return self.with_workload(changed), (event,)

    def _deactivated(self, workload: Workload, now: datetime) -> Step:
        # A workload already evicted by a preemption is not evicted again: its Evicted
        # (Preempted) and Requeued conditions stay (kueue pkg/controller/core/
        # workload_controller.go, the !IsActive branch evicts only when !IsEvicted).
        evicted_at = workload.evicted_at if workload.evicted_by_preemption else now
        changed = replace(
            workload, phase=Phase.INACTIVE, phase_since=now, admission=None, evicted_at=evicted_at
        )
        if workload.admission is None:
            event = Event(EventKind.DEACTIVATED, workload.ref, now, None, DEACTIVATED_MESSAGE)
        else:
            queue = workload.admission.cluster_queue
            event = Event(EventKind.EVICTED, workload.ref, now, queue, DEACTIVATED_MESSAGE)
        return self.with_workload(changed), (event,)

    def _queue_of(self, workload: Workload) -> str | None:
        if workload.admission is not None:
            return workload.admission.cluster_queue
        return self.cluster_queue_name(workload)
