"""The simulated cluster's RayClusters that KAI Scheduler queues (ISSUE 17): read as rows of
their own, suspended and resumed through the demo's actuator by manager."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from autoscaler.core.errors import Conflict
from autoscaler.demo.writes import simulated_actuator
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import SUSPEND_WAS, DeactivationAudit
from autoscaler.domain.exemptions import reactivating
from autoscaler.domain.models import OwnerRef, State, WorkloadRef
from autoscaler.domain.policy.management import KAI_PRIORITY_LABEL, KAI_QUEUE_LABEL, Manager
from autoscaler.engine.acting import sequence as actuation
from autoscaler.sim.clock import SimulatedClock
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.cluster_pods import POD_START
from autoscaler.sim.workload_info import sim_uid
from tests.sim.kai_builders import START, WITH_KAI, kai_cluster, kai_spec, plain_spec, row

LOG = logging.getLogger("test-sim-kai")
NOTEBOOK = WorkloadRef("team-c", "kai-notebook")
AUDIT = DeactivationAudit(at=START, reason="idle", peak=0.0, threshold=0.05, policy="p")
BACK = reactivating(by="alice", reason="back to it", now=START + timedelta(minutes=80))


def running(cluster: SimulatedCluster, clock: SimulatedClock, **spec: object) -> WorkloadRef:
    ref = cluster.create(kai_spec(**spec), now=clock.now())  # type: ignore[arg-type]
    clock.advance(POD_START)
    return ref


def suspend(cluster: SimulatedCluster, clock: SimulatedClock, ref: WorkloadRef) -> None:
    writes = simulated_actuator(cluster, clock=clock, enabled=WITH_KAI)
    actuation.deactivate(writes, row(cluster, ref), audit=AUDIT, message="idle", logger=LOG)


def reactivate(cluster: SimulatedCluster, clock: SimulatedClock, ref: WorkloadRef) -> None:
    writes = simulated_actuator(cluster, clock=clock, enabled=WITH_KAI)
    actuation.reactivate(writes, row(cluster, ref), annotations=BACK, message="back", logger=LOG)


def test_a_raycluster_labelled_with_a_kai_queue_is_a_row_of_its_own_read_as_kais() -> None:
    cluster, clock = kai_cluster()

    ref = running(cluster, clock, priority_class="team-c-high")

    found = row(cluster, ref)
    uid = sim_uid("RayCluster", NOTEBOOK)
    assert (ref, found.manager, found.hands_off) == (NOTEBOOK, Manager.KAI, None)
    assert (found.uid, found.owner) == (
        uid,
        OwnerRef("ray.io/v1", "RayCluster", "kai-notebook", uid),
    )
    assert (found.queue, found.cluster_queue, found.priority_class) == (
        "team-c",
        "kai/team-c",
        "team-c-high",
    )
    assert found.owner_labels == {KAI_QUEUE_LABEL: "team-c", KAI_PRIORITY_LABEL: "team-c-high"}
    assert (found.active, found.admitted, found.admitted_at, found.expected_pods) == (
        True,
        True,
        START,
        2,
    )
    assert found.admitted_usage == {("kai", "nvidia.com/gpu"): 2}
    assert found.annotations == found.owner_annotations == {}
    assert [w.ref for w in cluster.list_workloads()] == [NOTEBOOK]


def test_a_kai_raycluster_whose_pods_are_not_running_yet_has_no_admission_time() -> None:
    cluster, clock = kai_cluster()

    ref = cluster.create(kai_spec(), now=clock.now())

    found = row(cluster, ref)
    assert (found.active, len(found.pods)) == (True, 2)
    assert (found.admitted, found.admitted_at) == (False, None)  # as the real reader says


def test_its_pods_gpus_are_reported_by_the_exporter_like_any_others() -> None:
    cluster, clock = kai_cluster()

    running(cluster, clock)

    pods = [record.pod.name for record in cluster.list_gpu_pods()]
    assert len(pods) == 1 and pods[0].startswith("kai-notebook-gpu-group-worker-")
    assert {(h.raycluster, h.key.namespace) for h in cluster.gpu_holdings()} == {
        ("kai-notebook", "team-c")
    }
    assert len(cluster.gpu_holdings()) == 2


def test_without_the_kai_actuator_a_kai_raycluster_has_no_row_though_its_pods_run() -> None:
    cluster, clock = kai_cluster(enabled=(Manager.KUEUE,))

    ref = running(cluster, clock)

    assert cluster.list_workloads() == [] and cluster.get_workload(ref) is None
    assert len(cluster.list_gpu_pods()) == 1


def test_suspending_records_what_spec_suspend_was_and_frees_the_gpus() -> None:
    cluster, clock = kai_cluster()
    ref = running(cluster, clock)

    suspend(cluster, clock, ref)

    gone = row(cluster, ref)
    assert (gone.active, gone.admitted, gone.pods) == (False, False, ())
    assert gone.annotations[SUSPEND_WAS] == "absent"
    assert gone.annotations[keys.DEACTIVATED_REASON] == "idle"
    assert cluster.rayclusters.get(ref).suspend is True  # type: ignore[union-attr]
    assert cluster.list_gpu_pods() == []
    assert {h.end for h in cluster.gpu_holdings()} == {clock.now()}
    assert [(a.raycluster, a.gpus) for a in cluster.audits] == [("kai-notebook", 2)]
    assert [(r, reason) for r, reason, _ in cluster.announcements] == [(ref, "IdleGPUDeactivated")]


@pytest.mark.parametrize(
    "was",
    [
        pytest.param(None, id="spec-suspend-absent-is-absent-again"),
        pytest.param(False, id="spec-suspend-false-is-false-again"),
    ],
)
def test_reactivating_restores_exactly_what_was_there_and_the_pods_come_back(
    was: bool | None,
) -> None:
    cluster, clock = kai_cluster()
    ref = cluster.rayclusters.apply(
        kai_spec(annotations={"team": "c"}), now=clock.now(), suspend=was
    )
    clock.advance(timedelta(minutes=70))
    suspend(cluster, clock, ref)
    clock.advance(timedelta(minutes=10))

    reactivate(cluster, clock, ref)

    back = cluster.rayclusters.get(ref)
    assert back is not None and back.suspend is was
    assert back.annotations == {"team": "c", **AUDIT.annotations(), **BACK}
    pending = row(cluster, ref)
    assert pending.active and not pending.admitted and len(pending.pods) == 2
    clock.advance(POD_START)
    assert row(cluster, ref).admitted and row(cluster, ref).admitted_at == START + timedelta(
        minutes=80
    )
    assert cluster.rayclusters.resumed() == {ref: START + timedelta(minutes=80)}


def test_a_raycluster_someone_else_suspended_is_deactivated_and_never_reactivated_by_us() -> None:
    cluster, clock = kai_cluster()
    ref = cluster.rayclusters.apply(kai_spec(), now=clock.now(), suspend=True)
    read = row(cluster, ref)

    with pytest.raises(Conflict, match="not suspended by this service"):
        reactivate(cluster, clock, ref)

    assert (read.active, read.pods) == (False, ())
    assert row(cluster, ref) == read  # nothing written


def test_a_kai_row_changed_since_it_was_read_is_not_suspended() -> None:
    cluster, clock = kai_cluster()
    ref = running(cluster, clock)
    read = row(cluster, ref)
    cluster.rayclusters.annotate(ref, {"someone": "else"})

    writes = simulated_actuator(cluster, clock=clock, enabled=WITH_KAI)
    with pytest.raises(Conflict):
        writes.deactivate(read, AUDIT)

    now = row(cluster, ref)
    assert now.active and now.annotations == {"someone": "else"}


def test_its_annotations_are_written_on_the_raycluster_itself() -> None:
    cluster, clock = kai_cluster()
    ref = running(cluster, clock)
    writes = simulated_actuator(cluster, clock=clock, enabled=WITH_KAI)
    read = row(cluster, ref)

    on = writes.annotate_workload(
        read, {keys.EXEMPT_BY: "alice"}, resource_version=read.resource_version
    )

    assert not writes.writes_owner(read)
    assert str(on) == "RayCluster team-c/kai-notebook"
    assert row(cluster, ref).annotations == {keys.EXEMPT_BY: "alice"}
    with pytest.raises(Conflict):  # the version read is gone
        writes.annotate_workload(
            read, {keys.EXEMPT_BY: "bob"}, resource_version=read.resource_version
        )


def test_deleting_it_takes_its_pods_and_its_row() -> None:
    cluster, clock = kai_cluster()
    ref = running(cluster, clock)

    simulated_actuator(cluster, clock=clock, enabled=WITH_KAI).delete_owner(row(cluster, ref))

    assert cluster.get_workload(ref) is None and cluster.list_gpu_pods() == []


def test_a_plain_kuberay_raycluster_is_a_kuberay_row_and_is_suspended_not_a_workload() -> None:
    managers = (Manager.KUEUE, Manager.KUBERAY)
    cluster, clock = kai_cluster(enabled=managers)
    ref = cluster.create(plain_spec(), now=clock.now())
    clock.advance(POD_START)

    read = row(cluster, ref)
    writes = simulated_actuator(cluster, clock=clock, enabled=managers)
    actuation.deactivate(writes, read, audit=AUDIT, message="idle", logger=LOG)

    assert (read.manager, read.queue, read.cluster_queue) == (Manager.KUBERAY, "", None)
    assert cluster.kueue().workloads == {}
    assert cluster.rayclusters.get(ref).suspend is True  # type: ignore[union-attr]
    assert row(cluster, ref).annotations[SUSPEND_WAS] == "absent"
    assert cluster.list_gpu_pods() == []


def test_a_kai_cluster_sharing_a_gpu_by_fraction_is_unsupported_hands_off() -> None:
    cluster, clock = kai_cluster()

    ref = running(cluster, clock, name="kai-shared", gpus=0, gpu_fraction="0.5")

    found = row(cluster, ref)
    assert found.hands_off is not None and found.hands_off.state is State.UNSUPPORTED
    assert found.hands_off.reason.startswith(
        "KAI fractional GPUs (gpu-fraction 0.5 on pod kai-shared-head-"
    )
    assert found.hands_off.reason.endswith("are not supported: never stopped")
