"""KueueQueues over the watch caches of CachedKueueCluster, as `serve` builds it: the same
answers as the direct reads, and a steady read makes no list call."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.cached import CachedKueueCluster
from autoscaler.adapters.kueue.queues import KueueQueues
from autoscaler.domain.models import WorkloadRef
from autoscaler.settings.tree import ClusterSettings
from tests.ha.conftest import FAST_CACHE, ListCountingClient, eventually
from tests.support.builders import GPU, make_cluster_queue, make_local_queue, make_workload
from tests.support.kube_server import KubeServer

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SETTINGS = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")


@pytest.fixture
def queue(kube: KubeServer) -> Iterator[str]:
    """This test's own ClusterQueue (cluster-scoped, so deleted after it)."""
    name = f"cq-{uuid.uuid4().hex[:8]}"
    kube.store.put(make_cluster_queue(name).cohort("shared").build())
    yield name
    kube.store.delete("clusterqueues.kueue.x-k8s.io", name=name, namespace=None)


@pytest.fixture
def cached(client: KubeClient) -> Iterator[CachedKueueCluster]:
    cluster = CachedKueueCluster(client=client, settings=SETTINGS, cache=FAST_CACHE)
    cluster.start()
    assert cluster.wait_synced(timedelta(seconds=5))
    yield cluster
    assert cluster.stop(timeout=timedelta(seconds=5))


def test_waiters_and_cohorts_come_from_the_caches_with_no_list_call_when_steady(
    kube: KubeServer,
    namespace: str,
    queue: str,
    client: ListCountingClient,
    cached: CachedKueueCluster,
) -> None:
    kube.store.put(make_local_queue(namespace, "user-queue").cluster_queue(queue).build())
    waiter = make_workload(namespace, "waiter").pod_set("main", gpus=2).queue("user-queue")
    kube.store.put(waiter.build())
    running = make_workload(namespace, "running").pod_set("main", gpus=1).queue("user-queue")
    kube.store.put(running.admitted(at=T0, cluster_queue=queue).build())
    queues = KueueQueues(client=client, objects=cached, logger=logging.getLogger("test"))
    queues.read_queues()  # the queue kinds' caches start on first use
    listed = client.lists

    def seen() -> bool:
        return any(w.ref == WorkloadRef(namespace, "waiter") for w in queues.read_queues().waiters)

    eventually(seen)
    kube.requests.clear()
    facts = queues.read_queues()
    infos = {w.ref.name: w for w in cached.list_workloads() if w.ref.namespace == namespace}

    (mine,) = [w for w in facts.waiters if w.ref.namespace == namespace]
    assert (mine.cluster_queue, mine.requests[GPU]) == (queue, 2)
    assert facts.queues[queue].cohort == "shared"
    assert infos["running"].cohort == "shared"
    assert infos["running"].namespace_labels is not None
    assert [r.path for r in kube.requests.all() if not r.is_watch] == [
        "/apis/visibility.kueue.x-k8s.io"  # the visibility API is not served: asked each read
    ]
    assert client.lists == listed
