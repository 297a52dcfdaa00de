"""KueueCluster (the reader) and KueueActuator (the writes) against the in-process test API
server, over HTTP with the official client."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import kubernetes_validate
import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kueue.actuator import KueueActuator
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.kueue.resources import OWNER_RESOURCES
from autoscaler.adapters.state.store import RuntimeStateStore
from autoscaler.core.errors import ClusterUnavailable, ConfigError, Conflict, NotFound
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.audit.records import Annotated
from autoscaler.domain.models import OwnerRef, Pauses, WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.owners import KNOWN_OWNERS
from autoscaler.engine.acting import sequence as actuation
from autoscaler.settings.tree import ClusterSettings, OwnerKindSettings
from tests.support.builders import (
    KUEUE_V1BETA1,
    make_pod,
    make_raycluster,
    make_workload,
    make_workload_for,
)
from tests.support.crd_validation import assert_valid
from tests.support.kube_server import KubeServer

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NOW = T0 + timedelta(hours=2)
SETTINGS = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")
STORED_KINDS = (
    "workloads.kueue.x-k8s.io",
    "rayclusters.ray.io",
    "rayjobs.ray.io",
    "pods",
    "events",
    "configmaps",
)


class FixedClock:
    def now(self) -> datetime:
        return NOW


AUDIT = DeactivationAudit(
    at=NOW, reason="idle for 60m", peak=0.012, threshold=0.05, policy="threshold 5%, window 1:00:00"
)


def connect(server: KubeServer) -> KueueCluster:
    client = KubeClient(api_client_for(server.configuration()), timeout=timedelta(seconds=5))
    return KueueCluster(client=client, settings=SETTINGS)


@pytest.fixture
def actuator(server: KubeServer, cluster: KueueCluster) -> KueueActuator:
    client = KubeClient(api_client_for(server.configuration()), timeout=timedelta(seconds=5))
    return KueueActuator(client=client, workloads=cluster.workload_resource, clock=FixedClock())


@pytest.fixture(scope="module")
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        yield running


@pytest.fixture
def cluster(server: KubeServer) -> Iterator[KueueCluster]:
    """A fresh adapter over an empty cluster; the request log starts with this test."""
    for kind in STORED_KINDS:
        for obj in server.store.list(kind):
            meta = obj["metadata"]
            server.store.delete(kind, name=meta["name"], namespace=meta.get("namespace"))
    server.requests.clear()
    server.faults.clear()
    yield connect(server)
    assert server.errors == []


def gpu_raycluster(
    server: KubeServer, namespace: str, name: str, *, workers: int = 2, pods: int | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A RayCluster (CPU head, GPU workers), its admitted Workload and `pods` of its pods."""
    rc = make_raycluster(namespace, name).gpu_worker(replicas=workers, gpus=1).build()
    workload = make_workload_for(rc).queue("user-queue").admitted(at=T0).build()
    server.store.put(rc)
    server.store.put(workload)
    members = [make_pod(namespace, f"{name}-head").owned_by_raycluster(rc)] + [
        make_pod(namespace, f"{name}-worker-{i}").owned_by_raycluster(rc).gpus(1)
        for i in range(workers)
    ]
    for pod in members[: workers + 1 if pods is None else pods]:
        server.store.put(pod.running(since=T0).build())
    return rc, workload


def only(workloads: list[WorkloadInfo], name: str) -> WorkloadInfo:
    (found,) = [w for w in workloads if w.ref.name == name]
    return found


def test_the_newest_kueue_version_is_used(cluster: KueueCluster, server: KubeServer) -> None:
    gpu_raycluster(server, "team-a", "rc")
    cluster.list_workloads()
    paths = [r.path for r in server.requests.all()]
    assert paths[:2] == ["/apis/kueue.x-k8s.io", "/apis/kueue.x-k8s.io/v1beta2/workloads"]


def test_an_older_kueue_is_read_through_v1beta1() -> None:
    with KubeServer(disabled_versions={"kueue.x-k8s.io/v1beta2"}) as old:
        rc = make_raycluster("team-a", "rc").priority_class("dev").build()
        old.store.put(rc)
        old.store.put(make_workload_for(rc).admitted(at=T0).build(KUEUE_V1BETA1))

        (workload,) = connect(old).list_workloads()

        assert (workload.ref.namespace, workload.priority_class) == ("team-a", "dev")
        assert "/apis/kueue.x-k8s.io/v1beta1/workloads" in [r.path for r in old.requests.all()]


