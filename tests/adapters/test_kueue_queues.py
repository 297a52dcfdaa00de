"""KueueQueues (the PendingWork port) and the WorkloadInfo fields read with each Workload,
against the in-process test API server over HTTP with the official client."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.kueue.queues import KueueQueues
from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.queues.facts import FlavorQuotas, ResourceGroup, ResourceQuota
from autoscaler.settings.tree import ClusterSettings
from tests.support.builders import (
    GPU,
    KUEUE_V1BETA1,
    flavor_quota,
    make_cluster_queue,
    make_cohort,
    make_local_queue,
    make_resource_flavor,
    make_workload,
    resource_group,
)
from tests.support.crd_validation import assert_valid
from tests.support.kube_server import KubeServer

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SETTINGS = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")
STORED_KINDS = (
    "workloads.kueue.x-k8s.io",
    "clusterqueues.kueue.x-k8s.io",
    "localqueues.kueue.x-k8s.io",
    "resourceflavors.kueue.x-k8s.io",
    "cohorts.kueue.x-k8s.io",
    "namespaces",
)
VISIBILITY = "/apis/visibility.kueue.x-k8s.io"
GPUS_8 = {"cpu": {"nominalQuota": "64"}, GPU: {"nominalQuota": "8"}}


@pytest.fixture(scope="module")
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        yield running


@pytest.fixture
def kube(server: KubeServer) -> Iterator[KubeServer]:
    """The server emptied of the kinds these tests write; no visibility API unless served."""
    for kind in STORED_KINDS:
        for obj in server.store.list(kind):
            meta = obj["metadata"]
            server.store.delete(kind, name=meta["name"], namespace=meta.get("namespace"))
    server.requests.clear()
    server.faults.clear()
    server._backend.routes.clear()
    yield server
    assert server.errors == []


@pytest.fixture
def cluster(kube: KubeServer) -> KueueCluster:
    client = KubeClient(api_client_for(kube.configuration()), timeout=timedelta(seconds=5))
    return KueueCluster(client=client, settings=SETTINGS)


def queues_over(kube: KubeServer, cluster: KueueCluster, logger: logging.Logger) -> KueueQueues:
    client = KubeClient(api_client_for(kube.configuration()), timeout=timedelta(seconds=5))
    return KueueQueues(client=client, objects=cluster, logger=logger)


@pytest.fixture
def queues(kube: KubeServer, cluster: KueueCluster) -> KueueQueues:
    return queues_over(kube, cluster, logging.getLogger("test.queues"))


def a_queue(kube: KubeServer, name: str = "cq", *, namespace: str = "team-a") -> None:
    """A ResourceFlavor, a ClusterQueue with 8 GPUs of it, and a LocalQueue in `namespace`."""
    kube.store.put(make_resource_flavor("default-flavor").build())
    kube.store.put(make_cluster_queue(name).quota(gpus=8).build())
    kube.store.put(make_local_queue(namespace, "user-queue").cluster_queue(name).build())


def waiting(namespace: str, name: str, *, gpus: int = 1, count: int = 1, at: datetime = T0) -> Any:
    builder = make_workload(namespace, name).pod_set("main", count=count, gpus=gpus)
    obj = builder.queue("user-queue").build()
    obj["metadata"]["creationTimestamp"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return obj


def serve_visibility(kube: KubeServer, items: dict[str, list[tuple[str, str]]]) -> None:
    """Kueue's visibility API at v1beta2: its discovery and each queue's pending Workloads."""
    kube.answer_get(
        VISIBILITY,
        lambda _: (200, {"kind": "APIGroup", "versions": [{"version": "v1beta2"}]}),
    )
    for queue, keys in items.items():
        summary = {
            "kind": "PendingWorkloadsSummary",
            "items": [
                {
                    "metadata": {"namespace": ns, "name": name},
                    "priority": 0,
                    "localQueueName": "user-queue",
                    "positionInClusterQueue": position,
                    "positionInLocalQueue": position,
                }
                for position, (ns, name) in reversed(list(enumerate(keys)))
            ],
        }
        path = f"{VISIBILITY}/v1beta2/clusterqueues/{queue}/pendingworkloads"
        kube.answer_get(path, lambda _, s=summary: (200, s))


# Quotas and usage.


def test_quotas_keep_kueues_flavor_order_with_their_limits(
    kube: KubeServer, queues: KueueQueues
) -> None:
    limits = {"nominalQuota": "4", "borrowingLimit": "2", "lendingLimit": "1"}
    cq = (
        make_cluster_queue("cq")
        .groups(
            resource_group(
                ["cpu", GPU],
                flavor_quota("a100", {"cpu": {"nominalQuota": "500m"}, GPU: limits}),
                flavor_quota("t4", {"cpu": {"nominalQuota": "2"}, GPU: {"nominalQuota": "8"}}),
            ),
            resource_group(["memory"], flavor_quota("any", {"memory": {"nominalQuota": "1Gi"}})),
        )
        .cohort("shared")
        .build()
    )
    assert_valid(cq)
    kube.store.put(cq)
    for flavor in ("a100", "t4", "any"):
        kube.store.put(make_resource_flavor(flavor).build())

    quota = queues.read_queues().queues["cq"]

    assert quota.cohort == "shared"
    assert quota.groups == (
        ResourceGroup(
            covered=("cpu", GPU),
            flavors=(
                FlavorQuotas("a100", {"cpu": ResourceQuota(500), GPU: ResourceQuota(4, 2, 1)}),
                FlavorQuotas("t4", {"cpu": ResourceQuota(2000), GPU: ResourceQuota(8)}),
            ),
        ),
        ResourceGroup(
            covered=("memory",), flavors=(FlavorQuotas("any", {"memory": ResourceQuota(2**30)}),)
        ),
    )
    assert quota.unmodelled == ()


def test_the_v1beta1_cohort_spelling_is_read_too(kube: KubeServer, queues: KueueQueues) -> None:
    cq = make_cluster_queue("old").cohort("shared", api_version=KUEUE_V1BETA1)
    obj = cq.build(api_version=KUEUE_V1BETA1)
    assert_valid(obj)
    kube.store.put(obj)

    assert queues.read_queues().queues["old"].cohort == "shared"


def test_usage_is_the_reserved_quota_by_flavor_and_resource(
    kube: KubeServer, queues: KueueQueues
) -> None:
    kube.store.put(
        make_cluster_queue("cq").reserved("default-flavor", {"cpu": "1500m", GPU: "3"}).build()
    )

    usage = queues.read_queues().queues["cq"].usage

    assert usage == {("default-flavor", "cpu"): 1500, ("default-flavor", GPU): 3}


# Unmodelled admission.


def tas_flavor(kube: KubeServer) -> None:
    flavor = make_resource_flavor("default-flavor").build()
    flavor["spec"] = {"nodeLabels": {"pool": "gpu"}, "topologyName": "default"}
    kube.store.put(flavor)


def strict_fifo(kube: KubeServer) -> None:
    queue = make_cluster_queue("cq").build()
    queue["spec"]["queueingStrategy"] = "StrictFIFO"
    kube.store.put(queue)


def hierarchy(kube: KubeServer) -> None:
    child = make_cohort("shared").build()
    child["spec"]["parentName"] = "org"
    kube.store.put(child)


UNMODELLED = [
    pytest.param(
        lambda k: k.store.put(make_cluster_queue("cq").admission_checks("prov").build()),
        "admission checks: prov",
        id="admission-checks",
    ),
    pytest.param(
        lambda k: (
            k.store.put(make_cluster_queue("cq").cohort("shared").build()),
            hierarchy(k),
        ),
        "hierarchical cohorts: shared has the parent org",
        id="hierarchical-cohort",
    ),
    pytest.param(
        lambda k: (k.store.put(make_cluster_queue("cq").build()), tas_flavor(k)),
        "topology-aware scheduling: flavor default-flavor",
        id="topology-aware-flavor",
    ),
    pytest.param(
        strict_fifo,
        "StrictFIFO queueing: a head that cannot fit blocks the waiters behind it",
        id="strict-fifo-queueing",
    ),
]


@pytest.mark.parametrize(("arrange", "reason"), UNMODELLED)
def test_a_queue_whose_admission_cannot_be_modelled_says_why(
    kube: KubeServer, queues: KueueQueues, arrange: Callable[[KubeServer], Any], reason: str
) -> None:
    arrange(kube)

    assert queues.read_queues().queues["cq"].unmodelled == (reason,)


def test_a_cohort_that_is_only_a_name_is_modelled(kube: KubeServer, queues: KueueQueues) -> None:
    kube.store.put(make_cluster_queue("cq").cohort("shared").build())

    assert queues.read_queues().queues["cq"].unmodelled == ()


# Fair sharing: modelled, no longer a reason to give up on the queue.


def fair_queue(kube: KubeServer, name: str, *, weight: str | None, status: bool) -> None:
    queue = make_cluster_queue(name).cohort("shared")
    if weight is not None:
        queue = queue.fair_sharing(weight)
    obj = queue.build()
    if status:  # Kueue writes it on every ClusterQueue when fair sharing is on, only then
        obj["status"] = {"fairSharing": {"weightedShare": 0}}
    kube.store.put(obj)


def test_fair_sharing_is_on_when_kueue_reports_it_and_weights_are_read(
    kube: KubeServer, queues: KueueQueues
) -> None:
    fair_queue(kube, "cq", weight="0.5", status=False)
    fair_queue(kube, "other", weight=None, status=True)

    read = queues.read_queues().queues

    assert read["cq"].unmodelled == ()
    assert (read["cq"].fair_sharing, read["cq"].fair_weight) == (True, 0.5)
    assert (read["other"].fair_sharing, read["other"].fair_weight) == (True, 1.0)


def test_a_weight_without_kueue_reporting_fair_sharing_orders_nothing(
    kube: KubeServer, queues: KueueQueues
) -> None:
    fair_queue(kube, "cq", weight="0", status=False)

    queue = queues.read_queues().queues["cq"]

    assert (queue.fair_sharing, queue.fair_weight, queue.unmodelled) == (False, 0.0, ())


def test_what_keeps_kueues_order_unknown_is_said_for_that_queue_only(
    kube: KubeServer, queues: KueueQueues
) -> None:
    fair_queue(kube, "cq", weight="heavy", status=True)
    afs = make_cluster_queue("afs").cohort("shared").build()
    afs["spec"]["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
    kube.store.put(afs)

    read = queues.read_queues().queues

    assert read["cq"].order_unknown == (
        "its fair-sharing weight 'heavy' is not a quantity Kueue reads",
    )
    assert read["afs"].order_unknown == (
        "admission fair sharing orders its waiters by their LocalQueues' usage",
    )
    assert read["cq"].unmodelled == read["afs"].unmodelled == ()


# Waiters.


def test_pending_workloads_wait_with_their_requests(kube: KubeServer, queues: KueueQueues) -> None:
    a_queue(kube)
    kube.store.put(waiting("team-a", "big", gpus=2, count=3))
    kube.store.put(
        make_workload("team-a", "running")
        .pod_set("m", gpus=1)
        .queue("user-queue")
        .admitted(at=T0)
        .build()
    )
    kube.store.put(
        waiting("team-a", "stopped")
        | {"spec": {**waiting("team-a", "stopped")["spec"], "active": False}}
    )

    facts = queues.read_queues()

    (waiter,) = facts.waiters
    assert waiter.ref == WorkloadRef("team-a", "big")
    assert (waiter.local_queue, waiter.cluster_queue) == ("user-queue", "cq")
    assert waiter.requests == {"cpu": 3000, GPU: 6}
    assert waiter.created_at == T0
    assert facts.failure is None


def test_kueues_recorded_requests_win_over_the_pod_sets(
    kube: KubeServer, queues: KueueQueues
) -> None:
    a_queue(kube)
    obj = waiting("team-a", "limited", gpus=1)
    obj["status"] = {"resourceRequests": [{"name": "main", "resources": {GPU: "1", "cpu": "250m"}}]}
    kube.store.put(obj)

    (waiter,) = queues.read_queues().waiters

    assert waiter.requests == {GPU: 1, "cpu": 250}


def test_a_pod_is_sized_with_its_init_containers_and_sidecars(
    kube: KubeServer, queues: KueueQueues
) -> None:
    def box(name: str, cpu: str, **extra: str) -> dict[str, Any]:
        return {"name": name, "image": "x", "resources": {"requests": {"cpu": cpu}}, **extra}

    template = {
        "spec": {
            "initContainers": [box("sidecar", "1", restartPolicy="Always"), box("setup", "4")],
            "containers": [box("main", "2")],
        }
    }
    a_queue(kube)
    kube.store.put(
        make_workload("team-a", "w").pod_set("main", template=template).queue("user-queue").build()
    )

    (waiter,) = queues.read_queues().waiters

    assert waiter.requests == {"cpu": 5000}  # the setup step beside the sidecar: 1 + 4


def test_visibility_orders_the_waiters_when_served(kube: KubeServer, queues: KueueQueues) -> None:
    a_queue(kube)
    kube.store.put(waiting("team-a", "first", at=T0))
    kube.store.put(waiting("team-a", "second", at=T0 - timedelta(hours=1)))
    serve_visibility(kube, {"cq": [("team-a", "first"), ("team-a", "second")]})

    facts = queues.read_queues()

    assert [w.ref.name for w in facts.waiters] == ["first", "second"]
    assert (facts.source, facts.notes) == ("visibility", ())


@pytest.mark.parametrize(
    ("status", "why"),
    [
        pytest.param(404, "is not served", id="missing"),
        pytest.param(403, "is forbidden", id="forbidden"),
    ],
)
def test_without_visibility_the_workloads_say_who_waits_with_one_warning(
    kube: KubeServer,
    cluster: KueueCluster,
    caplog: pytest.LogCaptureFixture,
    status: int,
    why: str,
) -> None:
    a_queue(kube)
    kube.store.put(waiting("team-a", "newer", at=T0))
    kube.store.put(waiting("team-a", "older", at=T0 - timedelta(hours=1)))
    if status == 403:
        serve_visibility(kube, {"cq": []})
        kube.faults.fail_next("GET", f"{VISIBILITY}/v1beta2/clusterqueues", status=403, times=2)
    queues = queues_over(kube, cluster, logging.getLogger("test.fallback"))

    with caplog.at_level(logging.WARNING, logger="test.fallback"):
        first, second = queues.read_queues(), queues.read_queues()

    assert [w.ref.name for w in first.waiters] == ["older", "newer"]
    assert first.source == second.source == "workloads"
    assert len(first.notes) == 1 and why in first.notes[0] and second.notes == first.notes
    assert len(caplog.records) == 1


def test_a_failed_read_of_the_queues_is_a_failure_never_nobody_waits(
    kube: KubeServer, queues: KueueQueues
) -> None:
    a_queue(kube)
    kube.store.put(waiting("team-a", "w"))
    kube.faults.fail_next("GET", "/apis/kueue.x-k8s.io/v1beta2/localqueues", status=500)

    facts = queues.read_queues()

    assert facts.failure is not None and "localqueues" in facts.failure
    assert facts.waiters == ()


# WorkloadInfo's new fields.


def namespace(kube: KubeServer, name: str, **labels: str) -> None:
    kube.store.put(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
    )


def admitted_in_cohort(kube: KubeServer) -> None:
    kube.store.put(make_cluster_queue("cq").cohort("shared").build())
    namespace(kube, "team-a", team="vision")
    obj = make_workload("team-a", "w").pod_set("main", count=2, gpus=2).queue("user-queue")
    workload = obj.admitted(at=T0, cluster_queue="cq", flavor="a100").build()
    workload["spec"]["priority"] = 7
    kube.store.put(workload)


def test_a_workload_carries_its_cohort_usage_priority_and_namespace_labels(
    kube: KubeServer, cluster: KueueCluster
) -> None:
    admitted_in_cohort(kube)

    (listed,) = cluster.list_workloads()
    fresh = cluster.get_workload(listed.ref)

    for info in (listed, fresh):
        assert info is not None
        assert info.cohort == "shared"
        assert info.admitted_usage == {("a100", "cpu"): 2000, ("a100", GPU): 4}
        assert info.priority == 7
        assert info.namespace_labels == {"team": "vision"}


def test_namespace_labels_are_none_when_namespaces_are_forbidden(
    kube: KubeServer, cluster: KueueCluster
) -> None:
    admitted_in_cohort(kube)
    # Kueue's Configuration ConfigMap is read under the same prefix: namespaces only fail.
    kube.faults.fail_next(
        "GET", "/api/v1/namespaces", status=403, times=2, when=lambda r: r.reads_namespaces
    )

    (listed,) = cluster.list_workloads()
    fresh = cluster.get_workload(listed.ref)

    assert listed.namespace_labels is None
    assert fresh is not None and fresh.namespace_labels is None


def test_priority_is_zero_when_the_workload_has_none(
    kube: KubeServer, cluster: KueueCluster
) -> None:
    kube.store.put(make_workload("team-a", "w").pod_set("main").queue("user-queue").build())

    (info,) = cluster.list_workloads()

    assert (info.priority, info.cohort, info.admitted_usage) == (0, None, {})
