"""A simulated cluster with RayClusters KAI Scheduler queues: `kai_cluster()`, `kai_spec(...)`."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import UTC, datetime

from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.management import Manager
from autoscaler.sim.clock import SimulatedClock
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.kueue_model import KueueState
from autoscaler.sim.pods import GpuPool, RayClusterSpec, WorkerGroup

START = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)
WITH_KAI = (Manager.KUEUE, Manager.KAI)


def kai_spec(
    name: str = "kai-notebook",
    *,
    gpus: int = 2,
    priority_class: str | None = None,
    gpu_fraction: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> RayClusterSpec:
    """A RayCluster in team-c labelled `kai.scheduler/queue: team-c`: a head and one worker
    holding `gpus`."""
    return RayClusterSpec(
        "team-c",
        name,
        "team-c",
        workers=(WorkerGroup("gpu-group", replicas=1, gpus=gpus),),
        priority_class=priority_class,
        manager=Manager.KAI,
        gpu_fraction=gpu_fraction,
        annotations=annotations or {},
    )


def plain_spec(name: str = "plain-notebook", *, gpus: int = 2) -> RayClusterSpec:
    """A RayCluster in team-d with no Kueue queue and no KAI queue: plain KubeRay's."""
    workers = (WorkerGroup("gpu-group", replicas=1, gpus=gpus),)
    return RayClusterSpec("team-d", name, "", workers=workers, manager=Manager.KUBERAY)


def kai_cluster(
    *, enabled: Collection[Manager] = WITH_KAI
) -> tuple[SimulatedCluster, SimulatedClock]:
    """No Kueue queue at all: 8 GPUs that KAI places."""
    clock = SimulatedClock(start=START, speed=None)
    cluster = SimulatedCluster(
        kueue=KueueState(), gpus=GpuPool.for_gpus(8), clock=clock, enabled=enabled
    )
    return cluster, clock


def row(cluster: SimulatedCluster, ref: WorkloadRef) -> WorkloadInfo:
    found = cluster.get_workload(ref)
    assert found is not None, f"no row for {ref}"
    return found
