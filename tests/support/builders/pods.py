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

    def image(self, image: str) -> Self:
        """Every container's image."""
        for each in self._obj["spec"]["containers"]:
            each["image"] = image
        return self

    def waiting(
        self, reason: str, *, since: datetime, message: str = "", phase: str = "Pending"
    ) -> Self:
        """Scheduled, its containers waiting for `reason` as the kubelet reports it: phase
        Pending (or Running for a container restarted into CrashLoopBackOff), Ready and
        ContainersReady False for ContainersNotReady (kubernetes pkg/kubelet/status/
        generate.go), each container status `state.waiting` with the reason and message
        (pkg/kubelet/kuberuntime/kuberuntime_container.go, pkg/kubelet/images/image_manager.go)."""
        at = timestamp(since)
        restarts = 5 if reason == "CrashLoopBackOff" else 0
        self._obj["status"] = {
            "phase": phase,
            "startTime": at,
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": at},
                {"type": "Initialized", "status": "True", "lastTransitionTime": at},
                *(
                    {
                        "type": kind,
                        "status": "False",
                        "reason": "ContainersNotReady",
                        "lastTransitionTime": at,
                    }
                    for kind in ("ContainersReady", "Ready")
                ),
            ],
            "containerStatuses": [
                {
                    "name": each["name"],
                    "image": each["image"],
                    "imageID": "",
                    "ready": False,
                    "started": False,
                    "restartCount": restarts,
                    "state": {"waiting": {"reason": reason, "message": message}},
                }
                for each in self._obj["spec"]["containers"]
            ],
        }
        return self

    def image_pull_failing(self, *, since: datetime) -> Self:
        """ImagePullBackOff, with the kubelet's message (pkg/kubelet/images/image_manager.go:
        `Back-off pulling image "<image>"`)."""
        image = self._obj["spec"]["containers"][0]["image"]
        return self.waiting(
            "ImagePullBackOff", since=since, message=f'Back-off pulling image "{image}"'
        )

    def unschedulable(self, message: str, *, since: datetime) -> Self:
        """Never placed: PodScheduled False for Unschedulable with the scheduler's message
        (kubernetes pkg/scheduler/schedule_one.go, handleSchedulingFailure), no node, phase
        Pending, no container status."""
        self._obj["spec"].pop("nodeName", None)
        self._obj["status"] = {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": message,
                    "lastTransitionTime": timestamp(since),
                }
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


def scale_up_event(pod: Object, *, at: datetime, node_group: str = "gpu-nodes") -> Object:
    """The Event the cluster autoscaler records on a pod it scales a node group up for
    (kubernetes/autoscaler cluster-autoscaler/core/scaleup/orchestrator/orchestrator.go:
    reason TriggeredScaleUp, "pod triggered scale-up: [{<group> 0->1 (max: 4)}]")."""
    meta, stamp = pod["metadata"], timestamp(at)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta['name']}.scale-up-{int(at.timestamp())}",
            "namespace": meta["namespace"],
        },
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta.get("uid", ""),
        },
        "reason": "TriggeredScaleUp",
        "message": f"pod triggered scale-up: [{{{node_group} 0->1 (max: 4)}}]",
        "type": "Normal",
        "source": {"component": "cluster-autoscaler"},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
