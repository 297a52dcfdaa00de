"""RayClusters as the demo applies them, and the pods KubeRay makes of them on GPU nodes."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from autoscaler.domain.models import PodInfo
from autoscaler.domain.policy.management import (
    DEFAULT_MANAGER,
    KAI_PRIORITY_LABEL,
    KAI_QUEUE_LABEL,
    Manager,
)
from autoscaler.sim.kinds import SIM_KINDS, SimKind, stable_suffix
from autoscaler.sim.kubelet import waiting
from autoscaler.sim.kueue_model import PodSet

GPU = "nvidia.com/gpu"
RAY_IMAGE = "rayproject/ray:2.41.0-py311-gpu"
GPUS_PER_NODE = 8


@dataclass(frozen=True)
class WorkerGroup:
    name: str
    replicas: int
    gpus: int  # per pod
    cpu: int = 2000  # millicores per pod
    memory: int = 8 * 10**9  # bytes per pod


@dataclass(frozen=True)
class RayClusterSpec:
    """A RayCluster (or the cluster of a RayJob, `kind="RayJob"`) submitted to a LocalQueue;
    or (`manager=KAI`) labelled with a KAI Scheduler queue, which no Kueue Workload admits.
    Another of `sim.kinds.SIM_KINDS` (a Notebook, a PyTorchJob, a LeaderWorkerSet, a
    Deployment) reads its head as the kind's first pod and its worker groups as the rest."""

    namespace: str
    name: str
    queue: str  # the LocalQueue in `namespace`; KAI's queue for `manager=KAI`
    head_gpus: int = 0
    workers: tuple[WorkerGroup, ...] = ()
    priority_class: str | None = None
    kind: str = "RayCluster"
    head_cpu: int = 2000
    head_memory: int = 8 * 10**9
    annotations: Mapping[str, str] = field(default_factory=dict)  # on the owner
    manager: Manager = DEFAULT_MANAGER
    gpu_fraction: str | None = None  # KAI's gpu-fraction annotation on every pod (GPU sharing)
    image: str = RAY_IMAGE  # every container's
    image_published: bool = True  # False: the registry does not have it; no pod ever runs

    @property
    def labels(self) -> dict[str, str]:
        """A KAI cluster's labels: its queue, and its priority class as KAI reads it."""
        if self.manager is not Manager.KAI:
            return {}
        priority = {KAI_PRIORITY_LABEL: self.priority_class} if self.priority_class else {}
        return {KAI_QUEUE_LABEL: self.queue} | priority

    @property
    def owner_kind(self) -> SimKind:
        return SIM_KINDS[self.kind]

    @property
    def known_as(self) -> str:
        """Its name in the demo's words: "alice-rc", "Notebook ml/alice" (`SimKind.known_as`)."""
        return self.owner_kind.known_as(self.namespace, self.name)

    @property
    def workload_name(self) -> str:
        """Kueue's `<kind>-<name>-<5 hex>` (the suffix hashes the owner); the first pod's
        Workload for Kueue's pod integration."""
        return self.owner_kind.workload_name(self.namespace, self.name)

    @property
    def gpus(self) -> int:
        return self.head_gpus + sum(group.replicas * group.gpus for group in self.workers)

    def pod_sets(self) -> tuple[PodSet, ...]:
        head_set = self.owner_kind.head_set
        head = PodSet(head_set, 1, _requests(self.head_cpu, self.head_memory, self.head_gpus))
        groups = tuple(
            PodSet(g.name, g.replicas, _requests(g.cpu, g.memory, g.gpus)) for g in self.workers
        )
        return (head, *groups)


