"""Where a Workload and the owners this service knows live in the Kubernetes API.

Plain facts, shared by the Kueue adapter (which adds the served versions) and the REST API
(which asks for `patch` on the object a person's change lands on).
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.domain.models import OwnerRef

KUEUE_GROUP = "kueue.x-k8s.io"
WORKLOADS = "workloads"


@dataclass(frozen=True)
class OwnerKind:
    group: str
    plural: str


KNOWN_OWNERS: dict[str, OwnerKind] = {
    "RayCluster": OwnerKind("ray.io", "rayclusters"),
    "RayJob": OwnerKind("ray.io", "rayjobs"),
    "Job": OwnerKind("batch", "jobs"),
}


def known_owner(owner: OwnerRef | None) -> OwnerKind | None:
    """The owner's kind when we know it and its API group matches (a namesake kind of
    another group is not ours to write)."""
    if owner is None:
        return None
    kind = KNOWN_OWNERS.get(owner.kind)
    group = owner.api_version.rpartition("/")[0]
    return kind if kind is not None and kind.group == group else None
