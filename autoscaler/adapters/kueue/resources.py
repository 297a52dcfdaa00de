"""Where Kueue's Workloads and their owners live in the API."""

from __future__ import annotations

from collections.abc import Mapping

from autoscaler.adapters.kubernetes.resources import JOBS, RAYCLUSTERS, RAYJOBS, ApiResource
from autoscaler.domain.models import OwnerRef

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta2", "v1beta1")  # newest first; older Kueue releases serve only v1beta1
OWNER_RESOURCES: Mapping[str, ApiResource] = {
    "RayCluster": RAYCLUSTERS,
    "RayJob": RAYJOBS,
    "Job": JOBS,
}


def owner_resource(owner: OwnerRef | None) -> ApiResource | None:
    """Where an owner lives, when it is a kind we know and its API group matches."""
    if owner is None:
        return None
    resource = OWNER_RESOURCES.get(owner.kind)
    group = owner.api_version.rpartition("/")[0]
    return resource if resource is not None and resource.group == group else None