def test_a_cluster_without_kueue_is_unavailable() -> None:
    gone = {"kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1"}
    with (
        KubeServer(disabled_versions=gone) as bare,
        pytest.raises(ClusterUnavailable, match="Kueue is not installed"),
    ):
        connect(bare).list_workloads()


def test_a_workload_is_joined_with_its_raycluster_and_its_pods(
    cluster: KueueCluster, server: KubeServer
) -> None:
    rc = make_raycluster("team-a", "rc").gpu_worker(replicas=2, gpus=1).priority_class("dev")
    rc = rc.annotation(keys.EXEMPT, "true").build()
    server.store.put(rc)
    server.store.put(make_workload_for(rc).admitted(at=T0, cluster_queue="cq").build())
    server.store.put(
        make_pod("team-a", "rc-head").owned_by_raycluster(rc).running(since=T0).build()
    )
    for i in range(2):
        pod = make_pod("team-a", f"rc-worker-{i}").owned_by_raycluster(rc).gpus(1).node(f"n{i}")
        server.store.put(pod.running(since=T0).build())

    (workload,) = cluster.list_workloads()

    assert workload.owner == OwnerRef("ray.io/v1", "RayCluster", "rc", rc["metadata"]["uid"])
    assert (workload.admitted, workload.admitted_at, workload.cluster_queue) == (True, T0, "cq")
    assert workload.owner_annotations[keys.EXEMPT] == "true"
    assert workload.priority_class == "dev"
    assert sorted((p.name, p.gpus) for p in workload.pods) == [
        ("rc-head", 0),
        ("rc-worker-0", 1),
        ("rc-worker-1", 1),
    ]
    assert (workload.expected_pods, workload.gpus, len(workload.gpu_pods)) == (3, 2, 2)


def test_mig_slices_count_as_gpus(cluster: KueueCluster, server: KubeServer) -> None:
    rc, _ = gpu_raycluster(server, "team-a", "rc", workers=1, pods=1)
    pod = make_pod("team-a", "rc-worker-0").owned_by_raycluster(rc).running(since=T0).build()
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/mig-1g.10gb": "1"}}
    server.store.put(pod)

    (workload,) = cluster.list_workloads()

    assert [p.name for p in workload.gpu_pods] == ["rc-worker-0"]


def test_missing_pods_are_reported_as_fewer_than_expected(
    cluster: KueueCluster, server: KubeServer
) -> None:
    gpu_raycluster(server, "team-a", "rc", workers=2, pods=1)
    (workload,) = cluster.list_workloads()
    assert (len(workload.pods), workload.expected_pods) == (1, 3)


def test_pods_are_grouped_by_owner_and_namespace(cluster: KueueCluster, server: KubeServer) -> None:
    gpu_raycluster(server, "team-a", "rc", workers=1)
    gpu_raycluster(server, "team-a", "other", workers=2)
    gpu_raycluster(server, "team-b", "rc", workers=3)

    found = {
        (w.ref.namespace, w.owner.name if w.owner else ""): len(w.pods)
        for w in cluster.list_workloads()
    }

    assert found == {("team-a", "rc"): 2, ("team-a", "other"): 3, ("team-b", "rc"): 4}


def cycle_reads(server: KubeServer, cluster: KueueCluster) -> list[str]:
    server.requests.clear()
    cluster.list_workloads()
    return sorted(f"{r.path}?{r.query.get('labelSelector', '')}" for r in server.requests.all())


def test_a_cycle_lists_once_per_kind_whatever_the_number_of_workloads(
    cluster: KueueCluster, server: KubeServer
) -> None:
    gpu_raycluster(server, "team-a", "rc-0")
    job_owner = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "job", "uid": "job-uid"},
    }
    server.store.put(
        make_workload("team-c", "rayjob-job")
        .owned_by(job_owner)
        .pod_set("head")
        .admitted(at=T0)
        .build()
    )
    cluster.workload_resource()  # discovery happens once, before the first cycle
    few = cycle_reads(server, cluster)
    for i in range(1, 8):
        gpu_raycluster(server, f"team-{i % 3}", f"rc-{i}")

    many = cycle_reads(server, cluster)

    assert (
        many
        == few
        == [
            "/api/v1/events?",  # the node autoscaler's TriggeredScaleUp Events, by field
            "/api/v1/namespaces/kueue-system/configmaps?",  # Kueue's Configuration, by name
            "/api/v1/namespaces?",
            "/api/v1/pods?",  # one pod list for every kind with admitted Workloads
            "/apis/kueue.x-k8s.io/v1beta2/clusterqueues?",
            "/apis/kueue.x-k8s.io/v1beta2/localqueues?",  # a pending Workload's ClusterQueue
            "/apis/kueue.x-k8s.io/v1beta2/workloads?",
            "/apis/ray.io/v1/rayclusters?",
            "/apis/ray.io/v1/rayjobs?",
        ]
    )


