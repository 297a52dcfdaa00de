"""Pod builder: RayCluster pods as KubeRay labels them, in Pending/Running/finished phases."""

from __future__ import annotations

from datetime import datetime
from typing import Self

from .common import Builder, Object, container, metadata, stable_uid, timestamp

CLUSTER_LABEL = "ray.io/cluster"
NODE_TYPE_LABEL = "ray.io/node-type"
GROUP_LABEL = "ray.io/group"


class PodBuilder(Builder):
    def owned_by_raycluster(
        self, raycluster: Object | str, *, node_type: str | None = None, group: str | None = None
    ) -> Self:
        """Labels and controller reference of a KubeRay pod. `raycluster` is the object or its
        name (then its uid is the one make_raycluster gives it). `node_type` defaults to
        "head" when the pod name contains "-head", else "worker"."""
        namespace = self._obj["metadata"]["namespace"]
        if isinstance(raycluster, str):
            name, uid = raycluster, stable_uid("RayCluster", namespace, raycluster)
        else:
            name, uid = raycluster["metadata"]["name"], raycluster["metadata"]["uid"]
        node_type = node_type or ("head" if "-head" in self._obj["metadata"]["name"] else "worker")
        self._obj["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCluster",
                "name": name,
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        self.label(CLUSTER_LABEL, name).label(NODE_TYPE_LABEL, node_type)
        return self.label(GROUP_LABEL, group or ("headgroup" if node_type == "head" else "workers"))

    def gpus(self, count: int, *, cpu: int = 1) -> Self:
        self._obj["spec"]["containers"] = [container("ray", gpus=count, cpu=cpu)]
        return self

    def node(self, name: str) -> Self:
        self._obj["spec"]["nodeName"] = name
        return self

    def running(self, *, since: datetime) -> Self:
        """Running and Ready since `since`, every container started then."""
        started = timestamp(since)
        self._obj["status"] = {
            "phase": "Running",
            "startTime": started,
            "conditions": [
                {"type": kind, "status": "True", "lastTransitionTime": started}
                for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
            ],
            "containerStatuses": [
                {
                    "name": each["name"],
                    "image": each["image"],
                    "imageID": "",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": started}},
                }
                for each in self._obj["spec"]["containers"]
            ],
        }
        return self

    def phase(self, phase: str) -> Self:
        """Pending, Succeeded, Failed or Unknown, without further status detail."""
        self._obj["status"] = {"phase": phase}
        return self


def make_pod(namespace: str, name: str) -> PodBuilder:
    """A Pending pod with one CPU-only container."""
    return PodBuilder(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {**metadata("Pod", namespace, name), "labels": {}},
            "spec": {"containers": [container("ray")]},
            "status": {"phase": "Pending"},
        }
    )
