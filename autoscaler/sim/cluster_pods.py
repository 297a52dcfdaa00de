"""The pods KubeRay makes of every simulated RayCluster, and the GPUs they hold from the nodes.

Shared by the Kueue-admitted RayClusters (`sim.cluster`) and those no Workload admits
(`sim.rayclusters`): both create the same pods on the same nodes, and the exporter reports
every holding alike. Holdings are kept after their pod is deleted, as the exporter's history.
Callers hold their cluster's lock.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from autoscaler.domain.models import PodRecord, WorkloadRef
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.sim.holdings import GpuHolding
from autoscaler.sim.pods import GpuPool, RayClusterSpec, SimPod, pods_for

POD_START = timedelta(seconds=30)  # image already on the node: the pods run within a cycle


class ClusterPods:
    """Pods by the row (`WorkloadRef`) they belong to: a Workload's, or a RayCluster's own."""

    def __init__(self, gpus: GpuPool) -> None:
        self._gpus = gpus
        self._pods: dict[WorkloadRef, tuple[SimPod, ...]] = {}
        self._holdings: dict[tuple[str, str], GpuHolding] = {}  # (pod, uuid) -> holding
        self._count = 0

    def create(self, ref: WorkloadRef, spec: RayClusterSpec, *, now: datetime) -> None:
        """The head and workers, anew, holding GPUs from the nodes once they run."""
        self._count += 1
        pods = pods_for(spec, gpus=self._gpus, now=now, start=POD_START, seed=self._count)
        self._pods[ref] = pods
        # The exporter sees only GPUs a running container uses: a pod whose image cannot be
        # pulled never runs, and no series names it.
        held = [(pod, uuid) for pod in pods if pod.pullable for uuid in pod.gpus]
        for index, (pod, uuid) in enumerate(held):  # the RayCluster's GPUs, counted across pods
            key = GpuKey(namespace=spec.namespace, pod=pod.name, uuid=uuid)
            self._holdings[(pod.name, uuid)] = GpuHolding(
                key=key, raycluster=spec.name, node=pod.node, start=pod.running_at, index=index
            )

    def delete(self, ref: WorkloadRef, *, now: datetime) -> None:
        """Every pod of the row goes; its GPUs go back to the nodes."""
        for pod in self._pods.pop(ref, ()):
            self._gpus.release(pod.gpus)
            for uuid in pod.gpus if pod.pullable else ():  # one that never ran has none
                holding = self._holdings[(pod.name, uuid)]
                self._holdings[(pod.name, uuid)] = replace(holding, end=now)

    def of(self, ref: WorkloadRef) -> tuple[SimPod, ...]:
        return self._pods.get(ref, ())

    def running_with_gpus(self, now: datetime) -> list[PodRecord]:
        return [
            PodRecord(ref.namespace, pod.info(now))
            for ref, pods in sorted(self._pods.items())
            for pod in pods
            if pod.gpus and pod.running(now)
        ]

    def holdings(self) -> tuple[GpuHolding, ...]:
        return tuple(self._holdings.values())
