"""The `WorkloadActuator` over Kueue: every write on a Workload and its owner.

Each write is one JSON merge patch through the one Kubernetes client (a `null` value removes
an annotation). The order of the writes is not decided here but in `engine.actuation`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from autoscaler.adapters.kubernetes import objects
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.patches import annotations_patch
from autoscaler.adapters.kubernetes.resources import EVENTS, ApiResource, Obj
from autoscaler.adapters.kueue.resources import owner_resource
from autoscaler.core.errors import NotFound
from autoscaler.core.ports import Clock
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.audit.records import Annotated
from autoscaler.domain.models import OwnerRef, WorkloadInfo
from autoscaler.domain.policy.owners import known_owner

Annotations = Mapping[str, str | None]


class KueueActuator:
    def __init__(
        self,
        *,
        client: KubeClient,
        workloads: Callable[[], ApiResource],
        clock: Clock,
        owner_kinds: Collection[str] | None = None,
    ) -> None:
        """`owner_kinds`: the owner kinds enabled in the settings (None: every known kind).
        The chart grants `patch` on those only, so an owner of another kind is never written:
        its annotations go on the Workload."""
        self._client = client
        self._workloads = workloads  # the served Kueue version, discovered by the reader
        self._clock = clock
        self._owner_kinds = None if owner_kinds is None else frozenset(owner_kinds)

    def deactivate(self, workload: WorkloadInfo, audit: DeactivationAudit) -> None:
        """`spec.active: false` and the audit annotations in one patch: the annotation is
        proof the patch applied. Raises AnswerLost when its answer is lost."""
        body = {"metadata": {"annotations": audit.annotations()}, "spec": {"active": False}}
        self._patch_workload(workload, body)

    def reactivate(self, workload: WorkloadInfo, annotations: Annotations) -> None:
        """`spec.active: true` and the reactivation record in one patch, applied only if the
        Workload is unchanged since it was read (else Conflict)."""
        metadata = annotations_patch(annotations, resource_version=workload.resource_version)
        self._patch_workload(workload, {"metadata": metadata, "spec": {"active": True}})

    def annotate_owner(self, workload: WorkloadInfo, annotations: Annotations) -> Annotated:
        """Annotate the Workload's owner, or the Workload itself when the owner is of a kind
        we do not know or that is not enabled."""
        resource = owner_resource(workload.owner)
        if workload.owner is None or resource is None or not self.writes_owner(workload):
            return self.annotate_workload(workload, annotations)
        namespace = workload.ref.namespace
        body = {"metadata": {"annotations": dict(annotations)}}
        self._client.merge_patch(resource, workload.owner.name, body, namespace=namespace)
        return Annotated(workload.owner.kind, namespace, workload.owner.name)

    def annotate_workload(
        self,
        workload: WorkloadInfo,
        annotations: Annotations,
        *,
        resource_version: str | None = None,
    ) -> Annotated:
        """With `resource_version`, applied only if the Workload is still at it (Conflict)."""
        metadata = annotations_patch(annotations, resource_version=resource_version)
        self._patch_workload(workload, {"metadata": metadata})
        ref = workload.ref
        return Annotated("Workload", ref.namespace, ref.name)

    def delete_owner(self, workload: WorkloadInfo) -> None:
        """DELETE the owner with its UID as read for a precondition: a RayCluster re-created
        under the same name since is another object (Conflict) and stays. The API server's
        garbage collector removes the Workload it owns, in the background."""
        owner = workload.owner
        resource = owner_resource(owner)
        if owner is None or resource is None or not owner.uid:
            raise NotFound(f"{workload.ref} has no owner this service can delete")
        namespace = workload.ref.namespace
        self._client.delete(resource, owner.name, namespace=namespace, uid=owner.uid)

    def announce(self, workload: WorkloadInfo, *, reason: str, message: str) -> None:
        """An Event on the Workload, and one on its owner."""
        now, namespace = self._clock.now(), workload.ref.namespace
        api_version = self._workloads().api_version
        targets = [OwnerRef(api_version, "Workload", workload.ref.name, workload.uid)]
        targets += [workload.owner] if workload.owner is not None else []
        for target in targets:
            event = objects.event_for(
                target, namespace=namespace, reason=reason, message=message, now=now
            )
            self._client.create(EVENTS, event, namespace=namespace)

    def writes_owner(self, workload: WorkloadInfo) -> bool:
        owner = workload.owner
        row = known_owner(owner)
        if owner is None or row is None or not row.annotated or owner_resource(owner) is None:
            return False
        return self._owner_kinds is None or owner.kind in self._owner_kinds

    def _patch_workload(self, workload: WorkloadInfo, body: Obj) -> None:
        ref = workload.ref
        self._client.merge_patch(self._workloads(), ref.name, body, namespace=ref.namespace)
