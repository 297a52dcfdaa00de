"""What the warning stage needs of the Kueue adapters (ISSUE 15), against the in-process test
API server over HTTP with the official client: each Workload carries its namespace's
annotations (where its notifications go) from the same namespace read as its labels, and
the delete rung deletes an owner only while it is still the object that was read."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kueue.actuator import KueueActuator
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.core.errors import Conflict, Forbidden, NotFound
from autoscaler.domain import annotations as keys
from autoscaler.domain.models import OwnerRef, WorkloadInfo
from autoscaler.settings.tree import ClusterSettings
from tests.support.builders import make_raycluster, make_workload, make_workload_for
from tests.support.domain_builders import a_workload
from tests.support.kube_server import KubeServer

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SETTINGS = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")
STORED_KINDS = ("workloads.kueue.x-k8s.io", "rayclusters.ray.io", "namespaces")
RAYCLUSTERS = "rayclusters.ray.io"


class FixedClock:
    def now(self) -> datetime:
        return T0


@pytest.fixture(scope="module")
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        yield running


@pytest.fixture
def client(server: KubeServer) -> Iterator[KubeClient]:
    for kind in STORED_KINDS:
        for obj in server.store.list(kind):
            meta = obj["metadata"]
            server.store.delete(kind, name=meta["name"], namespace=meta.get("namespace"))
    server.requests.clear()
    server.faults.clear()
    client = KubeClient(api_client_for(server.configuration()), timeout=timedelta(seconds=5))
    yield client
    client.close()
    assert server.errors == []


@pytest.fixture
def cluster(client: KubeClient) -> KueueCluster:
    return KueueCluster(client=client, settings=SETTINGS)


@pytest.fixture
def actuator(client: KubeClient, cluster: KueueCluster) -> KueueActuator:
    return KueueActuator(client=client, workloads=cluster.workload_resource, clock=FixedClock())


def namespace(server: KubeServer, name: str, **annotations: str) -> None:
    meta = {"name": name, "labels": {"team": "vision"}, "annotations": annotations}
    server.store.put({"apiVersion": "v1", "kind": "Namespace", "metadata": meta})


def admitted_raycluster(server: KubeServer, name: str = "rc") -> dict[str, Any]:
    rc = make_raycluster("team-a", name).gpu_worker(replicas=1, gpus=1).build()
    server.store.put(rc)
    server.store.put(make_workload_for(rc).queue("user-queue").admitted(at=T0).build())
    return rc


def read_one(cluster: KueueCluster) -> tuple[WorkloadInfo, WorkloadInfo]:
    (listed,) = cluster.list_workloads()
    fresh = cluster.get_workload(listed.ref)
    assert fresh is not None
    return listed, fresh


def test_a_workload_carries_its_namespaces_annotations_from_the_namespace_read(
    server: KubeServer, cluster: KueueCluster
) -> None:
    namespace(server, "team-a", **{keys.NOTIFY: "team-a-slack,oncall"})
    admitted_raycluster(server)

    for info in read_one(cluster):
        assert info.namespace_annotations == {keys.NOTIFY: "team-a-slack,oncall"}
        assert info.namespace_labels == {"team": "vision"}
    namespace_reads = [
        r.path for r in server.requests.all() if r.path.startswith("/api/v1/namespaces")
    ]
    # one list for the cycle, one get for the fresh read: none per Workload
    assert [p for p in namespace_reads if not p.endswith(("/pods", "/events", "/configmaps"))] == [
        "/api/v1/namespaces",
        "/api/v1/namespaces/team-a",
    ]


def test_of_a_namespaces_annotations_only_those_the_service_reads_are_kept(
    server: KubeServer, cluster: KueueCluster
) -> None:
    applied = "kubectl.kubernetes.io/last-applied-configuration"
    namespace(server, "team-a", **{keys.NOTIFY: "oncall", applied: "{" + "x" * 10_000 + "}"})
    admitted_raycluster(server)

    for info in read_one(cluster):
        assert info.namespace_annotations == {keys.NOTIFY: "oncall"}


def test_a_namespace_missing_from_the_list_has_no_annotations(
    server: KubeServer, cluster: KueueCluster
) -> None:
    admitted_raycluster(server)

    listed, _ = read_one(cluster)

    assert listed.namespace_annotations == {}


def test_namespace_annotations_are_none_when_namespaces_are_forbidden(
    server: KubeServer, cluster: KueueCluster
) -> None:
    namespace(server, "team-a", **{keys.NOTIFY: "oncall"})
    ownerless = make_workload("team-a", "w").pod_set("main").queue("user-queue")
    server.store.put(ownerless.admitted(at=T0).build())
    # Kueue's Configuration ConfigMap is read under the same prefix: namespaces only fail.
    server.faults.fail_next(
        "GET", "/api/v1/namespaces", status=403, times=2, when=lambda r: r.reads_namespaces
    )

    for info in read_one(cluster):
        assert info.namespace_annotations is None


def test_deleting_the_owner_is_one_delete_with_its_uid_as_precondition_in_the_background(
    server: KubeServer, cluster: KueueCluster, actuator: KueueActuator
) -> None:
    rc = admitted_raycluster(server)
    (workload,) = cluster.list_workloads()
    server.requests.clear()

    actuator.delete_owner(workload)

    (request,) = server.requests.writes()
    assert (request.method, request.path) == (
        "DELETE",
        "/apis/ray.io/v1/namespaces/team-a/rayclusters/rc",
    )
    assert request.body == {
        "propagationPolicy": "Background",
        "preconditions": {"uid": rc["metadata"]["uid"]},
    }
    assert server.store.list(RAYCLUSTERS) == []


def test_an_owner_re_created_under_the_same_name_is_not_deleted(
    server: KubeServer, cluster: KueueCluster, actuator: KueueActuator
) -> None:
    admitted_raycluster(server)
    (workload,) = cluster.list_workloads()
    server.store.delete(RAYCLUSTERS, name="rc", namespace="team-a")
    server.store.put(make_raycluster("team-a", "rc").uid("re-created").build())

    with pytest.raises(Conflict):
        actuator.delete_owner(workload)

    (kept,) = server.store.list(RAYCLUSTERS)
    assert kept["metadata"]["uid"] == "re-created"


def test_deleting_an_owner_already_gone_is_not_found(
    server: KubeServer, cluster: KueueCluster, actuator: KueueActuator
) -> None:
    admitted_raycluster(server)
    (workload,) = cluster.list_workloads()
    server.store.delete(RAYCLUSTERS, name="rc", namespace="team-a")

    with pytest.raises(NotFound):
        actuator.delete_owner(workload)


def test_only_rayclusters_may_be_deleted(server: KubeServer, actuator: KueueActuator) -> None:
    """The client refuses a delete of any other owner kind before sending it (RBAC grants
    `delete` on RayClusters only)."""
    job = OwnerRef("batch/v1", "Job", "x", uid="job-uid")
    job_owned = replace(a_workload("team-a", "job-x").build(), owner=job)

    with pytest.raises(Forbidden):
        actuator.delete_owner(job_owned)
    assert server.requests.writes() == []
