"""Where Kueue's Workloads and their owners live in the API: the domain's owner kinds
(domain/policy/owners.py) at the version this adapter reads and writes."""

from __future__ import annotations

from collections.abc import Mapping

from autoscaler.adapters.kubernetes.resources import ApiResource, owner_resource_of
from autoscaler.domain.models import OwnerRef
from autoscaler.domain.policy.owners import KUEUE_GROUP, OWNER_KINDS, known_owner

__all__ = ["KUEUE_GROUP", "KUEUE_VERSIONS", "OWNER_RESOURCES", "owner_resource"]

KUEUE_VERSIONS = ("v1beta2", "v1beta1")  # newest first; older Kueue releases serve only v1beta1
OWNER_RESOURCES: Mapping[str, ApiResource] = {
    kind.kind: owner_resource_of(kind) for kind in OWNER_KINDS
}


def owner_resource(owner: OwnerRef | None) -> ApiResource | None:
    """Where an owner lives, when it is a kind we know and its API group matches."""
    if owner is None or known_owner(owner) is None:
        return None
    return OWNER_RESOURCES.get(owner.kind)
