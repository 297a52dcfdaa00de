"""The simulated cluster serves what rule `reclaim: via-kueue` needs (docs/RECLAIM.md): its
Kueue Configuration names the PriorityBoost gate as the emulated Kueue has it (the
`KueueFeatures` port), our boost annotation reaches the emulated Kueue, and a preemption it
makes is read back from the Workload as Kueue's conditions say it (the preemptor's UID)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.domain import annotations as keys
from autoscaler.domain.kueue_config import PRIORITY_BOOST_GATE, gate_served
from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.sim.clock import SimulatedClock
from autoscaler.sim.cluster import SimulatedCluster, priority_boost
from autoscaler.sim.kueue_model import KueueFeatures, KueueState, LocalQueue
from autoscaler.sim.pods import GPU, GpuPool, RayClusterSpec
from autoscaler.sim.quota import ClusterQueue, Preemption, PreemptionPolicy

START = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def a_cluster(*, gate: bool) -> SimulatedCluster:
    """Two GPUs in one ClusterQueue that preempts lower priorities within itself."""
    queue = replace(
        ClusterQueue.from_nominal("cq", {"cpu": 9000, "memory": 36 * 2**30, GPU: 2}),
        preemption=Preemption(within_cluster_queue=PreemptionPolicy.LOWER_PRIORITY),
    )
    kueue = (
        KueueState(features=KueueFeatures(priority_boost=gate))
        .with_cluster_queue(queue)
        .with_local_queue(LocalQueue("demo", "user-queue", "cq"))
    )
    clock = SimulatedClock(start=START, speed=None)
    return SimulatedCluster(kueue=kueue, gpus=GpuPool.for_gpus(2), clock=clock)


def create(cluster: SimulatedCluster, name: str, at: datetime) -> WorkloadRef:
    spec = RayClusterSpec("demo", name, "user-queue", head_gpus=1, workers=())
    return cluster.create(spec, now=at)


def info(cluster: SimulatedCluster, ref: WorkloadRef) -> WorkloadInfo:
    found = cluster.get_workload(ref)
    assert found is not None
    return found


@pytest.mark.parametrize("gate", [True, False])
def test_the_configuration_names_the_gate_as_the_emulated_kueue_has_it(gate: bool) -> None:
    served = gate_served(a_cluster(gate=gate).kueue_configuration(), PRIORITY_BOOST_GATE)
    assert served.on is gate


@pytest.mark.parametrize("gate", [True, False])
def test_a_marked_workload_is_preempted_for_a_waiter_only_with_the_gate_on(gate: bool) -> None:
    cluster = a_cluster(gate=gate)
    marked, other = create(cluster, "idle", START), create(cluster, "busy", START)
    cluster.step(now=START)
    assert info(cluster, marked).admitted and info(cluster, other).admitted
    boost = {keys.PRIORITY_BOOST: "-2000000000", keys.MARKED_AT: "2026-03-02T10:00:00Z"}
    cluster.annotate(marked, boost, now=START, owner=False)
    assert cluster.kueue().workload(marked).priority_boost == -2_000_000_000

    later = START + timedelta(minutes=5)
    waiter = create(cluster, "waiter", later)
    cluster.step(now=later)

    preemption = info(cluster, marked).preemption
    assert info(cluster, other).preemption is None
    if gate:  # the boost lowers its effective priority below the equal-priority waiter's
        assert preemption is not None
        assert (preemption.preemptor_uid, preemption.reason) == (
            info(cluster, waiter).uid,
            "InClusterQueue",
        )
        assert not info(cluster, marked).admitted
    else:  # the annotation is ignored: equal priorities, LowerPriority preempts nobody
        assert preemption is None
        assert not info(cluster, waiter).admitted


@pytest.mark.parametrize(
    ("value", "read"),
    [("-5", -5), ("", 0), ("ten", 0), (str(2**31), 0), (str(-(2**31)), -(2**31))],
)
def test_the_boost_is_read_as_kueue_reads_an_int32_or_not_at_all(value: str, read: int) -> None:
    assert priority_boost({keys.PRIORITY_BOOST: value}) == read
