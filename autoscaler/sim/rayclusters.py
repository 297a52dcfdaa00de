"""RayClusters no Kueue Workload admits (ISSUE 17): labelled with a KAI Scheduler queue, each
read as a row of its own (below) and freed through its `spec.suspend`.

KAI places the whole gang at once here (its queues always have room in the demo): the pods are
created when the RayCluster is applied or resumed, and deleted when it is suspended, as
KubeRay does. Writes behave as merge patches: annotations (None removes a key), spec.suspend
(None removes the field), guarded by the resourceVersion when the writer names one.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from autoscaler.core.errors import Conflict, NotFound
from autoscaler.domain.models import OwnerRef, PodInfo, State, WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.claims import RayClusterFacts, claim
from autoscaler.domain.policy.management import (
    KAI_FLAVOR,
    KAI_GPU,
    KAI_PRIORITY_LABEL,
    HandsOff,
    Manager,
    kai_cluster_queue,
)
from autoscaler.sim.cluster_pods import ClusterPods
from autoscaler.sim.pods import RayClusterSpec
from autoscaler.sim.workload_info import sim_uid


@dataclass
class RayClusterObject:
    """One RayCluster as the API server holds it."""

    spec: RayClusterSpec
    created_at: datetime
    annotations: dict[str, str] = field(default_factory=dict)
    suspend: bool | None = None  # spec.suspend; None: the field is absent
    version: int = 1
    resumed_at: datetime | None = None  # the last time spec.suspend stopped being true


class SuspendableRayClusters:
    def __init__(
        self, *, pods: ClusterPods, lock: threading.RLock, enabled: Collection[Manager]
    ) -> None:
        """`pods` and `lock`: the simulated cluster's; `enabled`: the actuators the service
        runs with, since only a RayCluster one of them may suspend is read as a row."""
        self._pods = pods
        self._lock = lock
        self._enabled = frozenset(enabled)
        self._objects: dict[WorkloadRef, RayClusterObject] = {}

    def apply(
        self, spec: RayClusterSpec, *, now: datetime, suspend: bool | None = None
    ) -> WorkloadRef:
        """Create the RayCluster; its pods come unless it is created suspended."""
        ref = WorkloadRef(spec.namespace, spec.name)
        with self._lock:
            self._objects[ref] = RayClusterObject(
                spec, created_at=now, annotations=dict(spec.annotations), suspend=suspend
            )
            if suspend is not True:
                self._pods.create(ref, spec, now=now)
            return ref

    def annotate(
        self, ref: WorkloadRef, changes: Mapping[str, str | None], *, version: str = ""
    ) -> None:
        """A merge patch of metadata.annotations, only at `version` when one is named."""
        with self._lock:
            found = self._checked(ref, version)
            merge_annotations(found.annotations, changes)
            found.version += 1

    def set_suspend(
        self,
        ref: WorkloadRef,
        suspend: bool | None,
        *,
        now: datetime,
        annotations: Mapping[str, str | None] | None = None,
        version: str = "",
    ) -> None:
        """A merge patch of spec.suspend (with these annotations, in the same write): KubeRay
        deletes the pods when it turns true and creates them anew when it stops being true."""
        with self._lock:
            found = self._checked(ref, version)
            merge_annotations(found.annotations, annotations or {})
            was, found.suspend = found.suspend is True, suspend
            found.version += 1
            if suspend is True and not was:
                self._pods.delete(ref, now=now)
            elif suspend is not True and was:
                self._pods.create(ref, found.spec, now=now)
                found.resumed_at = now

    def delete(self, ref: WorkloadRef, *, uid: str, now: datetime) -> None:
        """Delete it while its uid is still `uid` (Conflict otherwise); its pods go with it."""
        with self._lock:
            self._checked(ref, "")
            if uid != sim_uid("RayCluster", ref):
                raise Conflict(f"RayCluster {ref} is another object now")
            self._pods.delete(ref, now=now)
            del self._objects[ref]

    def get(self, ref: WorkloadRef) -> RayClusterObject | None:
        with self._lock:
            return self._objects.get(ref)

    def rows(
        self, *, now: datetime, namespaces: Mapping[str, Mapping[str, str]]
    ) -> list[WorkloadInfo]:
        """The rows of the RayClusters an enabled actuator may suspend, by ref."""
        with self._lock:
            found = (self.row(ref, now=now, namespaces=namespaces) for ref in sorted(self._objects))
            return [row for row in found if row is not None]

    def row(
        self, ref: WorkloadRef, *, now: datetime, namespaces: Mapping[str, Mapping[str, str]]
    ) -> WorkloadInfo | None:
        """The row read now; None when there is no such RayCluster or it is not ours to act on
        (an actuator not enabled)."""
        with self._lock:
            found = self._objects.get(ref)
            if found is None:
                return None
            pods = tuple(pod.info(now) for pod in self._pods.of(ref))
            return raycluster_row(
                ref,
                found,
                pods=pods,
                enabled=self._enabled,
                namespace_annotations=namespaces.get(ref.namespace, {}),
            )

    def resumed(self) -> dict[WorkloadRef, datetime]:
        """When each RayCluster was last resumed, for those that were."""
        with self._lock:
            return {
                ref: found.resumed_at
                for ref, found in self._objects.items()
                if found.resumed_at is not None
            }

    def namespaces(self) -> Sequence[str]:
        with self._lock:
            return sorted({ref.namespace for ref in self._objects})

    def _checked(self, ref: WorkloadRef, version: str) -> RayClusterObject:
        found = self._objects.get(ref)
        if found is None:
            raise NotFound(f"RayCluster {ref} not found")
        if version and version != str(found.version):
            raise Conflict(
                f"RayCluster {ref} changed since version {version} (now {found.version})"
            )
        return found


def merge_annotations(target: dict[str, str], changes: Mapping[str, str | None]) -> None:
    """Apply `changes` to `target` as a merge patch of metadata.annotations does: None
    removes the key."""
    for key, value in changes.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value


if TYPE_CHECKING:
    from autoscaler.sim.rayclusters import RayClusterObject


def raycluster_row(
    ref: WorkloadRef,
    found: RayClusterObject,
    *,
    pods: tuple[PodInfo, ...],
    enabled: Collection[Manager],
    namespace_annotations: Mapping[str, str],
) -> WorkloadInfo | None:
    spec, labels = found.spec, found.spec.labels
    facts = RayClusterFacts(
        labels=labels, annotations=found.annotations, controller=None, admitting_workload=None
    )
    manager = claim(facts, enabled=enabled).manager
    if manager is None:
        return None
    active = found.suspend is not True
    kai = manager is Manager.KAI
    gpus = sum(pod.gpus for pod in pods)
    uid = sim_uid("RayCluster", ref)
    admitted = active and any(pod.phase_running for pod in pods)
    return WorkloadInfo(
        ref=ref,
        uid=uid,
        queue=spec.queue if kai else "",
        owner=OwnerRef("ray.io/v1", "RayCluster", spec.name, uid),
        active=active,
        admitted=admitted,
        admitted_at=min(pod.created_at for pod in pods) if admitted else None,
        created_at=found.created_at,
        expected_pods=1 + sum(group.replicas for group in spec.workers),
        pods=pods,
        priority_class=labels.get(KAI_PRIORITY_LABEL) if kai else spec.priority_class,
        annotations=dict(found.annotations),
        owner_annotations=dict(found.annotations),
        owner_labels=labels,
        cluster_queue=kai_cluster_queue(spec.queue) if kai else None,
        resource_version=str(found.version),
        namespace_annotations=dict(namespace_annotations),
        admitted_usage={(KAI_FLAVOR, KAI_GPU): gpus} if kai and gpus else {},
        manager=manager,
        hands_off=_fractional(found, pods),
    )


def _fractional(found: RayClusterObject, pods: tuple[PodInfo, ...]) -> HandsOff | None:
    fraction = found.spec.gpu_fraction
    if fraction is None:
        return None
    pod = pods[0].name if pods else f"{found.spec.name}-head"
    reason = f"KAI fractional GPUs (gpu-fraction {fraction} on pod {pod}) are not supported"
    return HandsOff(State.UNSUPPORTED, f"{reason}: never stopped")