@dataclass(frozen=True)
class SimPod:
    name: str
    group: str  # "head" or the worker group's name
    gpus: tuple[str, ...]  # the UUIDs it holds
    node: str
    created_at: datetime
    running_at: datetime  # when its container starts, once its image is pulled
    raycluster: str
    image: str = RAY_IMAGE
    pullable: bool = True  # False: its image cannot be pulled, it never runs
    kind: str = "RayCluster"  # its owner's (`sim.kinds`), which names and labels it

    def running(self, now: datetime) -> bool:
        return self.pullable and self.running_at <= now

    def info(self, now: datetime) -> PodInfo:
        runs = self.running(now)
        return PodInfo(
            name=self.name,
            phase="Running" if runs else "Pending",
            created_at=self.created_at,
            gpus=len(self.gpus),
            labels=SIM_KINDS[self.kind].pod_labels(self.raycluster, group=self.group),
            node=self.node,
            waiting=()
            if runs
            else waiting(
                group=self.group,
                image=self.image,
                pullable=self.pullable,
                created_at=self.created_at,
                now=now,
            ),
        )


class GpuPool:
    """The GPU nodes: each GPU is free or held by one pod."""

    def __init__(self, nodes: int, *, per_node: int = GPUS_PER_NODE, prefix: str = "") -> None:
        """`prefix` sets clusters apart that share one history (node names, hence UUIDs)."""
        names = [f"{prefix}gpu-node-{n + 1}" for n in range(nodes)]
        self._free: dict[str, list[str]] = {
            name: [gpu_uuid(name, i) for i in range(per_node)] for name in names
        }
        self._home = {uuid: node for node, uuids in self._free.items() for uuid in uuids}

    @classmethod
    def for_gpus(cls, total: int, *, prefix: str = "") -> GpuPool:
        return cls(max(1, -(-total // GPUS_PER_NODE)), prefix=prefix)

    def take(self, count: int) -> tuple[str, tuple[str, ...]]:
        """`count` GPUs from one node when one has enough (the scheduler's job), else spread."""
        if count == 0:
            return next(iter(self._free)), ()
        node = next((n for n, free in self._free.items() if len(free) >= count), None)
        if node is not None:
            taken = tuple(self._free[node][:count])
            del self._free[node][:count]
            return node, taken
        every = [(n, uuid) for n, free in self._free.items() for uuid in free]
        if len(every) < count:
            raise RuntimeError(f"the simulated nodes have {len(every)} free GPUs, {count} needed")
        chosen = every[:count]
        for n, uuid in chosen:
            self._free[n].remove(uuid)
        return chosen[0][0], tuple(uuid for _, uuid in chosen)

    def release(self, uuids: tuple[str, ...]) -> None:
        for uuid in uuids:
            self._free[self._home[uuid]].append(uuid)
            self._free[self._home[uuid]].sort()


def pods_for(
    spec: RayClusterSpec, *, gpus: GpuPool, now: datetime, start: timedelta, seed: int
) -> tuple[SimPod, ...]:
    """The head and worker pods KubeRay (or the kind's controller) creates once the Workload
    is admitted."""
    wanted = [(f"{spec.name}-head", "head", spec.head_gpus, 0)]
    for group in spec.workers:
        prefix = f"{spec.name}-{group.name}-worker"
        wanted += [(prefix, group.name, group.gpus, i) for i in range(group.replicas)]
    pods = []
    for index, (prefix, group_name, count, in_group) in enumerate(wanted):
        node, uuids = gpus.take(count)
        suffix = stable_suffix(f"{spec.namespace}/{prefix}/{seed}/{index}")
        name = spec.owner_kind.pod_name(spec.name, group=group_name, index=in_group, suffix=suffix)
        pod = SimPod(
            name, group_name, uuids, node, now, now + start, spec.name, spec.image, kind=spec.kind
        )
        pods.append(pod if spec.image_published else replace(pod, pullable=False))
    return tuple(pods)


def gpu_uuid(node: str, index: int) -> str:
    """A stable UUID shaped like dcgm-exporter's."""
    digest = hashlib.sha256(f"{node}/{index}".encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _requests(cpu: int, memory: int, gpus: int) -> dict[str, int]:
    requests = {"cpu": cpu, "memory": memory}
    return requests | ({GPU: gpus} if gpus else {})
