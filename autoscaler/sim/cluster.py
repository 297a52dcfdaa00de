"""The demo's Kubernetes: the `ClusterReader` port over the pure Kueue model, and the writes
the simulated actuator (`sim.actuators`) makes.

A RayCluster gets a Workload (one pod set for the head, one per worker group). When Kueue
admits it, KubeRay creates its pods, which hold GPUs from the nodes and run after a short
start; `spec.active: false` evicts the Workload, suspends the RayCluster (its pods are
deleted, the GPUs go back to the nodes) and frees the quota; the next `step` admits whatever
now fits. Reactivating requeues it. Pod names follow KubeRay: `<rc>-head-xxxxx` and
`<rc>-<group>-worker-xxxxx`. The other kinds of `sim.kinds` live the same way, except those
Kueue's pod integration queues (a Notebook, a Deployment): `spec.active: false` deletes the
pod, which its controller makes again, and its new Workload queues behind the waiters. A
RayCluster labelled with a KAI queue, or a plain KubeRay one, gets no Workload: it is a row of
its own (`rayclusters`), suspended by `sim.actuators`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from autoscaler.core.errors import Conflict, NotFound
from autoscaler.core.ports import Clock
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.kueue_config import PRIORITY_BOOST_GATE, V1BETA2, KueueConfiguration
from autoscaler.domain.models import (
    OwnerRef,
    Pauses,
    PodRecord,
    Preemption,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.domain.policy.management import KUEUE_QUEUE_LABEL, SUSPENDED_BY_US, Manager
from autoscaler.sim.admission import admit_pending, pending_reason
from autoscaler.sim.cluster_pods import ClusterPods
from autoscaler.sim.kueue_model import Event, EventKind, KueueState, Phase, Workload
from autoscaler.sim.metrics import GpuHolding
from autoscaler.sim.pods import GpuPool, RayClusterSpec, SimPod
from autoscaler.sim.rayclusters import SuspendableRayClusters, merge_annotations
from autoscaler.sim.workload_info import (
    admission_facts,
    admitted_usage,
    cohort_of,
    sim_uid,
    workload_uid,
)

SIMULATED_CONFIGURATION = "kueue-system/kueue-manager-config (simulated)"


@dataclass(frozen=True)
class AuditEntry:
    """What the service wrote before a deactivation, with the GPUs it freed."""

    workload: WorkloadRef
    raycluster: str  # its owner in the demo's words (`RayClusterSpec.known_as`)
    audit: DeactivationAudit
    gpus: int


@dataclass
class _Objects:
    kueue: KueueState
    specs: dict[WorkloadRef, RayClusterSpec] = field(default_factory=dict)
    annotations: dict[WorkloadRef, dict[str, str]] = field(default_factory=dict)
    owner_annotations: dict[WorkloadRef, dict[str, str]] = field(default_factory=dict)
    versions: dict[WorkloadRef, int] = field(default_factory=dict)
    generations: dict[str, int] = field(default_factory=dict)  # pods made again, by owner
    # The owners of Workloads gone (a requeue's old one): the last cycle's rows still name them.
    former: dict[WorkloadRef, RayClusterSpec] = field(default_factory=dict)


class SimulatedCluster:
    def __init__(
        self,
        *,
        kueue: KueueState,
        gpus: GpuPool,
        clock: Clock,
        enabled: Collection[Manager] = (Manager.KUEUE,),
    ) -> None:
        """`enabled`: the service's actuators; a RayCluster no Workload admits is read as a
        row only when one of them may suspend it (`sim.rayclusters`)."""
        self._objects = _Objects(kueue=kueue)
        self._pods = ClusterPods(gpus)
        self._clock = clock
        self._lock = threading.RLock()
        self.rayclusters = SuspendableRayClusters(pods=self._pods, lock=self._lock, enabled=enabled)
        self.pauses = Pauses()
        self.namespace_annotations: dict[str, dict[str, str]] = {}  # e.g. notify targets
        self.scaled_objects: list[Mapping[str, Any]] = []
        self.events: list[Event] = []
        self.audits: list[AuditEntry] = []
        self.announcements: list[tuple[WorkloadRef, str, str]] = []

    def namespace_exists(self, name: str) -> bool:
        """The simulated cluster's namespaces are those its LocalQueues and Workloads live in."""
        with self._lock:
            kueue = self._objects.kueue
            return (
                any(ns == name for ns, _ in kueue.local_queues)
                or any(ref.namespace == name for ref in kueue.workloads)
                or name in self.rayclusters.namespaces()
            )

    # What users and controllers do.

    def create(self, spec: RayClusterSpec, *, now: datetime) -> WorkloadRef:
        """Apply a RayCluster: Kueue creates its Workload, pending until admitted; a KAI or
        plain KubeRay one gets no Workload: it is a row of its own."""
        if spec.manager in SUSPENDED_BY_US:
            return self.rayclusters.apply(spec, now=now)
        with self._changing() as objects:
            return self._queue(objects, spec, spec.workload_name, dict(spec.annotations), now=now)

    def _queue(
        self,
        objects: _Objects,
        spec: RayClusterSpec,
        name: str,
        owner_annotations: dict[str, str],
        *,
        now: datetime,
    ) -> WorkloadRef:
        workload = Workload(
            namespace=spec.namespace,
            name=name,
            queue_name=spec.queue,
            created_at=now,
            pod_sets=spec.pod_sets(),
            priority=objects.kueue.priority_value(spec.priority_class),
            priority_class=spec.priority_class,
            uid=workload_uid(WorkloadRef(spec.namespace, name)),  # named by preemptions
        )
        objects.kueue = objects.kueue.with_workload(workload)
        objects.specs[workload.ref] = spec
        objects.annotations[workload.ref] = {}
        objects.owner_annotations[workload.ref] = owner_annotations
        self._touch(workload.ref)
        return workload.ref

    def _requeue(self, objects: _Objects, ref: WorkloadRef, *, now: datetime) -> WorkloadRef:
        """Kueue's pod integration after a stop: the pod is gone, its Workload with it (owned
        by the pod); the controller's new pod has a new Workload, pending, created now."""
        spec = objects.specs.pop(ref)
        objects.former[ref] = spec
        owner_annotations = objects.owner_annotations.pop(ref)
        del objects.annotations[ref]
        objects.kueue = objects.kueue.without_workload(ref)
        objects.generations[spec.name] = generation = objects.generations.get(spec.name, 0) + 1
        name = spec.owner_kind.workload_name(spec.namespace, spec.name, generation=generation)
        return self._queue(objects, spec, name, owner_annotations, now=now)

    def set_active(self, ref: WorkloadRef, *, active: bool, now: datetime) -> None:
        """Write `spec.active`: false evicts and suspends, true requeues."""
        with self._changing() as objects:
            if ref not in objects.kueue.workloads:
                raise NotFound(f"workload {ref} not found")
            objects.kueue, events = objects.kueue.set_active(ref, active=active, now=now)
            self.events.extend(events)
            if not active:
                self._pods.delete(ref, now=now)
                if objects.specs[ref].owner_kind.requeues:
                    self._requeue(objects, ref, now=now)
                    return
            self._touch(ref)

    def annotate(
        self,
        ref: WorkloadRef,
        changes: Mapping[str, str | None],
        *,
        now: datetime,
        workload: bool = True,
        owner: bool = True,
        version: str = "",
    ) -> None:
        """Merge annotations into the Workload and/or its RayCluster (None removes a key),
        only while the Workload is still at `version` (Conflict otherwise), as a patch with a
        resourceVersion behaves; an empty `version` skips the check."""
        with self._changing() as objects:
            if ref not in objects.kueue.workloads:
                raise NotFound(f"workload {ref} not found")
            if version and version != (current := str(objects.versions.get(ref, 0))):
                raise Conflict(f"workload {ref} changed since version {version} (now {current})")
            chosen = ((workload, objects.annotations), (owner, objects.owner_annotations))
            for target in (found[ref] for wanted, found in chosen if wanted):
                merge_annotations(target, changes)
            if workload and keys.PRIORITY_BOOST in changes:
                boost = priority_boost(objects.annotations[ref])
                kueue = objects.kueue
                changed = replace(kueue.workload(ref), priority_boost=boost)
                objects.kueue = kueue.with_workload(changed)
            self._touch(ref)

    def reactivate(
        self, ref: WorkloadRef, changes: Mapping[str, str | None], *, version: str, now: datetime
    ) -> None:
        """`spec.active: true` with these Workload annotations in one write, only while the
        Workload is still at `version` (`annotate`'s check)."""
        with self._changing():
            self.annotate(ref, changes, now=now, owner=False, version=version)
            self.set_active(ref, active=True, now=now)

    def deactivate(self, ref: WorkloadRef, audit: DeactivationAudit, *, gpus: int) -> None:
        """The audit annotations and `spec.active: false` in one write, as one merge patch
        does; kept for the demo's summary with the GPUs it freed."""
        with self._changing() as objects:
            self.annotate(ref, audit.annotations(), now=audit.at, owner=False)
            owner = objects.specs[ref].known_as
            self.set_active(ref, active=False, now=self._clock.now())
            self.audits.append(AuditEntry(ref, owner, audit, gpus))

    def delete(self, ref: WorkloadRef, *, owner_uid: str, now: datetime) -> None:
        """Delete the RayCluster while its uid is still `owner_uid` (Conflict otherwise);
        its Workload and pods go with it, as owner references make them."""
        with self._changing() as objects:
            if ref not in objects.kueue.workloads:
                raise NotFound(f"the RayCluster of {ref} is not found")
            if owner_uid != _owner_uid(objects.specs[ref], ref):
                raise Conflict(f"the RayCluster of {ref} is another object now")
            self._pods.delete(ref, now=now)
            objects.kueue = objects.kueue.without_workload(ref)
            for found in (objects.specs, objects.annotations, objects.owner_annotations):
                del found[ref]

    def announce(self, ref: WorkloadRef, *, reason: str, message: str) -> None:
        """An Event on the Workload and its RayCluster."""
        with self._lock:
            self.announcements.append((ref, reason, message))

    def step(self, *, now: datetime) -> tuple[Event, ...]:
        """Kueue's admission step; KubeRay creates the pods of what it admitted."""
        with self._changing() as objects:
            objects.kueue, events = admit_pending(objects.kueue, now)
            for event in events:
                if event.kind is EventKind.ADMITTED:
                    self._pods.create(event.workload, objects.specs[event.workload], now=now)
                    self._touch(event.workload)
            self.events.extend(events)
            return events

    # The ClusterReader port.

    def list_workloads(self) -> Sequence[WorkloadInfo]:
        with self._lock:
            now = self._clock.now()
            kueue = [self._info(ref, now) for ref in sorted(self._objects.kueue.workloads)]
            return kueue + self.rayclusters.rows(now=now, namespaces=self.namespace_annotations)

    def list_gpu_pods(self) -> Sequence[PodRecord]:
        with self._lock:
            now = self._clock.now()
            return self._pods.running_with_gpus(now)

    def list_scaled_objects(self) -> Sequence[Mapping[str, Any]]:
        """The demo has no KEDA ScaledObjects unless a caller adds some."""
        with self._lock:
            return list(self.scaled_objects)

    def get_workload(self, ref: WorkloadRef) -> WorkloadInfo | None:
        with self._lock:
            now = self._clock.now()
            if ref not in self._objects.kueue.workloads:
                return self.rayclusters.row(ref, now=now, namespaces=self.namespace_annotations)
            return self._info(ref, now)

    def read_pauses(self) -> Pauses:
        return self.pauses

    # Reading for the exporter, the live view and the summary.

    def kueue_configuration(self) -> KueueConfiguration:
        """The `KueueFeatures` port: the emulated Kueue's Configuration, naming the gates it
        emulates as they are set (the simulator knows its own flags; a real cluster's
        `--feature-gates` cannot be read)."""
        features = self._objects.kueue.features
        return KueueConfiguration(
            source=SIMULATED_CONFIGURATION,
            api_version=V1BETA2,
            feature_gates={PRIORITY_BOOST_GATE: features.priority_boost},
        )

    def gpu_holdings(self) -> Sequence[GpuHolding]:
        with self._lock:
            return self._pods.holdings()

    def kueue(self) -> KueueState:
        with self._lock:
            return self._objects.kueue

    def spec(self, ref: WorkloadRef) -> RayClusterSpec:
        """The RayCluster of a Workload (one gone too), or of a row of its own."""
        with self._lock:
            own = self.rayclusters.get(ref)
            if own is not None:
                return own.spec
            objects = self._objects
            return objects.specs[ref] if ref in objects.specs else objects.former[ref]

    def pods(self, ref: WorkloadRef) -> tuple[SimPod, ...]:
        with self._lock:
            return self._pods.of(ref)

    def waiting_reason(self, ref: WorkloadRef) -> str | None:
        """Why Kueue has not admitted it (None when it is not pending)."""
        with self._lock:
            return pending_reason(self._objects.kueue, ref)

    # Helpers (called with the lock held).

    @contextmanager
    def _changing(self) -> Iterator[_Objects]:
        with self._lock:
            yield self._objects

    def _touch(self, ref: WorkloadRef) -> None:
        versions = self._objects.versions
        versions[ref] = versions.get(ref, 0) + 1

    def _info(self, ref: WorkloadRef, now: datetime) -> WorkloadInfo:
        objects = self._objects
        workload, spec = objects.kueue.workload(ref), objects.specs[ref]
        admission = workload.admission if workload.phase is Phase.ADMITTED else None
        owner_labels = {KUEUE_QUEUE_LABEL: spec.queue}
        if spec.priority_class:
            owner_labels[keys.PRIORITY_CLASS_LABEL] = spec.priority_class
        return WorkloadInfo(
            ref=ref,
            uid=workload_uid(ref),
            queue=workload.queue_name,
            owner=OwnerRef(
                spec.owner_kind.api_version, spec.kind, spec.name, _owner_uid(spec, ref)
            ),
            active=workload.active,
            admitted=admission is not None,
            admitted_at=admission.at if admission is not None else None,
            created_at=workload.created_at,
            expected_pods=workload.pod_count,
            pods=tuple(pod.info(now) for pod in self._pods.of(ref)),
            priority_class=workload.priority_class,
            annotations=dict(objects.annotations[ref]),
            owner_annotations=dict(objects.owner_annotations[ref]),
            owner_labels=owner_labels,
            namespace_annotations=dict(self.namespace_annotations.get(ref.namespace, {})),
            cluster_queue=objects.kueue.cluster_queue_name(workload),
            resource_version=str(objects.versions.get(ref, 0)),
            evicted_reason="Deactivated" if workload.phase is Phase.INACTIVE else None,
            evicted_at=workload.evicted_at if workload.phase is Phase.INACTIVE else None,
            cohort=cohort_of(objects.kueue, workload),
            priority=workload.priority,
            admitted_usage=admitted_usage(objects.kueue, workload),
            admission=admission_facts(objects.kueue, workload),
            preemption=preemption_of(workload),
        )