def test_pending_workloads_need_no_pod_list(cluster: KueueCluster, server: KubeServer) -> None:
    rc = make_raycluster("team-a", "rc").build()
    server.store.put(rc)
    server.store.put(make_workload_for(rc).build())

    (workload,) = cluster.list_workloads()

    assert (workload.admitted, workload.pods) == (False, ())
    assert not [r for r in server.requests.all() if r.path == "/api/v1/pods"]


def test_a_malformed_workload_or_pod_is_skipped_not_fatal(
    cluster: KueueCluster, server: KubeServer
) -> None:
    gpu_raycluster(server, "team-a", "fine", workers=1)
    broken = make_workload("team-a", "broken").pod_set("w").build()
    broken["spec"]["podSets"][0]["count"] = "many"
    server.store.put(broken)
    bad_pod = make_pod("team-a", "fine-bad").owned_by_raycluster("fine").build()
    bad_pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "lots"}}
    server.store.put(bad_pod)

    (workload,) = cluster.list_workloads()

    assert (workload.ref.name.startswith("raycluster-fine"), len(workload.pods)) == (True, 2)


def test_a_replaced_owner_with_the_same_name_is_not_the_owner(
    cluster: KueueCluster, server: KubeServer
) -> None:
    rc, _ = gpu_raycluster(server, "team-a", "rc")
    namesake = make_raycluster("team-a", "rc").uid("another-uid").annotation(keys.EXEMPT, "true")
    server.store.put(namesake.build())

    (workload,) = cluster.list_workloads()

    assert workload.owner is not None and workload.owner.uid == rc["metadata"]["uid"]
    assert workload.owner_annotations == {}


def test_an_unknown_owner_kind_is_reported_without_reading_it(
    cluster: KueueCluster, server: KubeServer
) -> None:
    owner = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "js", "uid": "js-uid"},
    }
    server.store.put(
        make_workload("team-a", "widget-js").owned_by(owner).pod_set("w").admitted(at=T0).build()
    )

    (workload,) = cluster.list_workloads()

    assert workload.owner == OwnerRef("example.com/v1", "Widget", "js", "js-uid")
    assert workload.pods == ()
    # discovery, the workload list, and the ClusterQueues, LocalQueues, namespaces, scale-up
    # Events and Kueue's Configuration they are read with
    assert len(server.requests.all()) == 7


def test_a_fresh_read_gets_one_workload_its_owner_and_its_pods(
    cluster: KueueCluster, server: KubeServer
) -> None:
    _, obj = gpu_raycluster(server, "team-a", "rc")
    gpu_raycluster(server, "team-a", "other")
    ref = WorkloadRef("team-a", obj["metadata"]["name"])

    workload = cluster.get_workload(ref)

    assert workload is not None and len(workload.pods) == 3
    reads = [(r.path, r.query.get("labelSelector")) for r in server.requests.all()[1:]]
    assert reads == [
        (f"/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/{ref.name}", None),
        ("/apis/ray.io/v1/namespaces/team-a/rayclusters/rc", None),
        ("/api/v1/namespaces/team-a/pods", "ray.io/cluster=rc"),
        ("/api/v1/namespaces/team-a", None),  # its labels
        ("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cluster-queue", None),  # its cohort
        # no Events: none of its pods is unschedulable (tests/adapters/test_pod_starts.py)
    ]


def test_a_vanished_workload_reads_as_none(cluster: KueueCluster) -> None:
    assert cluster.get_workload(WorkloadRef("team-a", "gone")) is None


