"""FleetReader against the in-process test API server: Kueue's rows, and a row of its own
for each RayCluster no Kueue Workload admits, only while a suspend actuator is enabled."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest

from autoscaler.adapters.kuberay.cached_source import CachedRayClusters
from autoscaler.adapters.kuberay.fleet import FleetReader
from autoscaler.adapters.kuberay.source import ListedRayClusters, RayClusterSource
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.domain.models import State, WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.management import HandsOff, Manager
from autoscaler.settings.ha import WatchCacheSettings
from autoscaler.settings.tree import ClusterSettings
from tests.support.builders import make_raycluster, make_workload, make_workload_for
from tests.support.kube_server import KubeServer
from tests.support.ray_rig import T0, client_of, emptied, put_raycluster

SETTINGS = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")
SUSPENDING = frozenset({Manager.KUEUE, Manager.KAI, Manager.KUBERAY})
KUEUE_ONLY = frozenset({Manager.KUEUE})
LOG = logging.getLogger("tests.kuberay.fleet")
FAST_CACHE = WatchCacheSettings(
    watch_timeout=timedelta(seconds=1),
    backoff_initial=timedelta(milliseconds=50),
    backoff_max=timedelta(seconds=1),
    sync_timeout=timedelta(seconds=5),
)


@pytest.fixture(scope="module")
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        yield running


@pytest.fixture
def kube(server: KubeServer) -> Iterator[KubeServer]:
    yield emptied(server)
    assert server.errors == []


def reader(
    kube: KubeServer,
    enabled: frozenset[Manager] = SUSPENDING,
    *,
    source: RayClusterSource | None = None,
) -> FleetReader:
    client = client_of(kube)
    kueue = KueueCluster(client=client, settings=SETTINGS, read_kueue=Manager.KUEUE in enabled)
    rays = source or ListedRayClusters(client=client, settings=SETTINGS, logger=LOG)
    return FleetReader(kueue=kueue, rayclusters=rays, enabled=enabled, logger=LOG)


def names(rows: list[WorkloadInfo]) -> dict[str, Manager]:
    return {row.ref.name: row.manager for row in rows}


def test_an_unlabelled_raycluster_a_workload_admits_gets_no_row_of_its_own(
    kube: KubeServer,
) -> None:
    raycluster = put_raycluster(kube, make_raycluster("team-a", "rc"))  # no queue label
    workload = kube.store.put(make_workload_for(raycluster).admitted(at=T0).build())
    rows = reader(kube).list_workloads()
    assert names(rows) == {workload["metadata"]["name"]: Manager.KUEUE}


def test_a_raycluster_with_kueues_queue_label_and_no_workload_yet_gets_no_row(
    kube: KubeServer,
) -> None:
    put_raycluster(kube, make_raycluster("team-a", "rc").queue("user-queue"))
    assert reader(kube).list_workloads() == []


def test_a_plain_and_a_kai_raycluster_get_rows_of_their_own(kube: KubeServer) -> None:
    put_raycluster(kube, make_raycluster("team-a", "plain"))
    put_raycluster(kube, make_raycluster("team-a", "kai").kai_queue("team-a"))
    rows = reader(kube).list_workloads()
    assert names(rows) == {"plain": Manager.KUBERAY, "kai": Manager.KAI}
    assert {row.ref.name: len(row.pods) for row in rows} == {"plain": 3, "kai": 3}


def test_a_rayjob_owned_raycluster_is_a_protected_row(kube: KubeServer) -> None:
    put_raycluster(kube, make_raycluster("team-a", "rc").owned_by_rayjob("nightly"))
    (row,) = reader(kube).list_workloads()
    assert row.hands_off is not None
    assert row.hands_off.state is State.PROTECTED


def test_a_rayjobs_raycluster_whose_rayjob_kueue_admits_gets_no_row_of_its_own(
    kube: KubeServer,
) -> None:
    """Its RayJob's Workload is the row: a second row would count its GPUs twice."""
    raycluster = put_raycluster(kube, make_raycluster("team-a", "rc").owned_by_rayjob("nightly"))
    rayjob = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": dict(raycluster["metadata"]["ownerReferences"][0], namespace="team-a"),
    }
    workload = make_workload("team-a", "rayjob-nightly-1a2b3").owned_by(rayjob).build()
    kube.store.put(workload)
    rows = reader(kube).list_workloads()
    assert [row.ref.name for row in rows] == ["rayjob-nightly-1a2b3"]


