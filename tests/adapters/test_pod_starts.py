"""What the Kueue adapter reads for the not-running class, from the objects it already lists:
each GPU pod's waiting containers and PodScheduled condition, the node autoscaler's
TriggeredScaleUp Events, and the Workload's PodsReady, reactivation and admission checks."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kubernetes.objects import parse_pod
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.domain.usage.pod_states import ContainerWait, PodsReady
from autoscaler.settings.tree import ClusterSettings
from tests.support.builders import make_pod
from tests.support.builders.common import Object, container
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
    assert (crash.phase, crash.phase_running, crash.gpu_containers_run) == ("Running", True, False)
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


def crash_looping(name: str) -> Object:
    """A container status waiting in CrashLoopBackOff, as the kubelet writes it."""
    back_off = f"back-off 5m0s restarting failed container={name}"
    return {
        "name": name,
        "image": "fluent-bit:3",
        "ready": False,
        "restartCount": 7,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": back_off}},
    }


def with_sidecars(pod: Object) -> Object:
    """A running GPU pod beside two helpers without GPUs, both crash-looping: a native
    sidecar (an init container with restartPolicy Always, kubernetes KEP-753) and a plain
    container. Stamped as the API server stamps it."""
    pod["metadata"]["creationTimestamp"] = "2026-03-01T12:00:00Z"
    spec, status = pod["spec"], pod["status"]
    sidecar = {**container("log-shipper", image="fluent-bit:3"), "restartPolicy": "Always"}
    spec["initContainers"] = [sidecar]
    spec["containers"].append(container("metrics", image="fluent-bit:3"))
    status["initContainerStatuses"] = [crash_looping("log-shipper")]
    status["containerStatuses"].append(crash_looping("metrics"))
    return pod


def test_only_the_gpu_containers_say_whether_a_pod_runs() -> None:
    running = make_pod(NS, "w-0").gpus(1).running(since=T0).build()
    pod = parse_pod(with_sidecars(running), SETTINGS.gpu_resources)

    assert [(w.container, w.holds_gpus) for w in pod.waiting] == [
        ("log-shipper", False),
        ("metrics", False),
    ]
    assert (pod.phase_running, pod.gpu_containers_run) == (True, True)


def test_a_pod_no_container_of_which_names_gpus_counts_as_a_whole() -> None:
    running = make_pod(NS, "cpu-0").running(since=T0).build()
    pod = parse_pod(with_sidecars(running), SETTINGS.gpu_resources)

    assert all(w.holds_gpus for w in pod.waiting)
    assert not pod.gpu_containers_run
