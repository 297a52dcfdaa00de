"""What the Kueue adapter reads for the not-running class, from the objects it already lists:
each GPU pod's waiting containers and PodScheduled condition, the node autoscaler's
TriggeredScaleUp Events, and the Workload's PodsReady, reactivation and admission checks."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kubernetes.objects import parse_pod
from autoscaler.adapters.kueue.cached import CachedKueueCluster
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.domain.usage.pod_states import ContainerWait, PodsReady
from autoscaler.settings.tree import ClusterSettings
from tests.ha.conftest import FAST_CACHE
from tests.support.builders import make_pod, make_raycluster, make_workload_for
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


# --- "no GPU pod" is "none created" only where the chain from Workload to pods was followed ---

CHAIN_NS = "chain-a"


def chain_workloads(kube: KubeServer) -> None:
    """In CHAIN_NS: `none`, a RayCluster admitted with no pod at all; `gone`, a Workload whose
    RayCluster was not found. In CHAIN_NS-bad: `bad`, no pod read, one pod of its namespace
    unreadable (a GPU quantity that is not a number)."""
    none = make_raycluster(CHAIN_NS, "none").gpu_worker(replicas=1, gpus=1).build()
    kube.store.put(none)
    kube.store.put(make_workload_for(none).queue("user-queue").admitted(at=T0).build())
    gone = make_raycluster(CHAIN_NS, "gone").gpu_worker(replicas=1, gpus=1).build()
    kube.store.put(make_workload_for(gone).queue("user-queue").admitted(at=T0).build())
    bad = make_raycluster(f"{CHAIN_NS}-bad", "bad").gpu_worker(replicas=1, gpus=1).build()
    kube.store.put(bad)
    kube.store.put(make_workload_for(bad).queue("user-queue").admitted(at=T0).build())
    garbled = make_pod(f"{CHAIN_NS}-bad", "bad-worker-0").owned_by_raycluster(bad).gpus(1).build()
    garbled["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "lots"
    kube.store.put(garbled)


@pytest.fixture(scope="module")
def chained(server: KubeServer) -> KubeServer:
    chain_workloads(server)
    return server


@pytest.mark.parametrize("cached", [False, True], ids=["listed", "watch-cached"])
def test_no_gpu_pod_is_none_created_only_where_the_chain_was_followed(
    chained: KubeServer, cached: bool
) -> None:
    client = KubeClient(api_client_for(chained.configuration()), timeout=timedelta(seconds=5))
    cluster: KueueCluster = (
        CachedKueueCluster(client=client, settings=SETTINGS, cache=FAST_CACHE)
        if cached
        else KueueCluster(client=client, settings=SETTINGS)
    )
    try:
        found = by_owner(cluster.list_workloads())
    finally:
        if isinstance(cluster, CachedKueueCluster):
            cluster.stop()

    facts = {name: found[name].admission for name in ("none", "gone", "bad")}
    assert {name: f.pods_unsure if f else "?" for name, f in facts.items()} == {
        "none": None,
        "gone": "its RayCluster gone was not found",
        "bad": f"a pod in {CHAIN_NS}-bad was skipped as malformed (see the log)",
    }
    none = facts["none"]
    assert none is not None and none.pods_found_by == "pod selector ray.io/cluster=none"


def test_a_fresh_read_follows_the_chain_the_same_way(chained: KubeServer) -> None:
    client = KubeClient(api_client_for(chained.configuration()), timeout=timedelta(seconds=5))
    cluster = KueueCluster(client=client, settings=SETTINGS)

    listed = {w.owner.name: w.ref for w in cluster.list_workloads() if w.owner is not None}

    gone = cluster.get_workload(listed["gone"])
    bad = cluster.get_workload(listed["bad"])

    assert gone is not None and gone.admission is not None and bad is not None
    assert gone.admission.pods_unsure == "its RayCluster gone was not found"
    assert bad.admission is not None and bad.admission.pods_unsure is not None