def test_a_raycluster_named_as_a_workload_of_its_namespace_is_left_alone(
    kube: KubeServer,
) -> None:
    """A request or an action naming "rc" reaches the Workload first: never the RayCluster."""
    put_raycluster(kube, make_raycluster("team-a", "rc"))
    kube.store.put(make_workload("team-a", "rc").pod_set("main").build())
    rows = {(row.manager, row.ref.name): row for row in reader(kube).list_workloads()}
    assert set(rows) == {(Manager.KUEUE, "rc"), (Manager.KUBERAY, "rc")}
    assert rows[(Manager.KUEUE, "rc")].hands_off is None
    assert rows[(Manager.KUBERAY, "rc")].hands_off == HandsOff(
        State.PROTECTED, "shares its name with Workload rc: left alone"
    )


def test_an_actuator_not_enabled_gives_its_rayclusters_no_row(kube: KubeServer) -> None:
    put_raycluster(kube, make_raycluster("team-a", "plain"))
    put_raycluster(kube, make_raycluster("team-a", "kai").kai_queue("team-a"))
    rows = reader(kube, frozenset({Manager.KAI})).list_workloads()
    assert names(rows) == {"kai": Manager.KAI}


def test_with_the_suspend_actuators_off_the_reads_are_exactly_kueues(kube: KubeServer) -> None:
    raycluster = put_raycluster(kube, make_raycluster("team-a", "plain"))
    kube.store.put(make_workload_for(raycluster).admitted(at=T0).build())
    client = client_of(kube)
    KueueCluster(client=client, settings=SETTINGS).list_workloads()
    kueue_alone = [(r.method, r.path, dict(r.query)) for r in kube.requests.all()]
    kube.requests.clear()
    rows = reader(kube, KUEUE_ONLY).list_workloads()
    assert [(r.method, r.path, dict(r.query)) for r in kube.requests.all()] == kueue_alone
    assert {row.manager for row in rows} == {Manager.KUEUE}


def test_with_kueue_off_no_kueue_object_is_read(kube: KubeServer) -> None:
    put_raycluster(kube, make_raycluster("team-a", "plain"))
    fleet = reader(kube, frozenset({Manager.KUBERAY}))
    assert names(fleet.list_workloads()) == {"plain": Manager.KUBERAY}
    assert fleet.get_workload(WorkloadRef("team-a", "plain")) is not None
    assert [r.path for r in kube.requests.all() if "kueue" in r.path] == []


def test_a_workload_created_after_the_read_makes_get_workload_refuse_the_raycluster(
    kube: KubeServer,
) -> None:
    raycluster = put_raycluster(kube, make_raycluster("team-a", "rc"))
    fleet = reader(kube)
    assert names(fleet.list_workloads()) == {"rc": Manager.KUBERAY}
    kube.store.put(make_workload_for(raycluster).build())  # Kueue took it since
    assert fleet.get_workload(WorkloadRef("team-a", "rc")) is None


def test_each_claim_is_logged_once_until_it_changes(
    kube: KubeServer, caplog: pytest.LogCaptureFixture
) -> None:
    put_raycluster(kube, make_raycluster("team-a", "rc").kai_queue("team-a"))
    fleet = reader(kube)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        fleet.list_workloads()
        fleet.list_workloads()
    assert [r.getMessage() for r in caplog.records] == [
        "raycluster team-a/rc: KAI Scheduler's: queue team-a (suspend actuator)"
    ]


def test_with_watch_caches_a_steady_cycle_lists_nothing(kube: KubeServer) -> None:
    put_raycluster(kube, make_raycluster("team-a", "rc").head_priority_class("inference"))
    source = CachedRayClusters(
        client=client_of(kube), settings=SETTINGS, cache=FAST_CACHE, logger=LOG
    )
    fleet = reader(kube, frozenset({Manager.KUBERAY}), source=source)
    try:
        assert names(fleet.list_workloads()) == {"rc": Manager.KUBERAY}
        kube.requests.clear()
        (row,) = fleet.list_workloads()
        assert (len(row.pods), row.priority_class) == (3, "inference")
        lists = [r.path for r in kube.requests.matching("GET") if not r.is_watch]
        assert [p for p in lists if "rayclusters" in p or p.endswith("/pods")] == []
        assert fleet.list_workloads() == reader(kube, frozenset({Manager.KUBERAY})).list_workloads()
    finally:
        assert source.stop(timedelta(seconds=5))
