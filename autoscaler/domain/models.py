"""Value objects shared by the domain, the ports and every surface (REST, gRPC, logs).

Everything here is frozen: a cycle builds new values and publishes them in a `Snapshot`.
Utilization is always a ratio in [0, 1]; times are timezone-aware UTC datetimes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING

from autoscaler.domain.guards.breaker import BreakerState
from autoscaler.domain.kueue_config import GateServed
from autoscaler.domain.notices.notice import NO_NOTICE, Notice
from autoscaler.domain.outcomes import Outcome
from autoscaler.domain.policy.management import DEFAULT_MANAGER, HandsOff, Manager

# Re-exported (the explicit alias): every layer imports the states and actions from here.
from autoscaler.domain.states import Action as Action  # noqa: PLC0414
from autoscaler.domain.states import State as State  # noqa: PLC0414
from autoscaler.domain.usage.evidence import NO_EVIDENCE, FleetEvidence
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.domain.usage.pod_states import AdmissionFacts, ContainerWait

if TYPE_CHECKING:  # both import this module; only their types are needed here
    from autoscaler.domain.policy.rules import Rule
    from autoscaler.domain.tenant_names import ServedFor
    from autoscaler.domain.usage.assessment import Assessment


@dataclass(frozen=True, order=True)
class WorkloadRef:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, text: str) -> WorkloadRef | None:
        """ "namespace/name" as `str()` writes it; None for anything else."""
        namespace, slash, name = text.partition("/")
        return cls(namespace, name) if slash and namespace and name else None


@dataclass(frozen=True)
class OwnerRef:
    api_version: str
    kind: str
    name: str
    uid: str = ""


@dataclass(frozen=True)
class PodInfo:
    """A pod counted by a workload's admission, as read from Kubernetes."""

    name: str
    phase: str
    created_at: datetime
    gpus: int  # GPU devices or MIG slices requested by all its containers
    labels: Mapping[str, str] = field(default_factory=dict)
    node: str | None = None
    # What says whether it runs (the not-running class, domain/usage/not_running.py):
    waiting: tuple[ContainerWait, ...] = ()  # its containers (init ones too) in state waiting
    unschedulable: str | None = None  # PodScheduled=False/Unschedulable: the scheduler's message
    scale_up_at: datetime | None = None  # the newest TriggeredScaleUp Event about it
    # How its Workload finds it (domain/policy/owners.py, PodsFound): its controller owner,
    # and the name of the Kueue pod group it belongs to ("" for none).
    controller: OwnerRef | None = None
    pod_group: str = ""

    @property
    def phase_running(self) -> bool:
        """Its phase is Running: bound to a node, at least one container started. Says
        nothing of whether its GPU work runs (see `gpu_containers_run`)."""
        return self.phase == "Running"

    @property
    def gpu_containers_run(self) -> bool:
        """Phase Running and none of its GPU containers waiting: a GPU container in
        CrashLoopBackOff (phase Running) does not run; a sidecar without GPUs waiting does
        not stop the GPU work from running."""
        return self.phase_running and not any(wait.holds_gpus for wait in self.waiting)


@dataclass(frozen=True)
class Preemption:
    """What Kueue's conditions say of a preemption it made (pkg/scheduler/preemption,
    `preemptionMessage`: "Preempted to accommodate a workload (UID: <uid>, JobUID: ...)")."""

    preemptor_uid: str  # "" when the message names none
    reason: str  # the Preempted condition's reason, else the Evicted one's
    at: datetime | None = None


