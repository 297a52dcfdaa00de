"""A RayJob's pods, found through its RayCluster over the test API server, as KubeRay makes
them: the RayJob controls its RayCluster (rayjob_controller.go constructRayClusterForRayJob),
the RayCluster its pods (raycluster_controller.go buildHeadPod, buildWorkerPod), and the pods
carry only KubeRay's labels, `ray.io/cluster=<the RayCluster's name>`, never the RayJob's
`ray.io/originated-from-*` (common/pod.go labelPod). RayClusters are read once a cycle, both
as the owners of RayCluster Workloads and to follow the RayJob's chain."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kueue.cached import CachedKueueCluster
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.domain.models import State, WorkloadInfo
from autoscaler.domain.usage.assessment import UsageRules
from autoscaler.domain.usage.not_running import judge_start
from autoscaler.settings.ha import WatchCacheSettings
from autoscaler.settings.tree import ClusterSettings, OwnerKindSettings
from tests.support.builders import (
    ORIGIN_NAME_LABEL,
    make_pod,
    make_raycluster,
    make_rayjob,
    make_workload_for,
)
from tests.support.builders.queues import make_cluster_queue, make_local_queue, make_resource_flavor
from tests.support.cluster_emulator import ClusterEmulator
from tests.support.kube_server import KubeServer

T0 = datetime(2026, 8, 1, 9, 0, tzinfo=UTC)
NS = "team-r"
RAYCLUSTERS = "/apis/ray.io/v1/rayclusters"
CACHE = WatchCacheSettings.model_validate({"watchTimeout": "30s", "syncTimeout": "10s"})


def settings(rayjob_selector: str | None = None) -> ClusterSettings:
    kinds = ClusterSettings().owner_kinds
    rayjob = OwnerKindSettings(enabled=True, pod_selector=rayjob_selector)
    return ClusterSettings(
        service_namespace="iga",
        runtime_state_config_map="iga-state",
        owner_kinds={**kinds, "RayJob": rayjob},
    )


class Cluster:
    """One RayJob (a 1-GPU head, one 1-GPU worker) and one RayCluster, both admitted."""

    def __init__(self) -> None:
        self.server = KubeServer(clock=lambda: T0).start()
        put = self.server.store.put
        put(make_resource_flavor().build())
        put(make_cluster_queue().quota(gpus=8, cpu=100).build())
        put(make_local_queue(NS).build())
        self.job = make_rayjob(NS, "train").head(gpus=1).gpu_worker(replicas=1).queue("user-queue")
        put(self.job.build())
        put(make_workload_for(self.job.build()).build())
        raycluster = make_raycluster(NS, "lab").head(gpus=1).queue("user-queue").build()
        put(raycluster)
        put(make_workload_for(raycluster).build())
        ClusterEmulator(self.server, clock=lambda: T0, namespaces={NS}).sync()

    def client(self) -> KubeClient:
        return KubeClient(api_client_for(self.server.configuration()), timeout=timedelta(seconds=5))

    def lists_of(self, path: str) -> int:
        return sum(1 for r in self.server.requests.all() if not r.is_watch and r.path == path)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    made = Cluster()
    yield made
    made.server.close()


def by_kind(found: list[WorkloadInfo], kind: str) -> WorkloadInfo:
    [one] = [w for w in found if w.owner is not None and w.owner.kind == kind]
    return one


def test_the_emulated_kuberay_labels_a_rayjobs_pods_as_its_rayclusters(cluster: Cluster) -> None:
    pods = cluster.server.store.list("pods", namespace=NS)
    cluster_name = cluster.job.raycluster_name()
    mine = [p for p in pods if p["metadata"]["name"].startswith(cluster_name)]

    assert len(mine) == 2
    for pod in mine:
        labels = pod["metadata"]["labels"]
        assert labels["ray.io/cluster"] == cluster_name
        assert ORIGIN_NAME_LABEL not in labels
        [ref] = pod["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("RayCluster", cluster_name, True)


def test_a_rayjobs_pods_are_found_through_its_raycluster_listed_once(cluster: Cluster) -> None:
    cluster.server.requests.clear()
    found = KueueCluster(client=cluster.client(), settings=settings()).list_workloads()

    rayjob, raycluster = by_kind(found, "RayJob"), by_kind(found, "RayCluster")
    cluster_name = cluster.job.raycluster_name()
    assert sorted(p.name for p in rayjob.pods) == [
        f"{cluster_name}-head",
        f"{cluster_name}-workers-worker-0",
    ]
    assert len(rayjob.gpu_pods) == 2
    assert rayjob.admission is not None
    assert rayjob.admission.pods_found_by == "ownership (RayJob → RayCluster → Pod)"
    assert rayjob.admission.pods_unsure is None
    assert [p.name for p in raycluster.pods] == ["lab-head"]  # its own, not the RayJob's
    assert cluster.lists_of(RAYCLUSTERS) == 1  # owners and the chain's links: one list


def test_with_caches_rayclusters_are_watched_once_and_the_chain_followed(cluster: Cluster) -> None:
    cluster.server.requests.clear()
    reader = CachedKueueCluster(client=cluster.client(), settings=settings(), cache=CACHE)
    try:
        reader.start()
        assert reader.wait_synced(timedelta(seconds=10))
        _until(lambda: len(by_kind(reader.list_workloads(), "RayJob").gpu_pods) == 2)
        assert cluster.lists_of(RAYCLUSTERS) == 1  # one cache: the owners' and the links'
        cluster.server.requests.clear()
        rayjob = by_kind(reader.list_workloads(), "RayJob")
        assert [r for r in cluster.server.requests.all() if not r.is_watch] == []
    finally:
        reader.stop(timedelta(seconds=5))
    assert len(rayjob.pods) == 2
    assert rayjob.admission is not None and rayjob.admission.pods_unsure is None


def _until(condition: Callable[[], bool], within: float = 15) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the caches never caught up"
        time.sleep(0.1)


def test_a_configured_rayjob_pod_selector_still_wins(cluster: Cluster) -> None:
    """An existing `cluster.ownerKinds.RayJob.podSelector` is honoured: a pod carrying that
    label counts, owned by nothing; KubeRay's own pods, which do not carry it, do not."""
    stray = make_pod(NS, "stray").gpus(1).running(since=T0).build()
    stray["metadata"]["labels"][ORIGIN_NAME_LABEL] = "train"
    cluster.server.store.put(stray)
    configured = settings(f"{ORIGIN_NAME_LABEL}={{name}}")

    found = KueueCluster(client=cluster.client(), settings=configured).list_workloads()
    rayjob = by_kind(found, "RayJob")

    assert [p.name for p in rayjob.pods] == ["stray"]
    assert rayjob.admission is not None
    assert rayjob.admission.pods_found_by == f"pod selector {ORIGIN_NAME_LABEL}=train"


def test_rayclusters_unreadable_make_a_rayjob_unknown_never_idle(cluster: Cluster) -> None:
    cluster.server.faults.fail_next("GET", RAYCLUSTERS, status=403, times=100)
    found = KueueCluster(client=cluster.client(), settings=settings()).list_workloads()
    rayjob = by_kind(found, "RayJob")

    assert rayjob.pods == ()
    rules = UsageRules(0.05, timedelta(minutes=10), timedelta(minutes=1), 0.5, timedelta(minutes=3))
    judged = judge_start(rayjob, rules=rules, now=T0 + timedelta(minutes=1))
    assert judged is not None and judged.state is State.UNKNOWN
    assert "RayClusters unreadable" in judged.reason, judged.reason
