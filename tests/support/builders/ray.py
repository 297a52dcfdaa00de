"""RayCluster and RayJob builders (ray.io/v1): labelled for Kueue the way users submit them,
for NVIDIA KAI Scheduler (its queue and priority-class labels), or for neither (plain KubeRay).

    rc = make_raycluster("ns", "rc").head(gpus=1).kai_queue("team-a").build()
    job = make_rayjob("ns", "job").head(gpus=1).queue("user-queue")
    cluster = job.raycluster().build()      # the RayCluster KubeRay makes for the job

The label keys are written out here, not imported from the service, so a typo on either
side shows as a failing test.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Self

from .common import Builder, Object, container, metadata, stable_uid

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_PRIORITY_LABEL = "priorityClassName"  # KAI reads the priority class from this label
KAI_FRACTION = "gpu-fraction"  # KAI's GPU sharing: a share of a device, no GPU request
ORIGIN_KIND_LABEL = "ray.io/originated-from-crd"
ORIGIN_NAME_LABEL = "ray.io/originated-from-cr-name"
K8S_RAND_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery pkg/util/rand


def _worker_group(group: str, *, replicas: int, gpus: int, cpu: int) -> Object:
    return {
        "groupName": group,
        "replicas": replicas,
        "minReplicas": 0,
        "maxReplicas": max(replicas, 1),
        "rayStartParams": {},
        "template": {"spec": {"containers": [container("ray-worker", gpus=gpus, cpu=cpu)]}},
    }


def _cluster_spec() -> Object:
    """A 2-CPU head and no workers until added."""
    head = {
        "rayStartParams": {},
        "template": {"spec": {"containers": [container("ray-head", cpu=2)]}},
    }
    return {"rayVersion": "2.9.0", "headGroupSpec": head}


def controller_reference(owner: Object) -> Object:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


class _RaySpecSteps(Builder):
    """Steps shared by RayCluster and RayJob: both hold a RayCluster spec."""

    def _cluster(self) -> Object:
        raise NotImplementedError

    def _templates(self) -> list[Object]:
        spec = self._cluster()
        groups = [spec["headGroupSpec"], *spec.get("workerGroupSpecs", [])]
        return [group["template"] for group in groups]

    def head(self, *, gpus: int = 0, cpu: int = 2) -> Self:
        self._cluster()["headGroupSpec"]["template"]["spec"]["containers"] = [
            container("ray-head", gpus=gpus, cpu=cpu)
        ]
        return self

    def worker_group(
        self, group: str = "workers", *, replicas: int = 1, gpus: int = 0, cpu: int = 4
    ) -> Self:
        workers = self._cluster().setdefault("workerGroupSpecs", [])
        workers.append(_worker_group(group, replicas=replicas, gpus=gpus, cpu=cpu))
        return self

    def gpu_worker(self, *, replicas: int = 1, gpus: int = 1, group: str = "workers") -> Self:
        return self.worker_group(group, replicas=replicas, gpus=gpus)

    def image(self, image: str) -> Self:
        """Every container's image, in every group."""
        for template in self._templates():
            for each in template["spec"]["containers"]:
                each["image"] = image
        return self

    def queue(self, name: str) -> Self:
        return self.label(QUEUE_LABEL, name)

    def priority_class(self, name: str) -> Self:
        return self.label(PRIORITY_CLASS_LABEL, name)


class RayClusterBuilder(_RaySpecSteps):
    def _cluster(self) -> Object:
        spec: Object = self._obj["spec"]
        return spec

    def suspended(self, suspend: bool = True) -> Self:
        """`spec.suspend` written out; left out (absent) unless called."""
        self._obj["spec"]["suspend"] = suspend
        return self

    def kai_queue(self, name: str) -> Self:
        return self.label(KAI_QUEUE_LABEL, name)

    def kai_priority(self, name: str) -> Self:
        return self.label(KAI_PRIORITY_LABEL, name)

    def head_priority_class(self, name: str) -> Self:
        """Kubernetes' own priority class on the head's pod template."""
        self._obj["spec"]["headGroupSpec"]["template"]["spec"]["priorityClassName"] = name
        return self

    def gpu_fraction(self, share: str) -> Self:
        """Every pod asks KAI for `share` of a GPU by annotation, and for no whole GPU."""
        for template in self._templates():
            template.setdefault("metadata", {}).setdefault("annotations", {})[KAI_FRACTION] = share
            for each in template["spec"]["containers"]:
                for amounts in each.get("resources", {}).values():
                    amounts.pop("nvidia.com/gpu", None)
        return self

    def controlled_by(self, owner: Object) -> Self:
        """Another object (a RayJob, an AppWrapper) controls this RayCluster."""
        self._obj["metadata"]["ownerReferences"] = [controller_reference(owner)]
        return self

    def owned_by_rayjob(self, name: str) -> Self:
        """Made by the RayJob `name` (its controller reference), as KubeRay makes it."""
        namespace = self._obj["metadata"]["namespace"]
        job = {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {"name": name, "uid": stable_uid("RayJob", namespace, name)},
        }
        return self.controlled_by(job)


class RayJobBuilder(_RaySpecSteps):
    def _cluster(self) -> Object:
        spec: Object = self._obj["spec"]["rayClusterSpec"]
        return spec

    def raycluster_name(self) -> str:
        """KubeRay's name for the job's RayCluster: the job's name and 5 random characters of
        Kubernetes' alphabet (ray-project/kuberay ray-operator/controllers/ray/utils/util.go
        GenerateRayClusterName; k8s.io/apimachinery pkg/util/rand String), here from its uid."""
        meta = self._obj["metadata"]
        number = int(hashlib.sha1(f"{meta['uid']}".encode()).hexdigest(), 16)
        suffix = ""
        for _ in range(5):
            number, index = divmod(number, len(K8S_RAND_ALPHABET))
            suffix += K8S_RAND_ALPHABET[index]
        return f"{meta['name']}-{suffix}"

    def raycluster(self) -> RayClusterBuilder:
        """The RayCluster KubeRay creates for this job: its spec, controlled by the job, and
        labelled with where it came from (its pods are not: KubeRay labels them as any
        RayCluster's, `ray.io/cluster`; rayjob_controller.go constructRayClusterForRayJob)."""
        job = self.build()
        meta = job["metadata"]
        name = self.raycluster_name()
        cluster = RayClusterBuilder(
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCluster",
                "metadata": metadata("RayCluster", meta["namespace"], name),
                "spec": copy.deepcopy(job["spec"]["rayClusterSpec"]),
            }
        )
        cluster.label(ORIGIN_KIND_LABEL, "RayJob").label(ORIGIN_NAME_LABEL, meta["name"])
        return cluster.controlled_by(job)


def make_raycluster(namespace: str, name: str) -> RayClusterBuilder:
    """A RayCluster with a 2-CPU head and no workers until added; `spec.suspend` absent."""
    return RayClusterBuilder(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": metadata("RayCluster", namespace, name),
            "spec": _cluster_spec(),
        }
    )


def make_rayjob(namespace: str, name: str) -> RayJobBuilder:
    """A RayJob running one entrypoint on a cluster of its own (2-CPU head until changed)."""
    return RayJobBuilder(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": metadata("RayJob", namespace, name),
            "spec": {
                "entrypoint": "python train.py",
                "shutdownAfterJobFinishes": True,
                "rayClusterSpec": _cluster_spec(),
            },
        }
    )
