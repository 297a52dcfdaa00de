"""Kueue's Configuration is read from its ConfigMap, by name, once a cycle (one list without
watch caches; with them, tests/ha/test_kueue_configuration_cached.py), never per Workload;
refused or absent, it is unreadable and says why."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.domain.kueue_config import V1BETA2, KueueConfiguration
from autoscaler.domain.models import WorkloadInfo
from autoscaler.settings.cluster import KueueConfigurationSettings
from autoscaler.settings.tree import ClusterSettings
from tests.support.kube_server import KubeServer
from tests.support.pod_start_objects import stuck_clusters

SETTINGS = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")
SOURCE = "kueue-system/kueue-manager-config"
NS = "team-a"


def kueue_config_map(
    timeout: str, *, namespace: str = "kueue-system", name: str = "kueue-manager-config"
) -> dict[str, Any]:
    """As Kueue's manifests ship it (config/components/manager/controller_manager_config.yaml),
    with an admin's timeout and a feature gate."""
    text = (
        f"apiVersion: {V1BETA2}\n"
        "kind: Configuration\n"
        "health:\n  healthProbeBindAddress: :8081\n"
        f"waitForPodsReady:\n  timeout: {timeout}\n"
        "featureGates:\n  PrioritySortingWithinCohort: false\n"
    )
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": namespace, "name": name},
        "data": {"controller_manager_config.yaml": text},
    }


@pytest.fixture
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        stuck_clusters(running, NS)
        yield running


def client_of(server: KubeServer) -> KubeClient:
    return KubeClient(api_client_for(server.configuration()), timeout=timedelta(seconds=5))


def kueue_read(workloads: list[WorkloadInfo]) -> KueueConfiguration:
    """The Configuration the `kueue` RayCluster's Workload (PodsReady False) carries."""
    (found,) = [w for w in workloads if w.owner is not None and w.owner.name == "kueue"]
    assert found.admission is not None and found.admission.kueue is not None
    return found.admission.kueue


def config_reads(server: KubeServer) -> list[tuple[str, str | None, bool]]:
    return [
        (r.path, r.query.get("fieldSelector"), r.is_watch)
        for r in server.requests.all()
        if r.path.endswith("/configmaps")
    ]


def test_read_once_a_cycle_by_name_whatever_the_number_of_workloads(server: KubeServer) -> None:
    server.store.put(kueue_config_map("10m"))
    cluster = KueueCluster(client=client_of(server), settings=SETTINGS)
    cluster.workload_resource()
    server.requests.clear()

    config = kueue_read(cluster.list_workloads())
    few = config_reads(server)
    stuck_clusters(server, "team-b")
    stuck_clusters(server, "team-c")
    server.requests.clear()
    cluster.list_workloads()

    assert (
        few
        == config_reads(server)
        == [
            (
                "/api/v1/namespaces/kueue-system/configmaps",
                "metadata.name=kueue-manager-config",
                False,
            )
        ]
    )
    ready = config.wait_for_pods_ready
    assert ready is not None and ready.timeout == timedelta(minutes=10)
    assert config.feature_gates == {"PrioritySortingWithinCohort": False}


def test_the_via_kueue_gate_shares_the_cycles_reading(server: KubeServer) -> None:
    """Read with the cycle's Workloads, it serves the via-kueue gate right after without a
    second list; read again (no cycle between), it is listed anew, never an old reading."""
    server.store.put(kueue_config_map("10m"))
    cluster = KueueCluster(client=client_of(server), settings=SETTINGS)
    cluster.workload_resource()
    server.requests.clear()

    listed = kueue_read(cluster.list_workloads())
    gate = cluster.kueue_configuration()

    assert gate == listed
    assert len(config_reads(server)) == 1
    server.store.put(kueue_config_map("20m"))
    again = cluster.kueue_configuration()
    assert len(config_reads(server)) == 2
    assert again.wait_for_pods_ready is not None
    assert again.wait_for_pods_ready.timeout == timedelta(minutes=20)


def test_a_fresh_read_adds_no_request_for_it(server: KubeServer) -> None:
    server.store.put(kueue_config_map("10m"))
    cluster = KueueCluster(client=client_of(server), settings=SETTINGS)
    (listed,) = [w for w in cluster.list_workloads() if w.owner and w.owner.name == "kueue"]
    server.requests.clear()

    fresh = cluster.get_workload(listed.ref)

    assert config_reads(server) == []
    assert fresh is not None and fresh.admission is not None
    assert fresh.admission.kueue == kueue_read([listed])


def test_refused_it_is_unreadable_with_the_api_servers_answer(server: KubeServer) -> None:
    server.store.put(kueue_config_map("10m"))
    server.faults.fail_next("GET", "/api/v1/namespaces/kueue-system/configmaps", status=403)
    cluster = KueueCluster(client=client_of(server), settings=SETTINGS)

    config = kueue_read(cluster.list_workloads())

    assert config.problem is not None
    assert config.problem.startswith(f"cannot read {SOURCE}: ")
    assert "403" in config.problem


def test_absent_it_is_unreadable_not_found(server: KubeServer) -> None:
    cluster = KueueCluster(client=client_of(server), settings=SETTINGS)

    config = kueue_read(cluster.list_workloads())

    assert config.problem == f"cannot read {SOURCE}: not found"


def test_the_settings_name_where_kueue_keeps_it(server: KubeServer) -> None:
    server.store.put(kueue_config_map("7m", namespace="kueue", name="kueue-config"))
    where = KueueConfigurationSettings(namespace="kueue", name="kueue-config")
    settings = SETTINGS.model_copy(update={"kueue_configuration": where})
    cluster = KueueCluster(client=client_of(server), settings=settings)

    config = kueue_read(cluster.list_workloads())

    assert config.source == "kueue/kueue-config"
    assert config.wait_for_pods_ready is not None
    assert config.wait_for_pods_ready.timeout == timedelta(minutes=7)


def test_deeply_nested_it_is_unreadable_not_a_failed_cycle(server: KubeServer) -> None:
    """Whoever may edit Kueue's ConfigMap must not be able to fail every cycle: a document
    nested past the bounded parser's depth is refused as any other unreadable one."""
    hostile = kueue_config_map("10m")
    depth = 5000
    hostile["data"]["controller_manager_config.yaml"] = (
        f"apiVersion: {V1BETA2}\nkind: Configuration\nfeatureGates: " + "[" * depth + "]" * depth
    )
    server.store.put(hostile)
    cluster = KueueCluster(client=client_of(server), settings=SETTINGS)

    config = kueue_read(cluster.list_workloads())

    assert config.problem is not None
    assert config.problem.startswith(f"cannot read {SOURCE}: controller_manager_config.yaml ")
    assert "nested deeper than" in config.problem
    assert config.wait_for_pods_ready is None
