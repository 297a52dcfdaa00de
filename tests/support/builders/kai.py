"""KAI Scheduler builders: Queue (scheduling.run.ai/v2) and PodGroup (v2alpha2), and the pods
KAI's PodGrouper puts in a PodGroup (the annotation `pod-group-name`).

    queue = make_kai_queue("team-a", parent="org", gpu_quota=2, gpu_limit=4).allocated(gpus=2)
    group = make_podgroup("team-b", "rc-pg", queue="team-b", min_member=2).pending().build()
    pod = kai_pod("team-b", "rc-head", group="rc-pg", gpus=2).build()

Every object they build validates against the upstream CRDs in tests/crds.
"""

from __future__ import annotations

from datetime import datetime
from typing import Self

from .common import GPU, Builder, Object, metadata, timestamp
from .pods import PodBuilder, make_pod

KAI_GROUP = "scheduling.run.ai"
KAI_QUEUE_VERSION = f"{KAI_GROUP}/v2"
KAI_PODGROUP_VERSION = f"{KAI_GROUP}/v2alpha2"
POD_GROUP_ANNOTATION = "pod-group-name"  # KAI's PodGrouper names each pod's PodGroup so
NO_LIMIT = -1  # KAI's "no limit" for a queue's resource


class KaiQueueBuilder(Builder):
    def allocated(self, *, gpus: float | str) -> Self:
        """status.allocated as KAI's queue controller writes it: GPUs (fractions allowed)."""
        self._obj.setdefault("status", {}).setdefault("allocated", {})[GPU] = str(gpus)
        return self

    def child_queues(self, *names: str) -> Self:
        self._obj.setdefault("status", {})["childQueues"] = list(names)
        return self

    def without_gpu_limit(self) -> Self:
        """No `limit` at all in spec.resources.gpu (unlike NO_LIMIT, -1)."""
        self._obj["spec"]["resources"]["gpu"].pop("limit", None)
        return self


def make_kai_queue(
    name: str,
    *,
    parent: str | None = None,
    gpu_quota: float = 0,
    gpu_limit: float = NO_LIMIT,
    priority: int | None = None,
) -> KaiQueueBuilder:
    """A KAI Queue with a GPU quota and limit (-1: no limit); cpu and memory unlimited."""
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: Object = {
        "resources": {
            "gpu": {"quota": gpu_quota, "limit": gpu_limit, "overQuotaWeight": 1},
            "cpu": dict(unlimited),
            "memory": dict(unlimited),
        }
    }
    if parent is not None:
        spec["parentQueue"] = parent
    if priority is not None:
        spec["priority"] = priority
    return KaiQueueBuilder(
        {
            "apiVersion": KAI_QUEUE_VERSION,
            "kind": "Queue",
            "metadata": metadata("Queue", None, name),
            "spec": spec,
        }
    )


class PodGroupBuilder(Builder):
    def created(self, at: datetime) -> Self:
        self._obj["metadata"]["creationTimestamp"] = timestamp(at)
        return self

    def phase(self, phase: str, *, pending: int = 0, running: int = 0) -> Self:
        """status.phase and the pod counts KAI's status updater writes."""
        status = self._obj.setdefault("status", {})
        status.update({"phase": phase, "pending": pending, "running": running})
        return self

    def pending(self, *, pods: int | None = None) -> Self:
        """Waiting: KAI found no room for its gang (phase Pending, every member pending)."""
        count = self._obj["spec"].get("minMember", 1) if pods is None else pods
        return self.phase("Pending", pending=count)

    def running(self) -> Self:
        count = self._obj["spec"].get("minMember", 1)
        return self.phase("Running", running=count)

    def priority_class(self, name: str) -> Self:
        self._obj["spec"]["priorityClassName"] = name
        return self


def make_podgroup(namespace: str, name: str, *, queue: str, min_member: int = 1) -> PodGroupBuilder:
    """A PodGroup in `queue` (a KAI Queue's name), gang of `min_member` pods."""
    return PodGroupBuilder(
        {
            "apiVersion": KAI_PODGROUP_VERSION,
            "kind": "PodGroup",
            "metadata": metadata("PodGroup", namespace, name),
            "spec": {"queue": queue, "minMember": min_member},
        }
    )


def kai_pod(namespace: str, name: str, *, group: str, gpus: int = 0) -> PodBuilder:
    """A Pending, unbound pod of PodGroup `group`, scheduled by KAI, requesting `gpus`."""
    pod = make_pod(namespace, name).gpus(gpus).annotation(POD_GROUP_ANNOTATION, group)
    built = pod.build()
    built["spec"]["schedulerName"] = "kai-scheduler"
    return PodBuilder(built)


def fraction_pod(namespace: str, name: str, *, group: str, fraction: str = "0.5") -> PodBuilder:
    """A pending KAI pod asking for a share of a GPU (annotation, no nvidia.com/gpu request)."""
    return kai_pod(namespace, name, group=group).annotation("gpu-fraction", fraction)
