"""CachedKueueCluster against the session's test API server: the same answers as KueueCluster,
no list call in a steady cycle, real reads before acting, a fixed set of writes per action.
The caches watch every namespace of the shared server; assertions keep to the test's own."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.actuator import KueueActuator
from autoscaler.adapters.kueue.cached import CachedKueueCluster
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.core.errors import ClusterUnavailable
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.models import PodRecord, WorkloadInfo, WorkloadRef
from autoscaler.engine.acting import sequence as actuation
from autoscaler.settings.ha import WatchCacheSettings
from autoscaler.settings.tree import ClusterSettings, OwnerKindSettings
from tests.ha.conftest import FAST_CACHE, ListCountingClient, eventually
from tests.support.builders import make_pod, make_raycluster, make_workload, make_workload_for
from tests.support.fakes import FakeClock
from tests.support.kube_server import KubeServer, RecordedRequest

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SETTINGS = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")
WORKLOADS_PATH = "/apis/kueue.x-k8s.io/v1beta2/workloads"


def gpu_raycluster(kube: KubeServer, namespace: str, name: str, *, workers: int = 2) -> Any:
    """A RayCluster (CPU head, GPU workers), its admitted Workload and its running pods."""
    rc = make_raycluster(namespace, name).gpu_worker(replicas=workers, gpus=1)
    rc = rc.priority_class("dev").annotation(keys.EXEMPT, "true").build()
    kube.store.put(rc)
    kube.store.put(make_workload_for(rc).queue("user-queue").admitted(at=T0).build())
    kube.store.put(make_pod(namespace, f"{name}-head").owned_by_raycluster(rc).build())
    for i in range(workers):
        pod = make_pod(namespace, f"{name}-worker-{i}").owned_by_raycluster(rc).gpus(1)
        kube.store.put(pod.running(since=T0).build())
    return rc


def a_job_workload(kube: KubeServer, namespace: str) -> None:
    """A Workload owned by a batch Job, a kind that is not enabled by default."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": namespace,
            "uid": f"{namespace}-job",
            "annotations": {keys.EXEMPT: "true"},
        },
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
    }
    kube.store.put(job)
    kube.store.put(make_workload(namespace, "job-train").owned_by(job).pod_set("main").build())


def scaled_object(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "so", "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"name": "llm"},
            "triggers": [{"type": "external", "metadata": {"scalerAddress": "x:9090"}}],
        },
    }


def mine(workloads: list[WorkloadInfo], namespace: str) -> dict[WorkloadRef, WorkloadInfo]:
    """The test's own Workloads, with their pods in name order."""
    return {
        w.ref: replace(w, pods=tuple(sorted(w.pods, key=lambda p: p.name)))
        for w in workloads
        if w.ref.namespace == namespace
    }


def gpu_pods(records: list[PodRecord], namespace: str) -> set[str]:
    return {r.pod.name for r in records if r.namespace == namespace}


def reads(kube: KubeServer) -> list[RecordedRequest]:
    """Everything but watches: what a cycle costs the API server."""
    return [r for r in kube.requests.all() if not r.is_watch]


def make_cached(client: KubeClient, cache: WatchCacheSettings = FAST_CACHE) -> CachedKueueCluster:
    return CachedKueueCluster(client=client, settings=SETTINGS, cache=cache)


def stop(kube: KubeServer, cluster: CachedKueueCluster) -> None:
    """Tell every cache to stop, end the quiet watches so they notice now, and join them."""
    cluster.stop(timeout=timedelta(0))
    kube.drop_watches()
    assert cluster.stop(timeout=timedelta(seconds=5))


@pytest.fixture
def cached(kube: KubeServer, client: KubeClient) -> Iterator[CachedKueueCluster]:
    cluster = make_cached(client)
    yield cluster
    stop(kube, cluster)


def started(cluster: CachedKueueCluster) -> CachedKueueCluster:
    cluster.start()
    assert cluster.wait_synced(timedelta(seconds=5))
    return cluster


def test_cached_reads_answer_as_the_direct_adapter_does(
    kube: KubeServer, namespace: str, client: KubeClient, cached: CachedKueueCluster
) -> None:
    gpu_raycluster(kube, namespace, "rc-1")
    gpu_raycluster(kube, namespace, "rc-2", workers=1)
    kube.store.put(make_workload(namespace, "pending").pod_set("main").build())
    kube.store.put(make_pod(namespace, "plain-gpu").gpus(1).running(since=T0).build())
    direct = KueueCluster(client=client, settings=SETTINGS)

    started(cached)

    assert mine(cached.list_workloads(), namespace) == mine(direct.list_workloads(), namespace)
    assert gpu_pods(cached.list_gpu_pods(), namespace) == gpu_pods(
        direct.list_gpu_pods(), namespace
    )
    assert gpu_pods(cached.list_gpu_pods(), namespace) == {
        "rc-1-worker-0",
        "rc-1-worker-1",
        "rc-2-worker-0",
        "plain-gpu",
    }


