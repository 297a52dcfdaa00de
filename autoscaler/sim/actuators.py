"""The simulated cluster's actuators, one per manager (the managers' table is
`domain/policy/management.py`): the twins of the adapters' writes, for the demo's loop and its
REST API, in the same order as `serve`'s. `SIMULATED` says which twin writes on whose rows.

`SimulatedActuator` (Kueue's): writes land on the `SimulatedCluster`, which bumps the
Workload's version as the API server bumps a resourceVersion (so reactivation is guarded);
owner annotations land on the RayCluster.

`SimulatedSuspendActuator` (KAI's and plain KubeRay's): the RayClusters no Kueue Workload
admits, on `SimulatedCluster.rayclusters`. Deactivate: the audit annotations and what
spec.suspend was (`SUSPEND_WAS`), guarded by the row's resourceVersion, then spec.suspend true
alone; if that is refused, the annotations are taken back. Reactivate: spec.suspend restored
from `SUSPEND_WAS`, with the given annotations, in one guarded write; refused when this service
did not suspend it. The row is the RayCluster, so every annotation lands on it and there is no
owner to write besides.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol

from autoscaler.core.errors import AnswerLost, ClusterError, Conflict, NotFound
from autoscaler.core.ports import Clock, WorkloadActuator
from autoscaler.domain.annotations import (
    SUSPEND_WAS,
    DeactivationAudit,
    NotOurs,
    restored_suspend,
    suspend_was_text,
)
from autoscaler.domain.audit.records import Annotated
from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.policy.management import MANAGERS, Manager
from autoscaler.sim.cluster import AuditEntry, SimulatedCluster
from autoscaler.sim.rayclusters import RayClusterObject

Annotations = Mapping[str, str | None]


class Twin(Protocol):
    def __call__(self, *, cluster: SimulatedCluster, clock: Clock) -> WorkloadActuator: ...


class SimulatedActuator:
    def __init__(self, *, cluster: SimulatedCluster, clock: Clock) -> None:
        self._cluster = cluster
        self._clock = clock

    def deactivate(self, workload: WorkloadInfo, audit: DeactivationAudit) -> None:
        self._cluster.deactivate(workload.ref, audit, gpus=workload.gpus)

    def reactivate(self, workload: WorkloadInfo, annotations: Annotations) -> None:
        self._cluster.reactivate(
            workload.ref, annotations, version=workload.resource_version, now=self._clock.now()
        )

    def writes_owner(self, workload: WorkloadInfo) -> bool:
        return workload.owner is not None

    def annotate_owner(self, workload: WorkloadInfo, annotations: Annotations) -> Annotated:
        owner = workload.owner
        if owner is None:
            return self.annotate_workload(workload, annotations)
        self._cluster.annotate(workload.ref, annotations, now=self._clock.now(), workload=False)
        return Annotated(owner.kind, workload.ref.namespace, owner.name)

    def annotate_workload(
        self,
        workload: WorkloadInfo,
        annotations: Annotations,
        *,
        resource_version: str | None = None,
    ) -> Annotated:
        ref, version = workload.ref, resource_version or ""
        self._cluster.annotate(
            ref, annotations, now=self._clock.now(), owner=False, version=version
        )
        return Annotated("Workload", ref.namespace, ref.name)

    def delete_owner(self, workload: WorkloadInfo) -> None:
        owner_uid = workload.owner.uid if workload.owner is not None else ""
        self._cluster.delete(workload.ref, owner_uid=owner_uid, now=self._clock.now())

    def announce(self, workload: WorkloadInfo, *, reason: str, message: str) -> None:
        self._cluster.announce(workload.ref, reason=reason, message=message)


class SimulatedSuspendActuator:
    def __init__(self, *, cluster: SimulatedCluster, clock: Clock) -> None:
        self._cluster = cluster
        self._rayclusters = cluster.rayclusters
        self._clock = clock

    def deactivate(self, workload: WorkloadInfo, audit: DeactivationAudit) -> None:
        ref, rayclusters = workload.ref, self._rayclusters
        suspend = self._object(workload).suspend
        if suspend is True:
            raise Conflict(f"RayCluster {ref} is suspended already: left as it is")
        record = {**audit.annotations(), SUSPEND_WAS: suspend_was_text(suspend)}
        rayclusters.annotate(ref, record, version=workload.resource_version)
        try:
            rayclusters.set_suspend(ref, True, now=self._clock.now())
        except ClusterError as exc:
            if not isinstance(exc, AnswerLost):  # refused: each key back to what it held
                rayclusters.annotate(ref, {key: workload.annotations.get(key) for key in record})
            raise
        self._cluster.audits.append(AuditEntry(ref, workload.ref.name, audit, workload.gpus))

    def reactivate(self, workload: WorkloadInfo, annotations: Annotations) -> None:
        # As read: the version guards the write.
        restored = restored_suspend(workload.annotations.get(SUSPEND_WAS))
        if isinstance(restored, NotOurs):
            raise Conflict(f"RayCluster {workload.ref}: {restored.reason}: left as it is")
        self._rayclusters.set_suspend(
            workload.ref,
            restored,
            now=self._clock.now(),
            annotations={**annotations, SUSPEND_WAS: None},
            version=workload.resource_version,
        )

    def writes_owner(self, workload: WorkloadInfo) -> bool:
        return False  # the row is the RayCluster: its own patch carries every annotation

    def annotate_owner(self, workload: WorkloadInfo, annotations: Annotations) -> Annotated:
        return self.annotate_workload(workload, annotations)

    def annotate_workload(
        self,
        workload: WorkloadInfo,
        annotations: Annotations,
        *,
        resource_version: str | None = None,
    ) -> Annotated:
        ref = workload.ref
        self._rayclusters.annotate(ref, annotations, version=resource_version or "")
        return Annotated("RayCluster", ref.namespace, ref.name)

    def delete_owner(self, workload: WorkloadInfo) -> None:
        uid = workload.owner.uid if workload.owner is not None else ""
        self._rayclusters.delete(workload.ref, uid=uid, now=self._clock.now())

    def announce(self, workload: WorkloadInfo, *, reason: str, message: str) -> None:
        self._cluster.announce(workload.ref, reason=reason, message=message)

    def _object(self, workload: WorkloadInfo) -> RayClusterObject:
        found = self._rayclusters.get(workload.ref)
        if found is None:
            raise NotFound(f"RayCluster {workload.ref} not found")
        return found


SIMULATED: Mapping[Manager, Twin] = {
    Manager.KUEUE: SimulatedActuator,
    Manager.KAI: SimulatedSuspendActuator,
    Manager.KUBERAY: SimulatedSuspendActuator,
}


def simulated_actuators(
    cluster: SimulatedCluster, *, clock: Clock, enabled: Collection[Manager]
) -> dict[Manager, WorkloadActuator]:
    """The twin of each enabled manager's actuator, as `compose.managers.build_actuator`
    builds the real ones."""
    return {
        manager: SIMULATED[manager](cluster=cluster, clock=clock)
        for manager in MANAGERS
        if manager in enabled
    }
