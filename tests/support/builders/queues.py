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

    def cohort(self, name: str) -> Self:
        """Share unused quota with the other members of cohort `name` (v1beta2 spelling)."""
        self._obj["spec"]["cohortName"] = name
        return self


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