def test_a_steady_cycle_makes_no_list_call_and_still_sees_changes(
    kube: KubeServer, client: ListCountingClient, namespace: str, cached: CachedKueueCluster
) -> None:
    gpu_raycluster(kube, namespace, "rc")
    kube.store.put(scaled_object(namespace))
    started(cached)
    cached.list_scaled_objects()  # its cache starts on first use
    listed = client.lists
    kube.requests.clear()

    for cycle in range(3):
        workloads = mine(cached.list_workloads(), namespace)
        cached.list_gpu_pods()
        cached.list_scaled_objects()
        assert len(workloads) == 1 + cycle
        gpu_raycluster(kube, namespace, f"rc-more-{cycle}")
        eventually(lambda n=cycle: len(mine(cached.list_workloads(), namespace)) == n + 2)

    assert reads(kube) == []
    assert client.lists == listed


def test_owners_of_kinds_that_are_not_enabled_are_neither_listed_nor_watched(
    kube: KubeServer, namespace: str, cached: CachedKueueCluster
) -> None:
    a_job_workload(kube, namespace)
    started(cached)

    (workload,) = mine(cached.list_workloads(), namespace).values()

    assert workload.owner is not None and workload.owner.kind == "Job"
    assert workload.owner_annotations == {}  # not read: the policy never acts on Jobs
    assert kube.requests.matching(path_prefix="/apis/batch/v1/jobs") == []


def test_owners_of_every_enabled_kind_are_watched(
    kube: KubeServer, namespace: str, client: KubeClient
) -> None:
    kinds = dict(SETTINGS.owner_kinds)
    kinds["Job"] = OwnerKindSettings(
        enabled=True, pod_selector="batch.kubernetes.io/job-name={name}"
    )
    settings = SETTINGS.model_copy(update={"owner_kinds": kinds})
    a_job_workload(kube, namespace)
    cluster = CachedKueueCluster(client=client, settings=settings, cache=FAST_CACHE)
    try:
        started(cluster)
        (workload,) = mine(cluster.list_workloads(), namespace).values()
    finally:
        stop(kube, cluster)

    assert workload.owner_annotations[keys.EXEMPT] == "true"
    assert any(r.is_watch for r in kube.requests.matching("GET", "/apis/batch/v1/jobs"))


