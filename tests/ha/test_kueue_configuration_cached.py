"""With watch caches, Kueue's Configuration is watched by name in Kueue's namespace: a
steady cycle reads nothing for it, a change arrives through the watch, and a refusal makes
it unreadable without failing the cycle."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.cached import CachedKueueCluster
from autoscaler.domain.kueue_config import KueueConfiguration
from autoscaler.settings.tree import ClusterSettings
from tests.adapters.test_kueue_configuration_read import SOURCE, kueue_config_map
from tests.ha.conftest import FAST_CACHE, eventually
from tests.support.kube_server import KubeServer
from tests.support.pod_start_objects import stuck_clusters

SETTINGS = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")
CONFIG_PATH = "/api/v1/namespaces/kueue-system/configmaps"


@pytest.fixture
def cached(kube: KubeServer, namespace: str, client: KubeClient) -> Iterator[CachedKueueCluster]:
    stuck_clusters(kube, namespace)
    cluster = CachedKueueCluster(client=client, settings=SETTINGS, cache=FAST_CACHE)
    yield cluster
    cluster.stop(timeout=timedelta(0))
    kube.drop_watches()
    assert cluster.stop(timeout=timedelta(seconds=5))
    for config in kube.store.list("configmaps", namespace="kueue-system"):
        kube.store.delete("configmaps", name=config["metadata"]["name"], namespace="kueue-system")


def timeout_of(config: KueueConfiguration) -> timedelta | None:
    ready = config.wait_for_pods_ready
    return ready.timeout if ready is not None else None


def test_watched_by_name_a_steady_cycle_reads_nothing_and_a_change_comes_through(
    kube: KubeServer, namespace: str, cached: CachedKueueCluster
) -> None:
    kube.store.put(kueue_config_map("10m"))
    cached.start()
    assert cached.wait_synced(timedelta(seconds=5))
    cached.list_workloads()
    kube.requests.clear()

    (kueue,) = [
        w
        for w in cached.list_workloads()
        if w.ref.namespace == namespace and w.owner and w.owner.name == "kueue"
    ]

    assert kueue.admission is not None and kueue.admission.kueue is not None
    assert timeout_of(kueue.admission.kueue) == timedelta(minutes=10)
    assert [r for r in kube.requests.all() if r.path == CONFIG_PATH and not r.is_watch] == []
    watches = [r for r in kube.requests.all() if r.path == CONFIG_PATH and r.is_watch]
    assert all(
        r.query.get("fieldSelector") == "metadata.name=kueue-manager-config" for r in watches
    )
    kube.store.put(kueue_config_map("20m"))
    eventually(
        lambda: timeout_of(cached.kueue_configuration()) == timedelta(minutes=20),
        what="the changed timeout through the watch",
    )


def test_refused_it_is_unreadable_and_the_cycle_still_runs(
    kube: KubeServer, namespace: str, cached: CachedKueueCluster
) -> None:
    kube.faults.fail_next("GET", CONFIG_PATH, status=403, times=1000)
    cached.start()

    workloads = [w for w in cached.list_workloads() if w.ref.namespace == namespace]
    config = cached.kueue_configuration()

    assert len(workloads) == 4
    assert config.problem is not None and config.problem.startswith(f"cannot read {SOURCE}: ")
    assert "403" in config.problem