@dataclass(frozen=True)
class WorkloadInfo:
    """A Kueue Workload joined with its owner and the owner's pods; or (ISSUE 17) a RayCluster
    no Workload admits, read as its own Workload: `ref` and `uid` are the RayCluster's, its
    `owner` is itself, `active` is "not suspended", and `manager` says which."""

    ref: WorkloadRef
    uid: str
    queue: str
    owner: OwnerRef | None
    active: bool
    admitted: bool
    admitted_at: datetime | None  # Admitted condition's lastTransitionTime
    created_at: datetime
    expected_pods: int  # sum of the admitted pod sets' counts
    pods: tuple[PodInfo, ...] = ()
    priority_class: str | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)
    owner_annotations: Mapping[str, str] = field(default_factory=dict)
    owner_labels: Mapping[str, str] = field(default_factory=dict)
    cluster_queue: str | None = None
    resource_version: str = ""
    keda_managed: bool = False
    evicted_reason: str | None = None
    evicted_at: datetime | None = None  # Evicted condition's lastTransitionTime, while True
    # For rules and contention (issue 14). None: the namespace's labels could not be read,
    # so a rule selecting on them cannot be evaluated (never a fall-through).
    namespace_labels: Mapping[str, str] | None = None
    cohort: str | None = None  # the ClusterQueue's cohort, when it has one
    priority: int = 0  # the Workload's spec.priority (from its WorkloadPriorityClass)
    # What the admission charges its ClusterQueue: (flavor, resource) -> quantity in Kueue's
    # canonical units (status.admission.podSetAssignments[].flavors / resourceUsage).
    admitted_usage: Mapping[tuple[str, str], int] = field(default_factory=dict)
    # Where notifications go (ISSUE 15): the namespace's annotations; None when unreadable.
    namespace_annotations: Mapping[str, str] | None = None
    manager: Manager = DEFAULT_MANAGER  # which actuator writes on it (ISSUE 17)
    hands_off: HandsOff | None = None  # never acted on, and why (fractional GPUs, ...)
    # A Kueue Workload's admission as its status says (PodsReady, admission checks,
    # reactivation, GPUs charged); None for a row Kueue does not admit.
    admission: AdmissionFacts | None = None
    # Kueue's Finished=True: its lastTransitionTime. Kueue keeps Admitted=True on a finished
    # Workload but releases its quota: it is read as not admitted, never judged nor acted on.
    finished_at: datetime | None = None
    # Kueue evicted it for a preemption (Evicted=True reason Preempted, or Preempted=True):
    # the preemptor Workload's UID its condition message names ("" when it names none), and
    # the reason (InClusterQueue, InCohortReclamation, ...). None: not preempted.
    preemption: Preemption | None = None

    @property
    def gpu_pods(self) -> tuple[PodInfo, ...]:
        return tuple(pod for pod in self.pods if pod.gpus > 0)

    @property
    def gpus(self) -> int:
        return sum(pod.gpus for pod in self.pods)


@dataclass(frozen=True)
class GpuUsage:
    """What Prometheus says about one GPU over the idle window."""

    key: GpuKey
    peak: float | None  # highest utilization ratio over the window; None when NaN or absent
    coverage: float  # share of the window's slots holding a real sample, 0..1
    last_sample_at: datetime | None
    last_busy_at: datetime | None  # last sample above the threshold within the lookback
    hostname: str | None = None
    model: str | None = None


@dataclass(frozen=True, order=True)
class UsageView:
    """A (window, threshold) the fleet's usage is judged at; every rule has one, and one
    fleet read serves them all."""

    window: timedelta
    threshold: float


@dataclass(frozen=True)
class FleetUsage:
    """The result of one cycle's fleet-wide queries for one (window, threshold)."""

    window: timedelta
    threshold: float
    evaluated_at: datetime
    gpus: Mapping[tuple[str, str], tuple[GpuUsage, ...]] = field(default_factory=dict)
    doubtful_namespaces: frozenset[str] = frozenset()  # partial data (warnings) touched these
    failure: str | None = None  # the whole source failed: everything is unknown
    evidence: FleetEvidence = NO_EVIDENCE  # the cycle's evidence signals, shared by all views

    def for_pod(self, namespace: str, pod: str) -> tuple[GpuUsage, ...]:
        return self.gpus.get((namespace, pod), ())

    @cached_property
    def by_device(self) -> Mapping[tuple[str, str | None], tuple[GpuUsage, ...]]:
        """Every series of each device (uuid, MIG instance), whichever pod it is reported
        under: several pods on one device share it (time-slicing, MPS). Built once per read."""
        found: dict[tuple[str, str | None], list[GpuUsage]] = {}
        for series in self.gpus.values():
            for gpu in series:
                found.setdefault((gpu.key.uuid, gpu.key.mig_instance), []).append(gpu)
        return {device: tuple(gpus) for device, gpus in found.items()}

    def doubt_about(self, namespace: str) -> str | None:
        """Why this namespace's data cannot be trusted this cycle, or None."""
        if self.failure is not None:
            return f"metrics unavailable: {self.failure}"
        if "*" in self.doubtful_namespaces or namespace in self.doubtful_namespaces:
            return "Prometheus returned partial data (warnings)"
        return None


@dataclass(frozen=True)
class Pauses:
    """The kill switch: the whole service, or some namespaces."""

    everything: bool = False
    namespaces: frozenset[str] = frozenset()

    def covers(self, namespace: str) -> bool:
        return self.everything or namespace in self.namespaces