# Kueue's preemption message names the preemptor's UID (pkg/scheduler/preemption/
# preemption.go, `preemptionMessage`: "Preempted to accommodate a workload (UID: <uid>, ...").
_PREEMPTOR_UID = re.compile(r"\(UID: ([^,)]+)")


def preemption_of(workload: Workload) -> Preemption | None:
    """What the Evicted (Preempted) and Preempted conditions say while they stand."""
    found = workload.preempted
    if found is None or not workload.evicted_by_preemption:
        return None
    named = _PREEMPTOR_UID.search(found.message)
    uid = named.group(1) if named else ""
    return Preemption("" if uid == "UNKNOWN" else uid, found.reason, found.at)


def priority_boost(annotations: Mapping[str, str]) -> int:
    """The boost annotation as Kueue reads it: an int32, else none (pkg/util/priority/
    priority.go `EffectivePriority` falls back to the base priority on a parse error)."""
    try:
        boost = int(annotations.get(keys.PRIORITY_BOOST, "0"))
    except ValueError:
        return 0
    return boost if -(2**31) <= boost < 2**31 else 0


def _owner_uid(spec: RayClusterSpec, ref: WorkloadRef) -> str:
    """The owner's uid: one per owner, whichever Workload Kueue's pod integration made last."""
    if spec.owner_kind.requeues:
        return sim_uid(spec.kind, WorkloadRef(spec.namespace, spec.name))
    return sim_uid(spec.kind, ref)
