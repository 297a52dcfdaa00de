"""Kueue queue-side builders: ClusterQueue, LocalQueue, ResourceFlavor, WorkloadPriorityClass."""

from __future__ import annotations

from typing import Self

from .common import GPU, Builder, Object, metadata
from .workloads import KUEUE_V1BETA2


class KueueBuilder(Builder):
    def build(self, api_version: str = KUEUE_V1BETA2) -> Object:
        return {**super().build(), "apiVersion": api_version}


class ClusterQueueBuilder(KueueBuilder):
    def quota(self, *, flavor: str = "default-flavor", gpus: int = 8, cpu: int = 64) -> Self:
        """One resource group covering cpu and GPUs with this flavor's nominal quota."""
        self._obj["spec"]["resourceGroups"] = [
            {
                "coveredResources": ["cpu", GPU],
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [
                            {"name": "cpu", "nominalQuota": str(cpu)},
                            {"name": GPU, "nominalQuota": str(gpus)},
                        ],
                    }
                ],
            }
        ]
        return self

    def groups(self, *groups: Object) -> Self:
        """spec.resourceGroups, replacing the default one (see `resource_group`)."""
        self._obj["spec"]["resourceGroups"] = list(groups)
        return self

    def cohort(self, name: str, *, api_version: str = KUEUE_V1BETA2) -> Self:
        """The cohort, spelled cohortName in v1beta2 and cohort in v1beta1."""
        self._obj["spec"]["cohortName" if api_version == KUEUE_V1BETA2 else "cohort"] = name
        return self

    def admission_checks(self, *names: str) -> Self:
        strategy = [{"name": name} for name in names]
        self._obj["spec"]["admissionChecksStrategy"] = {"admissionChecks": strategy}
        return self

    def fair_sharing(self, weight: str = "1") -> Self:
        self._obj["spec"]["fairSharing"] = {"weight": weight}
        return self

    def reserved(self, flavor: str, totals: dict[str, str]) -> Self:
        """status.flavorsReservation of one flavor: resource -> total reserved."""
        resources = [
            {"name": name, "total": total, "borrowed": "0"} for name, total in totals.items()
        ]
        reservation = self._obj.setdefault("status", {}).setdefault("flavorsReservation", [])
        reservation.append({"name": flavor, "resources": resources})
        return self


def resource_group(covered: list[str], *flavors: Object) -> Object:
    return {"coveredResources": covered, "flavors": list(flavors)}


def flavor_quota(name: str, quotas: dict[str, dict[str, str]]) -> Object:
    """One flavor's quotas: resource -> {"nominalQuota": .., "borrowingLimit": .., ...}."""
    return {"name": name, "resources": [{"name": r, **q} for r, q in quotas.items()]}


def make_cohort(name: str) -> KueueBuilder:
    """A Cohort object (kueue.x-k8s.io/v1beta2; its CRD is not vendored, so unvalidated)."""
    return KueueBuilder(
        {
            "apiVersion": KUEUE_V1BETA2,
            "kind": "Cohort",
            "metadata": metadata("Cohort", None, name),
            "spec": {},
        }
    )


class LocalQueueBuilder(KueueBuilder):
    def cluster_queue(self, name: str) -> Self:
        self._obj["spec"]["clusterQueue"] = name
        return self


def make_cluster_queue(name: str = "cluster-queue") -> ClusterQueueBuilder:
    """A ClusterQueue open to every namespace with 8 GPUs and 64 CPUs of "default-flavor"."""
    return ClusterQueueBuilder(
        {
            "apiVersion": KUEUE_V1BETA2,
            "kind": "ClusterQueue",
            "metadata": metadata("ClusterQueue", None, name),
            "spec": {"namespaceSelector": {}},
        }
    ).quota()


def make_local_queue(namespace: str, name: str = "user-queue") -> LocalQueueBuilder:
    return LocalQueueBuilder(
        {
            "apiVersion": KUEUE_V1BETA2,
            "kind": "LocalQueue",
            "metadata": metadata("LocalQueue", namespace, name),
            "spec": {"clusterQueue": "cluster-queue"},
        }
    )


def make_resource_flavor(name: str = "default-flavor") -> KueueBuilder:
    return KueueBuilder(
        {
            "apiVersion": KUEUE_V1BETA2,
            "kind": "ResourceFlavor",
            "metadata": metadata("ResourceFlavor", None, name),
            "spec": {},
        }
    )


def make_workload_priority_class(
    name: str, *, value: int = 100, description: str = ""
) -> KueueBuilder:
    obj: Object = {
        "apiVersion": KUEUE_V1BETA2,
        "kind": "WorkloadPriorityClass",
        "metadata": metadata("WorkloadPriorityClass", None, name),
        "value": value,
    }
    if description:
        obj["description"] = description
    return KueueBuilder(obj)
