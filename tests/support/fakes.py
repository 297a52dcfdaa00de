"""Fakes at our own ports, for unit tests of the service. They record what was asked."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from autoscaler.adapters.state.codec import ref_of
from autoscaler.adapters.state.guards import audit_record
from autoscaler.core.errors import AnswerLost, ClusterError, Conflict
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.audit.records import Annotated, AuditRecord, RuntimeState
from autoscaler.domain.guards.screen import Deed, GuardMemory, LoopRecord
from autoscaler.domain.models import (
    FleetUsage,
    Pauses,
    PodRecord,
    UsageView,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.domain.outcomes import Outcome
from autoscaler.domain.policy.owners import known_owner
from autoscaler.domain.queues.facts import QueueFacts
from autoscaler.domain.usage.evidence import NO_EVIDENCE, FleetEvidence
from autoscaler.domain.usage.fresh import LatestSample, LatestUsage

Journal = list[tuple[str, WorkloadRef | None]]
Annotations = Mapping[str, str | None]


@dataclass
class FakeClock:
    current: datetime

    def now(self) -> datetime:
        return self.current

    def advance(self, span: timedelta) -> None:
        self.current += span


@dataclass
class FakeMetrics:
    """`usage` answers every fleet read; `history` (when set) answers a read for a time
    earlier than one already read (the past, e.g. the breaker's baseline). The fresh check's
    newest samples default to each GPU's peak and last sample time in `usage`; `latest`
    overrides them per pod, `latest_failure` fails the read."""

    usage: FleetUsage
    history: FleetUsage | None = None
    latest: dict[tuple[str, str], tuple[LatestSample, ...]] = field(default_factory=dict)
    latest_failure: str | None = None
    latest_evidence: FleetEvidence = NO_EVIDENCE  # the fresh check's newest evidence
    reads: list[tuple[timedelta, float, datetime]] = field(default_factory=list)
    latest_reads: list[tuple[tuple[str, str], ...]] = field(default_factory=list)

    def read_views(
        self, views: Collection[UsageView], *, now: datetime
    ) -> dict[UsageView, FleetUsage]:
        return {view: self._read(view, now=now) for view in views}

    def _read(self, view: UsageView, *, now: datetime) -> FleetUsage:
        past = any(now < earlier for _, _, earlier in self.reads)
        self.reads.append((view.window, view.threshold, now))
        answer = self.history if past and self.history is not None else self.usage
        return replace(answer, window=view.window, threshold=view.threshold, evaluated_at=now)

    def read_latest(self, pods: Sequence[tuple[str, str]], *, now: datetime) -> LatestUsage:
        self.latest_reads.append(tuple(pods))
        if self.latest_failure is not None:
            return LatestUsage(now, failure=self.latest_failure)
        samples = {pod: self.latest.get(pod, self._from_usage(pod)) for pod in pods}
        found = {pod: found for pod, found in samples.items() if found}
        return LatestUsage(now, samples=found, evidence=self.latest_evidence)

    def _from_usage(self, pod: tuple[str, str]) -> tuple[LatestSample, ...]:
        return tuple(
            LatestSample(gpu.key, gpu.peak, gpu.last_sample_at) for gpu in self.usage.for_pod(*pod)
        )


@dataclass
class FakeAuditLog:
    """The durable audit trail, newest first. `journal` (e.g. a FakeCluster's `calls`) gets
    an ("audit", ref) entry per record, so a test can see what came before a patch. A plain
    `done` follow-up settles its begun record in place, as the runtime state does
    (`RuntimeState.recorded`): the begun record reads `done` in `deeds()`."""

    records: list[LoopRecord] = field(default_factory=list)
    settled: set[tuple[Deed, WorkloadRef, datetime]] = field(default_factory=set)
    journal: Journal | None = None
    fail: ClusterError | None = None  # every call raises it
    fail_writes: ClusterError | None = None  # only `record` raises it
    writes: int = 0

    def record(self, *records: LoopRecord) -> None:
        if (failure := self.fail or self.fail_writes) is not None:
            raise failure
        self.writes += 1
        kept = []
        for record in records:
            if self.journal is not None:
                self.journal.append(("audit", record.workload))
            begun = (record.deed, record.workload, record.at)
            if record.outcome == Outcome.done() and any(
                (r.deed, r.workload, r.at) == begun and r.outcome is None for r in self.records
            ):
                self.settled.add(begun)
            else:
                kept.append(record)
        self.records[:0] = sorted(kept, key=lambda r: r.at, reverse=True)

    def recent(self, since: datetime) -> Sequence[LoopRecord]:
        if self.fail is not None:
            raise self.fail
        return [r for r in self.records if r.at >= since]

    def deeds(self) -> list[tuple[str, WorkloadRef, str]]:
        """(deed, workload, outcome) of every record, oldest first; the outcome in the words
        the audit trail keeps."""
        return [(r.deed.value, r.workload, self._word(r)) for r in reversed(self.records)]

    def _word(self, record: LoopRecord) -> str:
        if record.outcome is None and (record.deed, record.workload, record.at) in self.settled:
            return str(Outcome.done())
        return audit_record(record).outcome


@dataclass
class FakeGuardState:
    """The breaker and contested marks; records written with a change go to `audit`."""

    audit: FakeAuditLog
    memory: GuardMemory = field(default_factory=GuardMemory)
    fail: ClusterError | None = None
    announced: list[tuple[str, str]] = field(default_factory=list)
    changes: int = 0

    def load(self) -> GuardMemory:
        if self.fail is not None:
            raise self.fail
        return self.memory

    def change(
        self, edit: Callable[[GuardMemory], GuardMemory], *, records: Sequence[LoopRecord] = ()
    ) -> GuardMemory:
        if self.fail is not None:
            raise self.fail
        self.changes += 1
        self.memory = edit(self.memory)
        if records:
            self.audit.record(*records)
        return self.memory

    def announce(self, *, reason: str, message: str) -> None:
        self.announced.append((reason, message))


@dataclass
class FakeRuntimeState:
    """The runtime state (pauses, the audit trail, the guards' memory) in memory: the
    `StateBacking` a service's listeners and guards write to. `journal` (e.g. a FakeCluster's
    `calls`) gets an ("audit", ref) entry per record about a workload, so a test can see what
    came before a patch."""

    state: RuntimeState = field(default_factory=RuntimeState)
    audit_limit: int = 200
    announced: list[tuple[str, str]] = field(default_factory=list)
    journal: Journal | None = None

    def read(self) -> RuntimeState:
        return self.state

    def change(self, edit: Callable[[RuntimeState], RuntimeState]) -> RuntimeState:
        self.state = edit(self.state)
        return self.state

    def record(self, *records: AuditRecord) -> None:
        self.change(lambda state: state.recorded(records, limit=self.audit_limit))
        for record in records:
            if self.journal is not None and record.target.count("/") == 1:
                self.journal.append(("audit", ref_of(record.target)))

    def announce(self, *, reason: str, message: str, now: datetime) -> None:
        self.announced.append((reason, message))


@dataclass
class FakePendingWork:
    """Who waits for quota (`PendingWork`): `facts` answers every read, counted in `reads`."""

    facts: QueueFacts = field(default_factory=QueueFacts)
    reads: int = 0

    def read_queues(self) -> QueueFacts:
        self.reads += 1
        return self.facts


@dataclass
class FakeCluster:
    """An in-memory cluster, both ports: `ClusterReader` and `WorkloadActuator`. `fresh`
    overrides what `get_workload` returns (a change made between the cycle's read and the
    action); `fail` makes every call raise; `fail_on_patch` makes the deactivation patch
    raise without applying, `lose_answer` applies it and then raises AnswerLost;
    `fail_on_annotate` makes annotation writes on the Workload raise without applying."""

    workloads: list[WorkloadInfo]
    pauses: Pauses = field(default_factory=Pauses)
    fresh: dict[WorkloadRef, WorkloadInfo | None] = field(default_factory=dict)
    fail: ClusterError | None = None
    fail_on_patch: Exception | None = None
    lose_answer: bool = False
    fail_on_annotate: Exception | None = None
    pauses_after_first_read: Pauses | None = None
    scaled_objects: list[dict[str, Any]] = field(default_factory=list)
    namespaces: frozenset[str] | None = None  # None: every namespace exists
    calls: list[tuple[str, WorkloadRef | None]] = field(default_factory=list)
    audits: list[tuple[WorkloadRef, DeactivationAudit]] = field(default_factory=list)
    owner_patches: list[tuple[WorkloadRef, dict[str, str | None]]] = field(default_factory=list)

    def list_workloads(self) -> Sequence[WorkloadInfo]:
        self._called("list_workloads", None)
        return list(self.workloads)

    def list_gpu_pods(self) -> Sequence[PodRecord]:
        self._called("list_gpu_pods", None)
        return [PodRecord(w.ref.namespace, p) for w in self.workloads for p in w.gpu_pods]

    def list_scaled_objects(self) -> Sequence[Mapping[str, Any]]:
        self._called("list_scaled_objects", None)
        return list(self.scaled_objects)

    def get_workload(self, ref: WorkloadRef) -> WorkloadInfo | None:
        self._called("get_workload", ref)
        if ref in self.fresh:
            return self.fresh[ref]
        return next((w for w in self.workloads if w.ref == ref), None)

    def namespace_exists(self, name: str) -> bool:
        self._called("namespace_exists", None)
        return self.namespaces is None or name in self.namespaces

    def read_pauses(self) -> Pauses:
        self._called("read_pauses", None)
        current = self.pauses
        if self.pauses_after_first_read is not None:
            self.pauses = self.pauses_after_first_read
        return current

    def deactivate(self, workload: WorkloadInfo, audit: DeactivationAudit) -> None:
        self._called("deactivate", workload.ref)
        self.audits.append((workload.ref, audit))
        if self.fail_on_patch is not None:
            raise self.fail_on_patch
        self._change(workload.ref, active=False, annotations=audit.annotations())
        if self.lose_answer:
            raise AnswerLost(f"patch workload {workload.ref}: sent, but the answer was lost")

    def reactivate(self, workload: WorkloadInfo, annotations: Annotations) -> None:
        self._called("reactivate", workload.ref)
        self._change(workload.ref, active=True, annotations=annotations)

    def writes_owner(self, workload: WorkloadInfo) -> bool:
        """As the Kueue actuator: an owner of a kind the table marks `annotated=False` (a
        Job, a StatefulSet, a Deployment, a pod) is never written; its Workload is."""
        row = known_owner(workload.owner)
        return workload.owner is not None and (row is None or row.annotated)

    def annotate_owner(self, workload: WorkloadInfo, annotations: Annotations) -> Annotated:
        self._called("annotate_owner", workload.ref)
        owner = workload.owner
        if owner is None or not self.writes_owner(workload):
            return self.annotate_workload(workload, annotations)
        self.owner_patches.append((workload.ref, dict(annotations)))
        return Annotated(owner.kind, workload.ref.namespace, owner.name)

    def annotate_workload(
        self,
        workload: WorkloadInfo,
        annotations: Annotations,
        *,
        resource_version: str | None = None,
    ) -> Annotated:
        self._called("annotate_workload", workload.ref)
        if self.fail_on_annotate is not None:
            raise self.fail_on_annotate
        stored = next((w for w in self.workloads if w.ref == workload.ref), None)
        if resource_version and stored and stored.resource_version != resource_version:
            raise Conflict(f"workload {workload.ref} changed since version {resource_version}")
        self._change(workload.ref, annotations=annotations)
        return Annotated("Workload", workload.ref.namespace, workload.ref.name)

    def announce(self, workload: WorkloadInfo, *, reason: str, message: str) -> None:
        self._called("announce", workload.ref)

    def delete_owner(self, workload: WorkloadInfo) -> None:
        """The owner and, as its garbage collector would, the Workload it owns."""
        self._called("delete_owner", workload.ref)
        self.workloads = [w for w in self.workloads if w.ref != workload.ref]

    def deactivated(self) -> list[WorkloadRef]:
        return [ref for name, ref in self.calls if name == "deactivate" and ref is not None]

    def _change(
        self,
        ref: WorkloadRef,
        *,
        active: bool | None = None,
        annotations: Annotations | None = None,
    ) -> None:
        def changed(w: WorkloadInfo) -> WorkloadInfo:
            merged = {**w.annotations, **(annotations or {})}
            kept = {k: v for k, v in merged.items() if v is not None}
            version = w.resource_version  # bumped as the API server does, when it counts
            version = str(int(version) + 1) if version.isdigit() else version
            active_now = w.active if active is None else active
            return replace(w, active=active_now, annotations=kept, resource_version=version)

        self.workloads = [changed(w) if w.ref == ref else w for w in self.workloads]

    def _called(self, name: str, ref: WorkloadRef | None) -> None:
        if self.fail is not None:
            raise self.fail
        self.calls.append((name, ref))
