"""The simulated cluster behind the `Cluster` port: Kueue admission, KubeRay pods, deactivation."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.core.errors import Conflict, NotFound
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.engine.acting import sequence as actuation
from autoscaler.sim.actuators import SimulatedActuator
from autoscaler.sim.clock import SimulatedClock
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.kueue_model import EventKind, KueueState, LocalQueue, Phase
from autoscaler.sim.pods import GPU, GpuPool, RayClusterSpec, WorkerGroup
from autoscaler.sim.quota import ClusterQueue

START = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def minutes(n: float) -> datetime:
    return START + timedelta(minutes=n)


def raycluster(name: str, *, workers: int = 1, gpus: int = 1) -> RayClusterSpec:
    group = WorkerGroup("small-group", replicas=workers, gpus=gpus)
    return RayClusterSpec("demo", name, "user-queue", head_gpus=1, workers=(group,))


def two_gpu_cluster() -> tuple[SimulatedCluster, SimulatedClock]:
    queue = ClusterQueue.from_nominal("cluster-queue", {"cpu": 9000, "memory": 36 * 2**30, GPU: 2})
    kueue = (
        KueueState()
        .with_cluster_queue(queue)
        .with_local_queue(LocalQueue("demo", "user-queue", "cluster-queue"))
    )
    clock = SimulatedClock(start=START, speed=None)
    return SimulatedCluster(kueue=kueue, gpus=GpuPool.for_gpus(2), clock=clock), clock


def info(cluster: SimulatedCluster, ref: WorkloadRef) -> WorkloadInfo:
    found = cluster.get_workload(ref)
    assert found is not None
    return found


def test_a_raycluster_gets_a_pending_workload_named_like_kueues() -> None:
    cluster, _ = two_gpu_cluster()

    ref = cluster.create(raycluster("first-raycluster"), now=minutes(0))

    assert re.fullmatch(r"raycluster-first-raycluster-[0-9a-f]{5}", ref.name)
    workload = info(cluster, ref)
    assert (workload.active, workload.admitted, workload.pods) == (True, False, ())
    assert workload.owner is not None
    assert (workload.owner.kind, workload.owner.name) == ("RayCluster", "first-raycluster")
    assert (workload.queue, workload.cluster_queue, workload.expected_pods) == (
        "user-queue",
        "cluster-queue",
        2,
    )


def test_an_admitted_raycluster_has_kuberay_pods_holding_distinct_gpus_that_run_soon() -> None:
    cluster, clock = two_gpu_cluster()
    ref = cluster.create(raycluster("first-raycluster"), now=minutes(0))

    events = cluster.step(now=minutes(0))

    assert [e.kind for e in events] == [EventKind.ADMITTED]
    pods = info(cluster, ref).pods
    assert re.fullmatch(r"first-raycluster-head-[b-z2-9]{5}", pods[0].name)
    assert re.fullmatch(r"first-raycluster-small-group-worker-[b-z2-9]{5}", pods[1].name)
    assert [p.phase for p in pods] == ["Pending", "Pending"]
    assert cluster.list_gpu_pods() == []
    uuids = {h.key.uuid for h in cluster.gpu_holdings()}
    assert len(uuids) == 2

    clock.advance(timedelta(minutes=1))

    assert [p.phase for p in info(cluster, ref).pods] == ["Running", "Running"]
    assert {r.pod.name for r in cluster.list_gpu_pods()} == {p.name for p in pods}
    assert info(cluster, ref).admitted_at == minutes(0)


AUDIT = DeactivationAudit(at=minutes(80), reason="idle", peak=0.0, threshold=0.05, policy="p")


def test_deactivation_evicts_deletes_the_pods_and_the_next_step_admits_the_waiting_one() -> None:
    cluster, clock = two_gpu_cluster()
    first = cluster.create(raycluster("first-raycluster"), now=minutes(0))
    second = cluster.create(raycluster("second-raycluster"), now=minutes(1))
    cluster.step(now=minutes(1))
    assert "needs 2, 0 available" in (cluster.waiting_reason(second) or "")
    clock.advance(timedelta(minutes=80))

    SimulatedActuator(cluster=cluster, clock=clock).deactivate(info(cluster, first), AUDIT)
    events = cluster.step(now=clock.now())

    assert [(e.kind, e.workload) for e in events] == [(EventKind.ADMITTED, second)]
    gone = info(cluster, first)
    assert (gone.active, gone.pods, gone.evicted_reason) == (False, (), "Deactivated")
    assert gone.evicted_at == clock.now()
    ended = [h for h in cluster.gpu_holdings() if h.raycluster == "first-raycluster"]
    assert [h.end for h in ended] == [clock.now(), clock.now()]
    assert [e.kind for e in cluster.events] == [
        EventKind.ADMITTED,
        EventKind.EVICTED,
        EventKind.ADMITTED,
    ]


def test_reactivation_requeues_behind_whoever_holds_the_quota_now() -> None:
    cluster, _ = two_gpu_cluster()
    first = cluster.create(raycluster("first-raycluster"), now=minutes(0))
    second = cluster.create(raycluster("second-raycluster"), now=minutes(1))
    cluster.step(now=minutes(1))
    cluster.set_active(first, active=False, now=minutes(80))
    cluster.step(now=minutes(80))

    cluster.set_active(first, active=True, now=minutes(90))
    cluster.step(now=minutes(90))

    assert cluster.kueue().workload(first).phase is Phase.PENDING
    assert cluster.kueue().workload(second).phase is Phase.ADMITTED
    assert cluster.kueue().workload(first).requeued_at == minutes(90)


def test_the_audit_is_written_on_the_workload_and_its_raycluster_and_kept_for_the_summary() -> None:
    cluster, clock = two_gpu_cluster()
    ref = cluster.create(raycluster("first-raycluster"), now=minutes(0))
    cluster.step(now=minutes(0))
    audit = DeactivationAudit(
        at=minutes(80), reason="idle", peak=0.0, threshold=0.05, policy="threshold 5%"
    )

    actuator = SimulatedActuator(cluster=cluster, clock=clock)
    actuation.deactivate(
        actuator, info(cluster, ref), audit=audit, message="idle", logger=logging.getLogger()
    )

    written = info(cluster, ref)
    for written_on in (written.annotations, written.owner_annotations):
        assert written_on[keys.DEACTIVATED_AT] == "2026-03-02T11:20:00Z"
        assert written_on[keys.DEACTIVATED_REASON] == "idle"
    assert [(a.raycluster, a.gpus, a.audit.at) for a in cluster.audits] == [
        ("first-raycluster", 2, minutes(80))
    ]


def test_an_annotation_write_naming_the_version_read_is_a_conflict_once_it_changed() -> None:
    cluster, clock = two_gpu_cluster()
    ref = cluster.create(raycluster("first-raycluster"), now=minutes(0))
    actuator = SimulatedActuator(cluster=cluster, clock=clock)
    read = info(cluster, ref)
    version = read.resource_version

    actuator.annotate_workload(read, {keys.SNOOZED_BY: "alice"}, resource_version=version)
    with pytest.raises(Conflict):
        actuator.annotate_workload(read, {keys.SNOOZED_BY: "bob"}, resource_version=version)
    actuator.annotate_workload(read, {keys.SNOOZE_REASON: "unguarded"})  # no version: applies

    written = info(cluster, ref).annotations
    assert (written[keys.SNOOZED_BY], written[keys.SNOOZE_REASON]) == ("alice", "unguarded")


def test_acting_on_a_deleted_workload_is_not_found() -> None:
    cluster, _ = two_gpu_cluster()
    with pytest.raises(NotFound):
        cluster.set_active(WorkloadRef("demo", "gone"), active=False, now=minutes(0))
    assert cluster.get_workload(WorkloadRef("demo", "gone")) is None


def test_a_rayjob_cluster_is_owned_by_its_rayjob() -> None:
    cluster, _ = two_gpu_cluster()
    spec = RayClusterSpec("demo", "nightly", "user-queue", head_gpus=2, kind="RayJob")

    ref = cluster.create(spec, now=minutes(0))

    owner = info(cluster, ref).owner
    assert ref.name.startswith("rayjob-nightly-")
    assert owner is not None and owner.kind == "RayJob"


def test_the_demo_has_no_keda_scaled_objects_unless_given_some() -> None:
    cluster, _ = two_gpu_cluster()
    assert cluster.list_scaled_objects() == []

    cluster.scaled_objects.append({"kind": "ScaledObject", "metadata": {"name": "so"}})

    assert [o["metadata"]["name"] for o in cluster.list_scaled_objects()] == ["so"]
