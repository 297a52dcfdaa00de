"""One `WorkloadActuator` over several (ISSUE 17): each workload is written by the actuator
of what manages it (`WorkloadInfo.manager`): Kueue's Workload patch, or the RayCluster
suspend of KAI Scheduler and plain KubeRay. The mapping is built per enabled manager by the
composition root (`compose/managers.py`; the demo's twins, `sim/actuators.py`). The act
sequence (`engine/acting/sequence.py`), the loop and the REST routes see one actuator and
never branch on the manager themselves.

A workload the adapter marked hands-off (a RayJob's or an AppWrapper's RayCluster, KAI's
fractional GPUs) is never stopped nor deleted, whoever asks: the loop's policy leaves it
alone, and here an admin's "deactivate now" is refused too (a Conflict: the REST 409)."""

from __future__ import annotations

from collections.abc import Mapping

from autoscaler.core.errors import Conflict
from autoscaler.core.ports import WorkloadActuator
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.audit.records import Annotated
from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.policy.management import Manager

Annotations = Mapping[str, str | None]


class ActuatorByManager:
    def __init__(self, actuators: Mapping[Manager, WorkloadActuator]) -> None:
        """`actuators`: one per enabled manager; a workload of another is never written."""
        self._actuators = dict(actuators)

    def writes_owner(self, workload: WorkloadInfo) -> bool:
        return self._for(workload).writes_owner(workload)

    def deactivate(self, workload: WorkloadInfo, audit: DeactivationAudit) -> None:
        _refuse_hands_off(workload, "not deactivated")
        self._for(workload).deactivate(workload, audit)

    def reactivate(self, workload: WorkloadInfo, annotations: Annotations) -> None:
        self._for(workload).reactivate(workload, annotations)

    def annotate_owner(self, workload: WorkloadInfo, annotations: Annotations) -> Annotated:
        return self._for(workload).annotate_owner(workload, annotations)

    def annotate_workload(
        self,
        workload: WorkloadInfo,
        annotations: Annotations,
        *,
        resource_version: str | None = None,
    ) -> Annotated:
        actuator = self._for(workload)
        return actuator.annotate_workload(workload, annotations, resource_version=resource_version)

    def announce(self, workload: WorkloadInfo, *, reason: str, message: str) -> None:
        self._for(workload).announce(workload, reason=reason, message=message)

    def delete_owner(self, workload: WorkloadInfo) -> None:
        _refuse_hands_off(workload, "not deleted")
        self._for(workload).delete_owner(workload)

    def _for(self, workload: WorkloadInfo) -> WorkloadActuator:
        actuator = self._actuators.get(workload.manager)
        if actuator is None:
            raise Conflict(  # the workload's state, not a failing cluster: the REST 409
                f"{workload.ref}: no {workload.manager} actuator is enabled; nothing written"
            )
        return actuator


def _refuse_hands_off(workload: WorkloadInfo, outcome: str) -> None:
    """A Conflict, before any write, when the workload must never be stopped."""
    if workload.hands_off is not None:
        raise Conflict(f"{workload.ref}: {workload.hands_off.reason}; {outcome}")
