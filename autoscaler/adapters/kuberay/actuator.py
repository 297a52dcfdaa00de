"""The `WorkloadActuator` of a RayCluster no Kueue Workload admits (KAI Scheduler's or plain
KubeRay's): it is suspended (`spec.suspend: true`) and KubeRay deletes all of its pods at
once, so a KAI gang is never split.

Deactivate is two merge patches: the audit annotations with SUSPEND_WAS (what spec.suspend
was), guarded by the row's resourceVersion, then exactly `{"spec":{"suspend":true}}`. If the
suspend is refused, the annotations are taken back. Reactivate restores SUSPEND_WAS in one
guarded patch and refuses a RayCluster this service did not suspend. The row IS the
RayCluster, so there is no separate owner to annotate.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from autoscaler.adapters.kubernetes import objects
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.patches import annotations_patch
from autoscaler.adapters.kubernetes.resources import EVENTS, RAYCLUSTERS, Obj
from autoscaler.core.errors import AnswerLost, ClusterError, Conflict, NotFound
from autoscaler.core.ports import Clock
from autoscaler.domain.annotations import (
    SUSPEND_WAS,
    DeactivationAudit,
    NotOurs,
    restored_suspend,
    suspend_was_text,
)
from autoscaler.domain.audit.records import Annotated
from autoscaler.domain.models import OwnerRef, WorkloadInfo

Annotations = Mapping[str, str | None]
SUSPEND = {"spec": {"suspend": True}}  # the must-show: this body and nothing else


class SuspendActuator:
    def __init__(
        self, *, client: KubeClient, clock: Clock, logger: logging.Logger | None = None
    ) -> None:
        self._client = client
        self._clock = clock
        self._log = logger or logging.getLogger(__name__)

    def writes_owner(self, workload: WorkloadInfo) -> bool:
        return False  # the owner is the row itself: its patches carry everything

    def deactivate(self, workload: WorkloadInfo, audit: DeactivationAudit) -> None:
        """Annotations first (guarded), then the suspend. Raises AnswerLost when an answer is
        lost, Conflict when the RayCluster changed or is suspended already."""
        was = suspend_was_text(self._suspend_now(workload))
        marked = {**audit.annotations(), SUSPEND_WAS: was}
        self.annotate_workload(workload, marked, resource_version=workload.resource_version)
        try:
            self._patch(workload, SUSPEND)
        except AnswerLost:
            raise
        except ClusterError:
            self._take_back(workload, marked)
            raise

    def reactivate(self, workload: WorkloadInfo, annotations: Annotations) -> None:
        """spec.suspend as it was before we suspended it, with `annotations`, in one patch
        guarded by the row's resourceVersion; Conflict when we did not suspend it."""
        restored = restored_suspend(workload.annotations.get(SUSPEND_WAS))
        if isinstance(restored, NotOurs):
            raise Conflict(f"{workload.ref}: {restored.reason}: left as it is")
        metadata = annotations_patch(
            {**annotations, SUSPEND_WAS: None}, resource_version=workload.resource_version
        )
        self._patch(workload, {"metadata": metadata, "spec": {"suspend": restored}})

    def annotate_owner(self, workload: WorkloadInfo, annotations: Annotations) -> Annotated:
        return self.annotate_workload(workload, annotations)

    def annotate_workload(
        self,
        workload: WorkloadInfo,
        annotations: Annotations,
        *,
        resource_version: str | None = None,
    ) -> Annotated:
        """The RayCluster's annotations; with `resource_version`, only while it is at it."""
        metadata = annotations_patch(annotations, resource_version=resource_version)
        self._patch(workload, {"metadata": metadata})
        return Annotated("RayCluster", workload.ref.namespace, workload.ref.name)

    def announce(self, workload: WorkloadInfo, *, reason: str, message: str) -> None:
        """One Event on the RayCluster."""
        namespace = workload.ref.namespace
        event = objects.event_for(
            self._target(workload),
            namespace=namespace,
            reason=reason,
            message=message,
            now=self._clock.now(),
        )
        self._client.create(EVENTS, event, namespace=namespace)

    def delete_owner(self, workload: WorkloadInfo) -> None:
        """DELETE the RayCluster while its UID is the one read (a namesake stays)."""
        if not workload.uid:
            raise NotFound(f"{workload.ref} has no UID: not deleted")
        ref = workload.ref
        self._client.delete(RAYCLUSTERS, ref.name, namespace=ref.namespace, uid=workload.uid)

    def _suspend_now(self, workload: WorkloadInfo) -> bool | None:
        """What spec.suspend is now (False, or None: absent), read at the row's version."""
        ref = workload.ref
        found = self._client.get(RAYCLUSTERS, ref.name, namespace=ref.namespace)
        version = str((found.get("metadata") or {}).get("resourceVersion", ""))
        if workload.resource_version and version != workload.resource_version:
            raise Conflict(f"{ref} changed since it was read: not suspended")
        suspend = (found.get("spec") or {}).get("suspend")
        if suspend is True:
            raise Conflict(f"{ref} is suspended already: left as it is")
        return None if suspend is None else False

    def _take_back(self, workload: WorkloadInfo, marked: Annotations) -> None:
        """Best effort: the suspend was refused, so the annotations must not claim it. Each
        key gets back what it held before (an earlier deactivation's audit stays)."""
        try:
            self.annotate_workload(workload, {key: workload.annotations.get(key) for key in marked})
        except ClusterError as exc:
            self._log.warning(
                "suspend of %s refused, and its annotations not taken back: %s", workload.ref, exc
            )

    def _target(self, workload: WorkloadInfo) -> OwnerRef:
        ref = workload.ref
        return workload.owner or OwnerRef("ray.io/v1", "RayCluster", ref.name, workload.uid)

    def _patch(self, workload: WorkloadInfo, body: Obj) -> None:
        ref = workload.ref
        self._client.merge_patch(RAYCLUSTERS, ref.name, body, namespace=ref.namespace)
