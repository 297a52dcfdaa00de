"""RayCluster builder (ray.io/v1), labelled for Kueue the way users submit them."""

from __future__ import annotations

from typing import Self

from .common import Builder, container, metadata, stable_uid

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_PRIORITY_LABEL = "priorityClassName"


class RayClusterBuilder(Builder):
    def head(self, *, gpus: int = 0, cpu: int = 2) -> Self:
        self._obj["spec"]["headGroupSpec"]["template"]["spec"]["containers"] = [
            container("ray-head", gpus=gpus, cpu=cpu)
        ]
        return self

    def worker_group(
        self, group: str = "workers", *, replicas: int = 1, gpus: int = 0, cpu: int = 4
    ) -> Self:
        self._obj["spec"].setdefault("workerGroupSpecs", []).append(
            {
                "groupName": group,
                "replicas": replicas,
                "minReplicas": 0,
                "maxReplicas": max(replicas, 1),
                "rayStartParams": {},
                "template": {"spec": {"containers": [container("ray-worker", gpus=gpus, cpu=cpu)]}},
            }
        )
        return self

    def gpu_worker(self, *, replicas: int = 1, gpus: int = 1, group: str = "workers") -> Self:
        return self.worker_group(group, replicas=replicas, gpus=gpus)

    def queue(self, name: str) -> Self:
        return self.label(QUEUE_LABEL, name)

    def priority_class(self, name: str) -> Self:
        return self.label(PRIORITY_CLASS_LABEL, name)

    def kai_queue(self, name: str) -> Self:
        """Submitted to NVIDIA KAI Scheduler's queue `name`."""
        return self.label(KAI_QUEUE_LABEL, name)

    def kai_priority(self, name: str) -> Self:
        return self.label(KAI_PRIORITY_LABEL, name)

    def head_priority_class(self, name: str) -> Self:
        self._obj["spec"]["headGroupSpec"]["template"]["spec"]["priorityClassName"] = name
        return self

    def owned_by_rayjob(self, name: str) -> Self:
        """Made by the RayJob `name` (its controller reference), as KubeRay makes it."""
        namespace = self._obj["metadata"]["namespace"]
        self._obj["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayJob",
                "name": name,
                "uid": stable_uid("RayJob", namespace, name),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        return self

    def suspended(self, suspend: bool = True) -> Self:
        self._obj["spec"]["suspend"] = suspend
        return self


def make_raycluster(namespace: str, name: str) -> RayClusterBuilder:
    """A RayCluster with a 2-CPU head and no workers until added."""
    head = {
        "rayStartParams": {},
        "template": {"spec": {"containers": [container("ray-head", cpu=2)]}},
    }
    return RayClusterBuilder(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": metadata("RayCluster", namespace, name),
            "spec": {"rayVersion": "2.9.0", "headGroupSpec": head},
        }
    )
