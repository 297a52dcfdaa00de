"""The `WorkloadActuator` over the simulated cluster, for the demo's loop and its REST API.

Writes land on the `SimulatedCluster`, which bumps the Workload's version as the API server
bumps a resourceVersion (so reactivation is guarded); owner annotations land on the
RayCluster. The order of the writes is `engine.actuation`'s, as in `serve`.
"""

from __future__ import annotations

from collections.abc import Mapping

from autoscaler.core.ports import Clock
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.audit.records import Annotated
from autoscaler.domain.models import WorkloadInfo
from autoscaler.sim.cluster import SimulatedCluster

Annotations = Mapping[str, str | None]


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