@dataclass(frozen=True)
class Decision:
    """One workload's outcome in one cycle, with the numbers behind it."""

    workload: WorkloadRef
    state: State
    action: Action
    reason: str
    gpus: int = 0
    peak: float | None = None
    coverage: float | None = None
    idle_since: datetime | None = None
    time_left: timedelta | None = None  # until the idle window completes; None if not idling
    # The rule it falls under (first match wins): every later stage reads its numbers here.
    rule: Rule = field(kw_only=True)
    rule_unknown: str | None = None  # why that rule cannot be evaluated, whatever state won
    # The usage verdict under that rule, taken for every active, admitted workload whose rule
    # can be evaluated, whatever gate decided its state (the breaker and KEDA read it); None
    # when usage was not judged.
    assessment: Assessment | None = None
    beneficiary: WorkloadRef | None = None  # the waiter a contention-driven stop is for
    # The waiter's ClusterQueue: what a reader who may not read its namespace is told of it
    # (domain/tenant_names.py); None where no waiter is named, or its queue is not known.
    beneficiary_queue: str | None = None
    evidence: tuple[str, ...] = ()  # what the evidence signals saw, one line each (ISSUE 16)
    idle_held_gpus: int = 0  # IDLE_HELD: how many GPUs sat idle the whole window
    # IDLE: until when new loading evidence would still count (the fresh check's question)
    loading_counts_until: datetime | None = None
    notice: Notice = NO_NOTICE  # its warning, snooze and planned stop (ISSUE 15)
    # Rule `reclaim: via-kueue`: Kueue preempted our marked Workload; its deactivation goes at
    # once, the caps and the fresh check aside (the mark was counted, Kueue judged the need).
    kueue_preempted: bool = False


@dataclass(frozen=True)
class WorkloadStatus:
    """A row of the snapshot: the workload as read plus this cycle's decision."""

    info: WorkloadInfo
    decision: Decision

    @property
    def ref(self) -> WorkloadRef:
        return self.info.ref

    @property
    def gpus(self) -> int:
        """Its GPUs: the decision's count, else the requested count (a decision that did not
        count them says 0)."""
        return self.decision.gpus or self.info.gpus


@dataclass(frozen=True)
class PodRecord:
    """A running GPU pod anywhere in the cluster (Kueue-managed or not), for KEDA selectors."""

    namespace: str
    pod: PodInfo


DEFAULT_PROFILE = "default"


@dataclass(frozen=True)
class Snapshot:
    """Everything one cycle learned; REST and gRPC answer from the latest one only."""

    cycle: int
    taken_at: datetime
    workloads: tuple[WorkloadStatus, ...]
    cluster_ok: bool
    metrics_ok: bool
    dry_run: bool
    pauses: Pauses = Pauses()
    errors: tuple[str, ...] = ()
    actions: tuple[ActionRecord, ...] = ()
    # Fleet usage per named profile (window, threshold); DEFAULT_PROFILE is the policy's own.
    usage: Mapping[str, FleetUsage] = field(default_factory=dict)
    gpu_pods: tuple[PodRecord, ...] = ()
    guards: GuardReport | None = None  # None until the screen reports (a first cycle cut off)
    waiters: WaitersSeen | None = None  # None: no when-contended stop was due this cycle
    # Rule `reclaim: via-kueue`: whether Kueue serves the priority boost, as read this cycle;
    # None: no rule says via-kueue, nothing read.
    kueue_gate: GateServed | None = None

    def find(self, ref: WorkloadRef) -> WorkloadStatus | None:
        return self._by_ref.get(ref)

    @cached_property
    def _by_ref(self) -> dict[WorkloadRef, WorkloadStatus]:
        """The rows by ref, the first of any repeated: built once, as listeners look up a
        row per action and per stop followed."""
        found: dict[WorkloadRef, WorkloadStatus] = {}
        for row in self.workloads:
            found.setdefault(row.ref, row)
        return found


@dataclass(frozen=True)
class ActionRecord:
    """An action the cycle attempted, and how it went."""

    workload: WorkloadRef
    action: Action
    reason: str
    at: datetime
    outcome: Outcome
    audited: bool = False  # the loop already wrote its durable audit record


@dataclass(frozen=True)
class WaitersSeen:
    """What one cycle learned about the Workloads waiting for quota, read only when a
    `when-contended` rule had a stop due (engine/cycle/reclaim.py)."""

    source: str  # "visibility" (Kueue's pendingworkloads API) or "workloads"
    failure: str | None = None  # nothing known about waiters: when-contended stops nothing
    notes: tuple[str, ...] = ()
    outcomes: Mapping[str, int] = field(default_factory=dict)  # e.g. {"fit unknown": 2}
    # "fit unknown" waiters by why, as a class (domain/queues/contention.py UnknownWhy)
    unknown_why: Mapping[str, int] = field(default_factory=dict)  # {"order-unknown": 1}
    # Each workload freed for a waiter, and that waiter's judgement (its outcome and why),
    # names kept: each surface tells it per caller (domain/tenant_names.py)
    served: Mapping[WorkloadRef, ServedFor] = field(default_factory=dict)

    @property
    def judged(self) -> int:
        return sum(self.outcomes.values())


@dataclass(frozen=True)
class GuardReport:
    """What the guards did in one cycle, for the API, /readyz and metrics."""

    breaker: BreakerState
    breaker_close_after: int  # normal cycles that close an open breaker
    hourly_limit: int
    deactivations_last_hour: int  # begun by the loop in the hour before this cycle
    deferred: int  # deactivations this cycle held back by the breaker or the hourly cap
    contested: tuple[WorkloadRef, ...] = ()
    problems: tuple[str, ...] = ()  # e.g. the guard state could not be read: nothing acted