def test_the_fresh_read_before_acting_goes_to_the_api(
    kube: KubeServer, namespace: str, cached: CachedKueueCluster
) -> None:
    gpu_raycluster(kube, namespace, "rc")
    started(cached)
    (ref,) = mine(cached.list_workloads(), namespace)
    kube.store.patch(
        "workloads.kueue.x-k8s.io",
        name=ref.name,
        namespace=namespace,
        patch={"spec": {"active": False}},
    )
    kube.requests.clear()

    fresh = cached.get_workload(ref)

    assert fresh is not None and not fresh.active, "read from the API, not the cache"
    assert [(r.method, r.path) for r in reads(kube)] == [
        ("GET", f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/workloads/{ref.name}"),
        ("GET", f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters/rc"),
        ("GET", f"/api/v1/namespaces/{namespace}/pods"),
    ]


def test_an_action_makes_a_fixed_set_of_writes(
    kube: KubeServer, namespace: str, client: KubeClient, cached: CachedKueueCluster
) -> None:
    gpu_raycluster(kube, namespace, "rc")
    started(cached)
    (workload,) = mine(cached.list_workloads(), namespace).values()
    audit = DeactivationAudit(at=T0, reason="idle", peak=0.01, threshold=0.05, policy="p")
    kube.requests.clear()

    actuator = KueueActuator(client=client, workloads=cached.workload_resource, clock=FakeClock(T0))
    actuation.deactivate(
        actuator, workload, audit=audit, message="idle", logger=logging.getLogger("test")
    )

    assert [(r.method, r.path.rsplit("/", 2)[-2]) for r in kube.requests.writes()] == [
        ("PATCH", "workloads"),
        ("PATCH", "rayclusters"),
        ("POST", namespace),
        ("POST", namespace),
    ]
    assert [r for r in reads(kube) if r.method == "GET"] == [], "no read on the way"


def test_a_failing_cache_makes_the_cycle_an_outage_until_it_recovers(
    kube: KubeServer, namespace: str, cached: CachedKueueCluster
) -> None:
    gpu_raycluster(kube, namespace, "rc")
    started(cached)
    kube.faults.fail_next("GET", WORKLOADS_PATH, status=500, times=1000)
    kube.drop_watches()

    def outage() -> bool:
        try:
            cached.list_workloads()
        except ClusterUnavailable as exc:
            return "workloads.kueue.x-k8s.io cache failing" in str(exc)
        return False

    eventually(outage, what="the failing cache reported")
    kube.faults.clear()
    eventually(lambda: not outage(), what="recovered")
    assert len(mine(cached.list_workloads(), namespace)) == 1


@pytest.mark.parametrize(
    ("status", "complaint"),
    [
        pytest.param(500, "pods cache failing: .* 500", id="failing-first-list"),
        pytest.param(None, "pods cache is not filled yet", id="slow-first-list"),
    ],
)
def test_a_cycle_without_a_first_list_is_an_outage(
    kube: KubeServer, client: KubeClient, status: int | None, complaint: str
) -> None:
    impatient = FAST_CACHE.model_copy(update={"sync_timeout": timedelta(milliseconds=300)})
    cluster = make_cached(client, impatient)
    if status is None:  # a list that takes longer than syncTimeout to answer
        kube.faults.fail_next(
            "GET", "/api/v1/pods", status=500, when=lambda r: time.sleep(0.6) or False
        )
    else:
        kube.faults.fail_next("GET", "/api/v1/pods", status=status, times=1000)
    try:
        with pytest.raises(ClusterUnavailable, match=complaint):
            cluster.list_gpu_pods()
    finally:
        kube.faults.clear()
        stop(kube, cluster)


def test_a_stopped_cluster_reads_nothing_stale(kube: KubeServer, client: KubeClient) -> None:
    cluster = started(make_cached(client))
    stop(kube, cluster)

    with pytest.raises(ClusterUnavailable, match="stopped"):
        cluster.list_workloads()


def test_scaled_objects_come_from_their_cache(
    kube: KubeServer, namespace: str, cached: CachedKueueCluster
) -> None:
    kube.store.put(scaled_object(namespace))

    found = [o for o in cached.list_scaled_objects() if o["metadata"]["namespace"] == namespace]

    assert [o["spec"]["scaleTargetRef"] for o in found] == [{"name": "llm"}]


def test_stopping_ends_every_cache_thread(kube: KubeServer, client: KubeClient) -> None:
    cluster = started(make_cached(client))
    cluster.list_scaled_objects()
    # workloads, the enabled owner kind, pods, ClusterQueues, LocalQueues (the ClusterQueue of
    # a Workload not admitted), namespaces, scale-up Events, Kueue's Configuration,
    # ScaledObjects
    assert len([t for t in threading.enumerate() if t.name.startswith("watch-cache-")]) == 9

    assert cluster.stop(timeout=timedelta(seconds=5))

    assert not [t for t in threading.enumerate() if t.name.startswith("watch-cache-")]


def test_with_kueue_not_read_only_pods_and_namespaces_are_watched(
    kube: KubeServer, namespace: str, client: KubeClient
) -> None:
    """No Workload, so no owner of one: an unused RayCluster watch failing would otherwise
    fail the cycle. Pods are kept for their GPUs only (no owner's pod label counts)."""
    gpu_raycluster(kube, namespace, "rc")
    cluster = CachedKueueCluster(
        client=client, settings=SETTINGS, cache=FAST_CACHE, read_kueue=False
    )
    try:
        started(cluster)
        assert cluster.list_workloads() == []
        assert gpu_pods(cluster.list_gpu_pods(), namespace) == {"rc-worker-0", "rc-worker-1"}
    finally:
        stop(kube, cluster)

    watched = {r.path for r in kube.requests.all() if r.is_watch}
    assert watched == {"/api/v1/pods", "/api/v1/namespaces"}


def test_namespace_annotations_come_from_the_namespace_watch_with_no_extra_read(
    kube: KubeServer, client: ListCountingClient, namespace: str, cached: CachedKueueCluster
) -> None:
    def annotate(targets: str) -> None:
        meta = {"name": namespace, "annotations": {keys.NOTIFY: targets}}
        kube.store.put({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})

    annotate("team-slack")
    gpu_raycluster(kube, namespace, "rc")
    started(cached)
    listed = client.lists
    kube.requests.clear()

    def notify_targets() -> str | None:
        (workload,) = mine(cached.list_workloads(), namespace).values()
        return (workload.namespace_annotations or {}).get(keys.NOTIFY)

    eventually(lambda: notify_targets() == "team-slack")
    annotate("oncall")
    eventually(lambda: notify_targets() == "oncall")

    assert reads(kube) == []
    assert client.lists == listed
    kube.store.delete("namespaces", name=namespace)


def test_a_malformed_cached_workload_is_skipped_and_said_every_cycle(
    kube: KubeServer, namespace: str, cached: CachedKueueCluster, caplog: pytest.LogCaptureFixture
) -> None:
    gpu_raycluster(kube, namespace, "fine", workers=1)
    broken = make_workload(namespace, "broken").pod_set("w").build()
    broken["spec"]["podSets"][0]["count"] = "many"
    kube.store.put(broken)
    started(cached)

    with caplog.at_level(logging.WARNING):
        cycles = [mine(cached.list_workloads(), namespace) for _ in range(2)]

    said = [r for r in caplog.records if f"malformed workload {namespace}/broken" in r.message]
    assert [len(found) for found in cycles] == [1, 1]
    assert len(said) == 2  # parsed once, but not forgotten after the first cycle
