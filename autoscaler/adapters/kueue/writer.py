"""The writes the API makes on workloads that the loop's `Cluster` port does not offer:
annotations on a Workload's owner (or the Workload), and reactivation.

Everything goes through the one Kubernetes client as JSON merge patches; a `null` value
removes an annotation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.resources import ApiResource
from autoscaler.adapters.kueue.cluster import OWNER_RESOURCES
from autoscaler.domain.models import OwnerRef, WorkloadInfo
from autoscaler.domain.records import Annotated

KUEUE_GROUP = "kueue.x-k8s.io"
Annotations = Mapping[str, str | None]


def owner_resource(owner: OwnerRef | None) -> ApiResource | None:
    """Where an owner lives, when it is a kind we know and its API group matches."""
    if owner is None:
        return None
    resource = OWNER_RESOURCES.get(owner.kind)
    group = owner.api_version.rpartition("/")[0]
    return resource if resource is not None and resource.group == group else None


class WorkloadWriter:
    def __init__(self, *, client: KubeClient, workloads: Callable[[], ApiResource]) -> None:
        self._client = client
        self._workloads = workloads  # the served Kueue version, discovered by the adapter

    def annotate_owner(self, workload: WorkloadInfo, annotations: Annotations) -> Annotated:
        """Annotate the Workload's owner, or the Workload itself when the owner is unknown."""
        resource = owner_resource(workload.owner)
        if workload.owner is None or resource is None:
            return self.annotate_workload(workload, annotations)
        namespace = workload.ref.namespace
        body = {"metadata": {"annotations": dict(annotations)}}
        self._client.merge_patch(resource, workload.owner.name, body, namespace=namespace)
        return Annotated(workload.owner.kind, namespace, workload.owner.name)

    def annotate_workload(self, workload: WorkloadInfo, annotations: Annotations) -> Annotated:
        ref = workload.ref
        body = {"metadata": {"annotations": dict(annotations)}}
        self._client.merge_patch(self._workloads(), ref.name, body, namespace=ref.namespace)
        return Annotated("Workload", ref.namespace, ref.name)

    def reactivate(self, workload: WorkloadInfo, annotations: Annotations) -> None:
        """`spec.active: true` and the reactivation record in one patch, applied only if the
        Workload is unchanged since it was read (else Conflict)."""
        ref = workload.ref
        metadata: dict[str, object] = {"annotations": dict(annotations)}
        if workload.resource_version:
            metadata["resourceVersion"] = workload.resource_version
        body = {"metadata": metadata, "spec": {"active": True}}
        self._client.merge_patch(self._workloads(), ref.name, body, namespace=ref.namespace)
