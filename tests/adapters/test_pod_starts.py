"""What the Kueue adapter reads for the not-running class, from the objects it already lists:
each GPU pod's waiting containers and PodScheduled condition, the node autoscaler's
TriggeredScaleUp Events, and the Workload's PodsReady, reactivation and admission checks."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.domain.usage.pod_states import ContainerWait, PodsReady
from autoscaler.settings.tree import ClusterSettings
from tests.support.kube_server import KubeServer
from tests.support.pod_start_objects import BAD_IMAGE, NO_NODE, T0, stuck_clusters

SETTINGS = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")
NS = "team-a"


@pytest.fixture(scope="module")
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        stuck_clusters(running, NS)
        yield running


@pytest.fixture
def cluster(server: KubeServer) -> KueueCluster:
    server.requests.clear()
    client = KubeClient(api_client_for(server.configuration()), timeout=timedelta(seconds=5))
    return KueueCluster(client=client, settings=SETTINGS)


def by_owner(workloads: list[WorkloadInfo]) -> dict[str, WorkloadInfo]:
    return {w.owner.name: w for w in workloads if w.owner is not None}


def test_each_pods_state_is_read_in_the_kubelets_and_the_schedulers_words(
    cluster: KueueCluster,
) -> None:
    found = by_owner(cluster.list_workloads())

    (pull,) = found["pull"].gpu_pods
    (sched,) = found["sched"].gpu_pods
    (crash,) = found["crash"].gpu_pods
    assert pull.waiting == (
        ContainerWait(
            "ray", BAD_IMAGE, "ImagePullBackOff", f'Back-off pulling image "{BAD_IMAGE}"'
        ),
    )
    assert (sched.unschedulable, sched.scale_up_at) == (NO_NODE, T0 + timedelta(minutes=2))
    assert (crash.phase, crash.running, crash.runs) == ("Running", True, False)
    assert [w.reason for w in crash.waiting] == ["CrashLoopBackOff"]


def test_the_workloads_admission_facts_are_read_from_its_status(cluster: KueueCluster) -> None:
    found = by_owner(cluster.list_workloads())

    plain, kueue = found["pull"].admission, found["kueue"].admission
    assert plain is not None and kueue is not None
    assert (plain.gpus, plain.pods_read, plain.scale_ups_read) == (1, True, True)
    assert (plain.pods_ready, plain.reactivated_at, plain.pending_checks) == (None, None, ())
    assert kueue.pods_ready == PodsReady("False", "WaitForStart", T0)
    assert kueue.kueue_in_charge
    assert kueue.reactivated_at == T0 + timedelta(minutes=10)
    assert kueue.pending_checks == ("prov",)


def test_scale_ups_cost_one_list_per_cycle_by_field_selector(
    cluster: KueueCluster, server: KubeServer
) -> None:
    cluster.list_workloads()

    events = [r for r in server.requests.all() if r.path.endswith("/events")]
    assert [(r.path, r.query.get("fieldSelector")) for r in events] == [
        ("/api/v1/events", "reason=TriggeredScaleUp")
    ]


def test_the_fresh_read_before_a_stop_reads_the_same_facts(cluster: KueueCluster) -> None:
    listed = by_owner(cluster.list_workloads())["sched"]

    fresh = cluster.get_workload(WorkloadRef(NS, listed.ref.name))

    assert fresh is not None
    assert (fresh.gpu_pods, fresh.admission) == (listed.gpu_pods, listed.admission)


def test_the_fresh_read_lists_events_only_for_an_unschedulable_pod(
    cluster: KueueCluster, server: KubeServer
) -> None:
    """Scale-ups matter for a pod the scheduler cannot place: only then does the read before
    acting list the namespace's Events again; otherwise it reuses the cycle's reading, so
    reading many workloads before acting costs no request per workload for them."""
    listed = by_owner(cluster.list_workloads())
    server.requests.clear()

    fresh = {name: cluster.get_workload(listed[name].ref) for name in listed}

    events = [r for r in server.requests.all() if r.path.endswith("/events")]
    assert [(r.path, r.query.get("fieldSelector")) for r in events] == [
        (f"/api/v1/namespaces/{NS}/events", "reason=TriggeredScaleUp")
    ]
    for name, workload in fresh.items():
        assert workload is not None
        assert (workload.gpu_pods, workload.admission) == (
            listed[name].gpu_pods,
            listed[name].admission,
        ), name
