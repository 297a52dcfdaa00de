"""The cached Kueue adapter reads the not-running class's facts as the direct one does, from
its watch caches (the node autoscaler's TriggeredScaleUp Events among them, by field
selector): a steady cycle makes no list call, and a new scale-up arrives through the watch."""

from __future__ import annotations

from datetime import timedelta

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.cached import CachedKueueCluster
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.domain.models import WorkloadInfo
from autoscaler.settings.tree import ClusterSettings
from tests.ha.conftest import FAST_CACHE, eventually
from tests.support.builders import make_pod, scale_up_event
from tests.support.kube_server import KubeServer
from tests.support.pod_start_objects import T0, stuck_clusters

SETTINGS = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")


def mine(workloads: list[WorkloadInfo], namespace: str) -> dict[str, WorkloadInfo]:
    return {w.owner.name: w for w in workloads if w.ref.namespace == namespace and w.owner}


def test_cached_reads_give_the_same_facts_and_follow_new_scale_ups(
    kube: KubeServer, namespace: str, client: KubeClient
) -> None:
    stuck_clusters(kube, namespace)
    cached = CachedKueueCluster(client=client, settings=SETTINGS, cache=FAST_CACHE)
    try:
        cached.start()
        assert cached.wait_synced(timedelta(seconds=5))
        direct = mine(KueueCluster(client=client, settings=SETTINGS).list_workloads(), namespace)
        kube.requests.clear()

        first = mine(cached.list_workloads(), namespace)

        assert {name: (w.gpu_pods, w.admission) for name, w in first.items()} == {
            name: (w.gpu_pods, w.admission) for name, w in direct.items()
        }
        assert [r for r in kube.requests.all() if not r.is_watch] == []
        pod = make_pod(namespace, "pull-worker-0").build()
        kube.store.put(scale_up_event(pod, at=T0 + timedelta(minutes=7)))

        def seen() -> bool:
            (worker,) = mine(cached.list_workloads(), namespace)["pull"].gpu_pods
            return worker.scale_up_at == T0 + timedelta(minutes=7)

        eventually(seen, what="the new scale-up Event through the watch")
    finally:
        cached.stop(timeout=timedelta(0))
        kube.drop_watches()
        assert cached.stop(timeout=timedelta(seconds=5))