def test_deactivation_is_exactly_one_merge_patch_of_spec_active_with_the_audit_annotations(
    cluster: KueueCluster, actuator: KueueActuator, server: KubeServer
) -> None:
    _, obj = gpu_raycluster(server, "team-a", "rc")
    (workload,) = cluster.list_workloads()
    server.requests.clear()

    actuator.deactivate(workload, AUDIT)

    (patch,) = server.requests.writes()
    assert (
        patch.path
        == f"/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/{obj['metadata']['name']}"
    )
    assert (patch.content_type, patch.body) == (
        "application/merge-patch+json",
        {"metadata": {"annotations": AUDIT.annotations()}, "spec": {"active": False}},
    )
    stored = server.store.get(
        "workloads.kueue.x-k8s.io", name=workload.ref.name, namespace="team-a"
    )
    assert stored["spec"]["active"] is False
    assert (
        "suspend"
        not in server.store.get("rayclusters.ray.io", name="rc", namespace="team-a")["spec"]
    )


def test_the_act_sequence_writes_the_audit_on_the_workload_and_its_raycluster(
    cluster: KueueCluster, actuator: KueueActuator, server: KubeServer
) -> None:
    gpu_raycluster(server, "team-a", "rc")
    (workload,) = cluster.list_workloads()

    actuation.deactivate(
        actuator, workload, audit=AUDIT, message="idle", logger=logging.getLogger("test")
    )

    expected = {
        keys.DEACTIVATED_AT: "2026-03-01T14:00:00Z",
        keys.DEACTIVATED_REASON: "idle for 60m",
        keys.DEACTIVATED_PEAK: "0.012",
        keys.DEACTIVATED_THRESHOLD: "0.05",
        keys.DEACTIVATED_POLICY: "threshold 5%, window 1:00:00",
        # written on every stop, empty when there is none: an earlier stop's never lingers
        keys.DEACTIVATED_RULE: "",
        keys.DEACTIVATED_BY: "",
        keys.DEACTIVATED_COVERAGE: "unknown",
        keys.DEACTIVATED_IDLE_SINCE: "",
    }
    written = [
        server.store.get("workloads.kueue.x-k8s.io", name=workload.ref.name, namespace="team-a"),
        server.store.get("rayclusters.ray.io", name="rc", namespace="team-a"),
    ]
    for obj in written:
        assert obj["metadata"]["annotations"] == expected
        assert_valid(obj)
    assert written[0]["spec"]["active"] is False
    writes = [(r.method, r.content_type) for r in server.requests.writes()]
    assert (
        writes
        == [("PATCH", "application/merge-patch+json")] * 2 + [("POST", "application/json")] * 2
    )


def test_events_on_the_workload_and_its_owner_say_how_to_get_it_back(
    cluster: KueueCluster, actuator: KueueActuator, server: KubeServer
) -> None:
    rc, obj = gpu_raycluster(server, "team-a", "rc")
    (workload,) = cluster.list_workloads()

    actuator.announce(workload, reason="IdleGPUDeactivated", message="idle; kubectl patch ...")

    events = server.store.list("events", namespace="team-a")
    assert sorted((e["involvedObject"]["kind"], e["involvedObject"]["uid"]) for e in events) == [
        ("RayCluster", rc["metadata"]["uid"]),
        ("Workload", obj["metadata"]["uid"]),
    ]
    for event in events:
        assert (event["reason"], event["message"]) == (
            "IdleGPUDeactivated",
            "idle; kubectl patch ...",
        )
        assert event["involvedObject"]["namespace"] == "team-a"
        kubernetes_validate.validate(event, kubernetes_validate.latest_version(), strict=True)


def test_patching_a_vanished_workload_is_not_found(
    cluster: KueueCluster, actuator: KueueActuator, server: KubeServer
) -> None:
    gpu_raycluster(server, "team-a", "rc")
    (workload,) = cluster.list_workloads()
    server.store.delete("workloads.kueue.x-k8s.io", name=workload.ref.name, namespace="team-a")
    with pytest.raises(NotFound):
        actuator.deactivate(workload, AUDIT)


def test_a_conflicting_patch_is_a_conflict(
    cluster: KueueCluster, actuator: KueueActuator, server: KubeServer
) -> None:
    gpu_raycluster(server, "team-a", "rc")
    (workload,) = cluster.list_workloads()
    server.faults.fail_next("PATCH", "/apis/kueue.x-k8s.io", status=409)
    with pytest.raises(Conflict):
        actuator.deactivate(workload, AUDIT)


def test_no_runtime_state_means_no_pauses(cluster: KueueCluster) -> None:
    assert cluster.read_pauses() == Pauses()


