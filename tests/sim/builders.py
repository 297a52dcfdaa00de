"""Builders for the Kueue model: `make_workload("ns", "rc").queue("q").gpus(2).build()`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Self

from autoscaler.sim import (
    Admission,
    ClusterQueue,
    KueueState,
    LocalQueue,
    Phase,
    PodSet,
    QueueingStrategy,
    ResourceQuota,
    Workload,
)

GPU = "nvidia.com/gpu"
T0 = datetime(2026, 3, 2, 13, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


class WorkloadBuilder:
    def __init__(self, namespace: str, name: str) -> None:
        self._workload = Workload(
            namespace=namespace, name=name, queue_name="queue", created_at=T0, pod_sets=()
        )

    def queue(self, name: str) -> Self:
        return self._set(queue_name=name)

    def created(self, seconds: float) -> Self:
        return self._set(created_at=at(seconds))

    def priority(self, value: int, class_name: str | None = None) -> Self:
        return self._set(priority=value, priority_class=class_name)

    def pod_set(self, name: str, count: int, requests: Mapping[str, int]) -> Self:
        pod_set = PodSet(name=name, count=count, requests=dict(requests))
        return self._set(pod_sets=(*self._workload.pod_sets, pod_set))

    def gpus(self, amount: int) -> Self:
        return self.pod_set("main", 1, {GPU: amount})

    def inactive(self) -> Self:
        return self._set(phase=Phase.INACTIVE)

    def admitted(self, queue: str, *, seconds: float = 0) -> Self:
        admission = Admission(queue, at(seconds), self._workload.requests)
        return self._set(phase=Phase.ADMITTED, admission=admission, phase_since=at(seconds))

    def build(self) -> Workload:
        return self._workload

    def _set(self, **fields: object) -> Self:
        self._workload = replace(self._workload, **fields)  # type: ignore[arg-type]
        return self


def make_workload(namespace: str, name: str) -> WorkloadBuilder:
    return WorkloadBuilder(namespace, name)


def gpu_queue(
    name: str,
    gpus: int,
    *,
    cohort: str | None = None,
    borrowing_limit: int | None = None,
    lending_limit: int | None = None,
    strategy: QueueingStrategy = QueueingStrategy.BEST_EFFORT_FIFO,
) -> ClusterQueue:
    quota = ResourceQuota(gpus, borrowing_limit=borrowing_limit, lending_limit=lending_limit)
    return ClusterQueue(name=name, quotas={GPU: quota}, cohort=cohort, queueing_strategy=strategy)


def state_of(*queues: ClusterQueue, workloads: tuple[Workload, ...] = ()) -> KueueState:
    """Each ClusterQueue gets a LocalQueue of the same name in namespace `ns`."""
    state = KueueState()
    for cq in queues:
        state = state.with_cluster_queue(cq).with_local_queue(LocalQueue("ns", cq.name, cq.name))
    for workload in workloads:
        state = state.with_workload(workload)
    return state