def test_pauses_written_are_read_back(cluster: KueueCluster, server: KubeServer) -> None:
    """Written as the API writes them: a read-modify-write of the runtime-state ConfigMap."""
    client = KubeClient(api_client_for(server.configuration()), timeout=timedelta(seconds=5))
    state = RuntimeStateStore(
        client=client,
        name=SETTINGS.runtime_state_config_map,
        namespace=SETTINGS.service_namespace,
        audit_limit=10,
        attempts=1,
        logger=logging.getLogger("test"),
    )
    for pauses in (
        Pauses(namespaces=frozenset({"team-a"})),
        Pauses(everything=True, namespaces=frozenset({"team-b"})),
    ):
        state.change(lambda current, wanted=pauses: replace(current, pauses=wanted))

    assert cluster.read_pauses() == Pauses(everything=True, namespaces=frozenset({"team-b"}))
    methods = [r.method for r in server.requests.writes()]
    assert methods == ["POST", "PUT"]
    assert server.requests.writes()[1].body["metadata"]["resourceVersion"]


def test_garbled_pauses_pause_everything(cluster: KueueCluster, server: KubeServer) -> None:
    server.store.put(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "iga-state", "namespace": "iga"},
            "data": {"pauses": "yes please"},
        }
    )
    assert cluster.read_pauses() == Pauses(everything=True)


def test_an_unsupported_pod_selector_is_a_config_error(server: KubeServer) -> None:
    owner_kinds = {"RayCluster": OwnerKindSettings(enabled=True, pod_selector="x in ({name})")}
    client = KubeClient(api_client_for(server.configuration()), timeout=timedelta(seconds=5))
    with pytest.raises(ConfigError, match=r"cluster\.ownerKinds\.RayCluster\.podSelector"):
        KueueCluster(client=client, settings=ClusterSettings(owner_kinds=owner_kinds))
    client.close()


def test_running_gpu_pods_are_listed_whoever_owns_them(
    cluster: KueueCluster, server: KubeServer
) -> None:
    gpu_raycluster(server, "team-a", "rc", workers=1)
    server.store.put(make_pod("team-b", "notebook").gpus(2).running(since=T0).build())
    server.store.put(make_pod("team-b", "waiting").gpus(1).build())  # Pending
    server.store.put(make_pod("team-b", "cpu-only").running(since=T0).build())
    server.requests.clear()

    found = {
        (record.namespace, record.pod.name, record.pod.gpus) for record in cluster.list_gpu_pods()
    }

    assert found == {("team-a", "rc-worker-0", 1), ("team-b", "notebook", 2)}
    (request,) = server.requests.all()
    assert (request.path, request.query) == (
        "/api/v1/pods",
        {"fieldSelector": "status.phase=Running"},
    )


def test_every_owner_resource_is_where_the_domain_says_the_owner_lives() -> None:
    """The REST API asks for `patch` where the domain says an owner lives; the adapter must
    write to that same place."""
    assert set(OWNER_RESOURCES) == set(KNOWN_OWNERS)
    for kind, resource in OWNER_RESOURCES.items():
        assert (resource.group, resource.plural) == (
            KNOWN_OWNERS[kind].group,
            KNOWN_OWNERS[kind].plural,
        )


def test_an_owner_of_a_kind_not_enabled_is_never_patched_its_workload_is_annotated(
    cluster: KueueCluster, server: KubeServer
) -> None:
    """The chart grants `patch` only on enabled owner kinds: an exemption on a RayJob's
    Workload, with only RayClusters enabled, must land on the Workload."""
    job_owner = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "job", "uid": "job-uid"},
    }
    server.store.put(
        make_workload("team-d", "rayjob-exempted").owned_by(job_owner).pod_set("head").build()
    )
    (workload,) = (w for w in cluster.list_workloads() if w.ref.name == "rayjob-exempted")
    client = KubeClient(api_client_for(server.configuration()), timeout=timedelta(seconds=5))
    only_rayclusters = KueueActuator(
        client=client,
        workloads=cluster.workload_resource,
        clock=FixedClock(),
        owner_kinds={"RayCluster"},
    )
    server.requests.clear()

    landed = only_rayclusters.annotate_owner(workload, {keys.EXEMPT: "true"})

    assert landed == Annotated("Workload", "team-d", "rayjob-exempted")
    assert [r.path for r in server.requests.writes()] == [
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-d/workloads/rayjob-exempted"
    ]
