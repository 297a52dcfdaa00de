"""The test Kubernetes API server, driven by the official client over real HTTP."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.support.builders import (
    KUEUE_V1BETA1,
    make_cluster_queue,
    make_local_queue,
    make_pod,
    make_raycluster,
    make_resource_flavor,
    make_workload,
    make_workload_for,
    make_workload_priority_class,
)
from tests.support.crd_validation import CrdValidationError, assert_valid, load_crd_schemas
from tests.support.kube_server import Change, KubeServer
from tests.support.kube_server.http import HttpServer

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
KUEUE = "kueue.x-k8s.io"


@pytest.fixture
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        yield running
    assert running.errors == []


@pytest.fixture
def api(server: KubeServer) -> Iterator[client.ApiClient]:
    with client.ApiClient(server.configuration()) as api_client:
        yield api_client


def _status(error: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(error.body)
    return body


def _pod(name: str, **labels: str) -> dict[str, Any]:
    pod = make_pod("ns", name).build()
    pod["metadata"]["labels"] = labels
    return pod


def _raycluster_workload() -> dict[str, Any]:
    rc = make_raycluster("ns", "rc").head(gpus=1).gpu_worker(replicas=1, gpus=1).build()
    return make_workload_for(rc).queue("user-queue").admitted(at=T0).build()


# -- CRUD and conflicts --------------------------------------------------------------------------


def test_pods_can_be_created_read_listed_replaced_and_deleted(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    created = core.create_namespaced_pod("ns", _pod("p1", app="a"))
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.metadata.resource_version == "1"
    created.metadata.labels["app"] = "b"
    replaced = core.replace_namespaced_pod("p1", "ns", created)
    assert replaced.metadata.labels == {"app": "b"}
    assert [p.metadata.name for p in core.list_namespaced_pod("ns").items] == ["p1"]
    core.delete_namespaced_pod("p1", "ns")
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("p1", "ns")
    assert missing.value.status == 404
    assert _status(missing.value)["reason"] == "NotFound"


def test_deleting_a_namespace_deletes_its_objects_and_leaves_the_rest(
    server: KubeServer,
) -> None:
    store = server.store
    for namespace in ("mine", "theirs"):
        store.put(make_pod(namespace, "p").build())
        store.put(make_raycluster(namespace, "rc").build())
    store.put(make_cluster_queue("cq").build())
    deleted: list[str] = []
    store.on_change(lambda change: deleted.append(change.type))

    assert store.delete_namespace("mine") == 2

    assert deleted == ["DELETED", "DELETED"]
    assert [p["metadata"]["namespace"] for p in store.list("pods")] == ["theirs"]
    assert [r["metadata"]["namespace"] for r in store.list("rayclusters.ray.io")] == ["theirs"]
    assert [q["metadata"]["name"] for q in store.list("clusterqueues.kueue.x-k8s.io")] == ["cq"]


def test_creating_an_existing_name_is_a_409_already_exists(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_pod("ns", _pod("p1"))
    with pytest.raises(ApiException) as duplicate:
        core.create_namespaced_pod("ns", _pod("p1"))
    assert (duplicate.value.status, _status(duplicate.value)["reason"]) == (409, "AlreadyExists")


def test_an_update_with_a_stale_resource_version_is_a_409_conflict(api: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(api)
    first = custom.create_namespaced_custom_object(
        KUEUE, "v1beta2", "ns", "workloads", _raycluster_workload()
    )
    custom.patch_namespaced_custom_object(
        KUEUE, "v1beta2", "ns", "workloads", first["metadata"]["name"], {"spec": {"active": False}}
    )
    with pytest.raises(ApiException) as stale:
        custom.replace_namespaced_custom_object(
            KUEUE, "v1beta2", "ns", "workloads", first["metadata"]["name"], first
        )
    assert (stale.value.status, _status(stale.value)["reason"]) == (409, "Conflict")


def test_creating_a_workload_drops_status_and_applies_crd_defaults(
    server: KubeServer, api: client.ApiClient
) -> None:
    workload = _raycluster_workload()
    del workload["spec"]["active"]
    created = client.CustomObjectsApi(api).create_namespaced_custom_object(
        KUEUE, "v1beta2", "ns", "workloads", workload
    )
    assert "status" not in created
    assert created["spec"]["active"] is True
    assert created["metadata"]["generation"] == 1


def test_a_write_that_breaks_the_crd_is_a_422_naming_the_field(api: client.ApiClient) -> None:
    workload = _raycluster_workload()
    workload["spec"]["activ"] = False
    with pytest.raises(ApiException) as rejected:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            KUEUE, "v1beta2", "ns", "workloads", workload
        )
    assert rejected.value.status == 422
    assert "spec.activ" in _status(rejected.value)["message"]


# -- patches -------------------------------------------------------------------------------------


def test_merge_patch_merges_objects_replaces_lists_and_deletes_nulls(
    server: KubeServer, api: client.ApiClient
) -> None:
    stored = server.store.put(_raycluster_workload())
    name = stored["metadata"]["name"]
    patch = {
        "metadata": {"labels": {"kueue.x-k8s.io/job-uid": None, "new": "x"}},
        "spec": {"active": False},
    }
    patched = client.CustomObjectsApi(api).patch_namespaced_custom_object(
        KUEUE, "v1beta2", "ns", "workloads", name, patch
    )
    assert patched["metadata"]["labels"] == {"new": "x"}
    assert patched["spec"]["active"] is False
    assert patched["spec"]["podSets"] == stored["spec"]["podSets"]
    assert patched["status"] == stored["status"]
    assert patched["metadata"]["generation"] == stored["metadata"]["generation"] + 1
    sent = server.requests.writes()[-1]
    assert (sent.method, sent.content_type, sent.body) == (
        "PATCH",
        "application/merge-patch+json",
        patch,
    )


def test_status_changes_only_through_the_status_subresource(
    server: KubeServer, api: client.ApiClient
) -> None:
    name = server.store.put(_raycluster_workload())["metadata"]["name"]
    custom = client.CustomObjectsApi(api)
    ignored = custom.patch_namespaced_custom_object(
        KUEUE, "v1beta2", "ns", "workloads", name, {"status": {"admission": None}}
    )
    assert "admission" in ignored["status"]
    cleared = custom.patch_namespaced_custom_object_status(
        KUEUE, "v1beta2", "ns", "workloads", name, {"status": {"admission": None}}
    )
    assert "admission" not in cleared["status"]
    assert cleared["metadata"]["generation"] == ignored["metadata"]["generation"]


def test_a_patch_that_changes_nothing_keeps_the_resource_version(
    server: KubeServer, api: client.ApiClient
) -> None:
    stored = server.store.put(_raycluster_workload())
    again = client.CustomObjectsApi(api).patch_namespaced_custom_object(
        KUEUE, "v1beta2", "ns", "workloads", stored["metadata"]["name"], {"spec": {"active": True}}
    )
    assert again["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]


def test_a_resource_version_in_a_patch_is_a_precondition(
    server: KubeServer, api: client.ApiClient
) -> None:
    name = server.store.put(_raycluster_workload())["metadata"]["name"]
    with pytest.raises(ApiException) as stale:
        client.CustomObjectsApi(api).patch_namespaced_custom_object(
            KUEUE,
            "v1beta2",
            "ns",
            "workloads",
            name,
            {"metadata": {"resourceVersion": "0"}, "spec": {"active": False}},
        )
    assert stale.value.status == 409


@pytest.mark.parametrize(
    ("content_type", "code"),
    [
        pytest.param("application/json-patch+json", 415, id="json-patch-unsupported"),
        pytest.param(None, 400, id="list-sent-as-merge-patch"),
    ],
)
def test_a_json_patch_is_refused_rather_than_misapplied(
    server: KubeServer, api: client.ApiClient, content_type: str | None, code: int
) -> None:
    name = server.store.put(_raycluster_workload())["metadata"]["name"]
    operations = [{"op": "replace", "path": "/spec/active", "value": False}]
    with pytest.raises(ApiException) as refused:
        client.CustomObjectsApi(api).patch_namespaced_custom_object(
            KUEUE, "v1beta2", "ns", "workloads", name, operations, _content_type=content_type
        )
    assert refused.value.status == code


def test_updating_a_custom_resource_without_a_resource_version_is_422(
    server: KubeServer, api: client.ApiClient
) -> None:
    stored = server.store.put(_raycluster_workload())
    del stored["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as rejected:
        client.CustomObjectsApi(api).replace_namespaced_custom_object(
            KUEUE, "v1beta2", "ns", "workloads", stored["metadata"]["name"], stored
        )
    assert rejected.value.status == 422
    assert "metadata.resourceVersion" in _status(rejected.value)["message"]


def test_generate_name_gets_a_random_suffix(api: client.ApiClient) -> None:
    pod = _pod("unused")
    pod["metadata"] = {"generateName": "rc-head-"}
    created = client.CoreV1Api(api).create_namespaced_pod("ns", pod)
    assert created.metadata.name.startswith("rc-head-")
    assert len(created.metadata.name) == len("rc-head-") + 5


# -- selectors and paging ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param("app=a", ["p1", "p2"], id="equality"),
        pytest.param("app!=a", ["p3", "p4"], id="not-equal-includes-unlabelled"),
        pytest.param("app in (a,b)", ["p1", "p2", "p3"], id="in"),
        pytest.param("app notin (a)", ["p3", "p4"], id="notin"),
        pytest.param("tier", ["p2"], id="exists"),
        pytest.param("!app", ["p4"], id="does-not-exist"),
        pytest.param("app=a,tier=gpu", ["p2"], id="all-requirements-hold"),
    ],
)
def test_label_selectors_match_like_the_api_server(
    server: KubeServer, api: client.ApiClient, selector: str, expected: list[str]
) -> None:
    for pod in (
        _pod("p1", app="a"),
        _pod("p2", app="a", tier="gpu"),
        _pod("p3", app="b"),
        _pod("p4"),
    ):
        server.store.put(pod)
    found = client.CoreV1Api(api).list_namespaced_pod("ns", label_selector=selector)
    assert [p.metadata.name for p in found.items] == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param("metadata.name=p1", ["p1"], id="name"),
        pytest.param("status.phase=Running", ["p2"], id="phase"),
        pytest.param("status.phase!=Running,metadata.namespace=ns", ["p1"], id="not-and-namespace"),
    ],
)
def test_field_selectors_filter_lists(
    server: KubeServer, api: client.ApiClient, selector: str, expected: list[str]
) -> None:
    server.store.put(make_pod("ns", "p1").build())
    server.store.put(make_pod("ns", "p2").running(since=T0).build())
    server.store.put(make_pod("other", "p3").build())
    found = client.CoreV1Api(api).list_pod_for_all_namespaces(field_selector=selector)
    assert [p.metadata.name for p in found.items] == expected


def test_lists_page_with_limit_and_continue(server: KubeServer, api: client.ApiClient) -> None:
    for name in ("p1", "p2", "p3"):
        server.store.put(_pod(name))
    core = client.CoreV1Api(api)
    first = core.list_namespaced_pod("ns", limit=2)
    rest = core.list_namespaced_pod("ns", limit=2, _continue=first.metadata._continue)
    assert [p.metadata.name for p in first.items + rest.items] == ["p1", "p2", "p3"]
    assert rest.metadata._continue is None


# -- watch ---------------------------------------------------------------------------------------


def _events(stream: Iterator[dict[str, Any]], count: int, w: watch.Watch) -> list[tuple[str, str]]:
    seen = []
    for event in stream:
        seen.append((event["type"], event["raw_object"]["metadata"].get("name", "")))
        if len(seen) == count:
            w.stop()
    return seen


def test_a_watch_starts_with_what_exists_then_streams_changes(
    server: KubeServer, api: client.ApiClient
) -> None:
    server.store.put(_pod("p1"))
    core = client.CoreV1Api(api)
    w = watch.Watch()
    stream = w.stream(core.list_namespaced_pod, "ns", timeout_seconds=5)
    assert next(stream)["type"] == "ADDED"
    core.patch_namespaced_pod("p1", "ns", {"metadata": {"labels": {"x": "y"}}})
    core.delete_namespaced_pod("p1", "ns")
    assert _events(stream, 2, w) == [("MODIFIED", "p1"), ("DELETED", "p1")]


def test_a_watch_resumes_after_a_resource_version_without_replaying_older_events(
    server: KubeServer, api: client.ApiClient
) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_pod("ns", _pod("p1"))
    listed = core.list_namespaced_pod("ns")
    core.create_namespaced_pod("ns", _pod("p2"))
    core.delete_namespaced_pod("p1", "ns")
    w = watch.Watch()
    stream = w.stream(
        core.list_namespaced_pod,
        "ns",
        timeout_seconds=5,
        resource_version=listed.metadata.resource_version,
    )
    assert _events(stream, 2, w) == [("ADDED", "p2"), ("DELETED", "p1")]


def test_resuming_from_a_version_older_than_the_history_is_410_gone() -> None:
    with KubeServer(history_limit=2) as small, client.ApiClient(small.configuration()) as api:
        core = client.CoreV1Api(api)
        for name in ("p1", "p2", "p3", "p4"):  # history keeps 3 and 4: event 2 is gone
            core.create_namespaced_pod("ns", _pod(name))
        with pytest.raises(ApiException) as expired:
            list(
                watch.Watch().stream(
                    core.list_namespaced_pod, "ns", timeout_seconds=5, resource_version="1"
                )
            )
    assert expired.value.status == 410


def test_after_compaction_resuming_from_an_older_version_is_410(
    server: KubeServer, api: client.ApiClient
) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_pod("ns", _pod("p1"))
    core.create_namespaced_pod("ns", _pod("p2"))
    server.store.compact()
    with pytest.raises(ApiException) as expired:
        list(
            watch.Watch().stream(
                core.list_namespaced_pod, "ns", timeout_seconds=5, resource_version="1"
            )
        )
    assert expired.value.status == 410


def test_a_forced_410_ends_the_next_watch_only(server: KubeServer, api: client.ApiClient) -> None:
    server.faults.expire_next_watch()
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as expired:
        list(watch.Watch().stream(core.list_namespaced_pod, "ns", timeout_seconds=5))
    assert expired.value.status == 410
    server.store.put(_pod("p1"))
    w = watch.Watch()
    assert _events(w.stream(core.list_namespaced_pod, "ns", timeout_seconds=5), 1, w) == [
        ("ADDED", "p1")
    ]


def test_an_object_leaving_the_selector_is_reported_deleted(
    server: KubeServer, api: client.ApiClient
) -> None:
    server.store.put(_pod("p1", app="a"))
    core = client.CoreV1Api(api)
    w = watch.Watch()
    stream = w.stream(core.list_namespaced_pod, "ns", label_selector="app=a", timeout_seconds=5)
    assert next(stream)["type"] == "ADDED"
    core.patch_namespaced_pod("p1", "ns", {"metadata": {"labels": {"app": "b"}}})
    assert _events(stream, 1, w) == [("DELETED", "p1")]


def test_bookmarks_carry_the_latest_resource_version() -> None:
    with (
        KubeServer(bookmark_interval_s=0.05) as ticking,
        client.ApiClient(ticking.configuration()) as api,
    ):
        ticking.store.put(_pod("p1"))
        w = watch.Watch()
        stream = w.stream(
            client.CoreV1Api(api).list_namespaced_pod,
            "ns",
            timeout_seconds=5,
            allow_watch_bookmarks=True,
            resource_version="1",
        )
        event = next(stream)
        w.stop()
    assert event["type"] == "BOOKMARK"
    assert event["raw_object"]["metadata"]["resourceVersion"] == "1"


def test_dropping_watches_ends_open_streams(server: KubeServer, api: client.ApiClient) -> None:
    server.store.put(_pod("p1"))
    stream = watch.Watch().stream(
        client.CoreV1Api(api).list_namespaced_pod, "ns", timeout_seconds=30
    )
    assert next(stream)["type"] == "ADDED"
    server.drop_watches()
    assert list(stream) == []


# -- faults, log, auth ---------------------------------------------------------------------------


def test_an_injected_429_carries_retry_after_and_fails_only_once(
    server: KubeServer, api: client.ApiClient
) -> None:
    name = server.store.put(_raycluster_workload())["metadata"]["name"]
    server.faults.fail_next("PATCH", f"/apis/{KUEUE}/", status=429, retry_after=3)
    custom = client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as throttled:
        custom.patch_namespaced_custom_object(
            KUEUE, "v1beta2", "ns", "workloads", name, {"spec": {"active": False}}
        )
    assert throttled.value.status == 429
    assert throttled.value.headers["Retry-After"] == "3"
    assert _status(throttled.value)["details"]["retryAfterSeconds"] == 3
    custom.patch_namespaced_custom_object(
        KUEUE, "v1beta2", "ns", "workloads", name, {"spec": {"active": False}}
    )
    assert [r.method for r in server.requests.writes()] == ["PATCH", "PATCH"]


@pytest.mark.parametrize(
    "code", [pytest.param(409, id="conflict"), pytest.param(500, id="internal-error")]
)
def test_injected_failures_answer_with_a_status_of_that_code(
    server: KubeServer, api: client.ApiClient, code: int
) -> None:
    server.faults.fail_next("GET", "/api/v1/namespaces/ns/pods", status=code, times=2)
    core = client.CoreV1Api(api)
    for _ in range(2):
        with pytest.raises(ApiException) as failed:
            core.list_namespaced_pod("ns")
        assert (failed.value.status, _status(failed.value)["code"]) == (code, code)
    assert core.list_namespaced_pod("ns").items == []


def test_the_request_log_records_the_bearer_token(
    server: KubeServer, api: client.ApiClient
) -> None:
    client.CoreV1Api(api).list_namespaced_pod("ns", label_selector="a=b")
    [request] = server.requests.matching("GET", "/api/v1/namespaces/ns/pods")
    assert (request.token, request.query) == ("test-token", {"labelSelector": "a=b"})


def test_a_server_that_checks_tokens_rejects_unknown_ones_with_401() -> None:
    with KubeServer(accepted_tokens={"good"}) as strict:
        for token, allowed in (("good", True), ("bad", False)):
            with client.ApiClient(strict.configuration(token=token)) as api:
                try:
                    client.CoreV1Api(api).list_namespaced_pod("ns")
                    status = 200
                except ApiException as error:
                    status = error.status
            assert (status == 200) is allowed


def test_token_reviews_answer_from_the_token_table(
    server: KubeServer, api: client.ApiClient
) -> None:
    server.reviews.add_token("t-alice", username="alice", groups=("team-a",))
    auth = client.AuthenticationV1Api(api)
    known = auth.create_token_review({"spec": {"token": "t-alice"}})
    unknown = auth.create_token_review({"spec": {"token": "t-nobody"}})
    assert (known.status.authenticated, known.status.user.username, known.status.user.groups) == (
        True,
        "alice",
        ["team-a"],
    )
    assert unknown.status.authenticated is False


@pytest.mark.parametrize(
    ("attributes", "allowed"),
    [
        pytest.param(
            {"verb": "patch", "group": KUEUE, "resource": "workloads", "namespace": "a"},
            True,
            id="matching-rule-allows",
        ),
        pytest.param(
            {"verb": "patch", "group": KUEUE, "resource": "workloads", "namespace": "b"},
            False,
            id="other-namespace-denied",
        ),
        pytest.param(
            {"verb": "delete", "group": KUEUE, "resource": "workloads", "namespace": "a"},
            False,
            id="other-verb-denied",
        ),
    ],
)
def test_subject_access_reviews_answer_from_the_rules(
    server: KubeServer, api: client.ApiClient, attributes: dict[str, str], allowed: bool
) -> None:
    server.reviews.allow(
        user="alice", verb="patch", group=KUEUE, resource="workloads", namespace="a"
    )
    review = client.AuthorizationV1Api(api).create_subject_access_review(
        {"spec": {"user": "alice", "resourceAttributes": attributes}}
    )
    assert review.status.allowed is allowed
    assert review.status.reason


# -- discovery and versions ----------------------------------------------------------------------


def _served_groups(api: client.ApiClient) -> dict[str, list[str]]:
    groups = client.ApisApi(api).get_api_versions().groups
    return {g.name: [v.version for v in g.versions] for g in groups}


def test_discovery_serves_kueue_v1beta2_first_with_its_resources(api: client.ApiClient) -> None:
    groups = _served_groups(api)
    assert groups[KUEUE] == ["v1beta2", "v1beta1"]
    assert {
        "ray.io",
        "keda.sh",
        "batch",
        "coordination.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
    } <= set(groups)
    resources = client.CustomObjectsApi(api).get_api_resources(KUEUE, "v1beta2").resources
    assert {
        "workloads",
        "workloads/status",
        "clusterqueues",
        "localqueues",
        "resourceflavors",
        "workloadpriorityclasses",
    } <= {r.name for r in resources}
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]


def test_an_older_kueue_serves_only_v1beta1_and_a_missing_keda_is_404() -> None:
    with (
        KubeServer(disabled_versions={f"{KUEUE}/v1beta2", "keda.sh/v1alpha1"}) as old,
        client.ApiClient(old.configuration()) as api,
    ):
        assert _served_groups(api)[KUEUE] == ["v1beta1"]
        assert "keda.sh" not in _served_groups(api)
        custom = client.CustomObjectsApi(api)
        assert (
            custom.list_namespaced_custom_object(KUEUE, "v1beta1", "ns", "workloads")["items"] == []
        )
        for group, version, plural in (
            (KUEUE, "v1beta2", "workloads"),
            ("keda.sh", "v1alpha1", "scaledobjects"),
        ):
            with pytest.raises(ApiException) as missing:
                custom.list_namespaced_custom_object(group, version, "ns", plural)
            assert missing.value.status == 404


def test_an_object_reads_through_either_served_kueue_version(
    server: KubeServer, api: client.ApiClient
) -> None:
    name = server.store.put(_raycluster_workload())["metadata"]["name"]
    read = client.CustomObjectsApi(api).get_namespaced_custom_object(
        KUEUE, "v1beta1", "ns", "workloads", name
    )
    assert read["apiVersion"] == f"{KUEUE}/v1beta1"


# -- hooks for tests and emulated controllers ----------------------------------------------------


def test_listeners_see_each_write_and_may_write_back(
    server: KubeServer, api: client.ApiClient
) -> None:
    seen: list[tuple[str, str, str]] = []

    def emulate_kueue(change: Change) -> None:
        seen.append((change.type, change.kind, change.name))
        if (
            change.kind == "Workload"
            and change.object["spec"].get("active") is False
            and "admission" in change.object.get("status", {})
        ):
            server.store.patch(
                "workloads.kueue.x-k8s.io",
                namespace=change.namespace,
                name=change.name,
                subresource="status",
                patch={"status": {"admission": None}},
            )

    server.on_change(emulate_kueue)
    name = server.store.put(_raycluster_workload())["metadata"]["name"]
    client.CustomObjectsApi(api).patch_namespaced_custom_object(
        KUEUE, "v1beta2", "ns", "workloads", name, {"spec": {"active": False}}
    )
    assert [kind for kind, _, _ in seen] == ["ADDED", "MODIFIED", "MODIFIED"]
    assert (
        "admission"
        not in server.store.get("workloads.kueue.x-k8s.io", namespace="ns", name=name)["status"]
    )


def test_closing_the_server_ends_all_of_its_threads() -> None:
    before = set(threading.enumerate())  # the session's shared server keeps its own threads
    with KubeServer() as short_lived, client.ApiClient(short_lived.configuration()) as api:
        short_lived.store.put(_pod("p1"))
        stream = watch.Watch().stream(
            client.CoreV1Api(api).list_namespaced_pod, "ns", timeout_seconds=30
        )
        next(stream)
    left = [t for t in set(threading.enumerate()) - before if t.name.startswith("kube-test-server")]
    assert not left


# -- builders and CRD validation -----------------------------------------------------------------

RC = (
    make_raycluster("ns", "rc")
    .head(gpus=1)
    .gpu_worker(replicas=1, gpus=1)
    .queue("user-queue")
    .priority_class("dev-priority")
    .build()
)


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(RC, id="raycluster"),
        pytest.param(make_workload_for(RC).admitted(at=T0).build(), id="workload-v1beta2-admitted"),
        pytest.param(
            make_workload_for(RC).admitted(at=T0).build(KUEUE_V1BETA1),
            id="workload-v1beta1-admitted",
        ),
        pytest.param(
            make_workload("ns", "rc-wl")
            .owned_by(RC)
            .pod_set("head", count=1, gpus=1)
            .pod_set("workers", count=1, gpus=1)
            .queue("user-queue")
            .priority_class("dev-priority")
            .admitted(at=T0, cluster_queue="cluster-queue")
            .active(True)
            .build(),
            id="workload-by-hand",
        ),
        pytest.param(
            make_workload_for(RC).admitted(at=T0).evicted(at=T0).build(), id="workload-deactivated"
        ),
        pytest.param(
            make_workload_for(RC).admitted(at=T0).finished(at=T0).build(), id="workload-finished"
        ),
        pytest.param(make_cluster_queue().build(), id="cluster-queue"),
        pytest.param(make_cluster_queue().build(KUEUE_V1BETA1), id="cluster-queue-v1beta1"),
        pytest.param(make_local_queue("ns").build(), id="local-queue"),
        pytest.param(make_resource_flavor().build(), id="resource-flavor"),
        pytest.param(
            make_workload_priority_class("dev-priority", value=100).build(),
            id="workload-priority-class",
        ),
    ],
)
def test_built_objects_match_the_upstream_crds(obj: dict[str, Any]) -> None:
    assert_valid(obj)


def test_built_pods_match_the_kubernetes_schema() -> None:
    pod = (
        make_pod("ns", "rc-head-x")
        .owned_by_raycluster("rc")
        .gpus(1)
        .node("gpu-1")
        .running(since=T0)
        .build()
    )
    kubernetes_validate.validate(pod, kubernetes_validate.latest_version(), strict=True)
    assert pod["metadata"]["labels"]["ray.io/node-type"] == "head"
    assert pod["metadata"]["ownerReferences"][0]["uid"] == RC["metadata"]["uid"]


def test_a_kueue_workload_is_named_and_owned_like_kueue_does() -> None:
    workload = make_workload_for(RC).build()
    assert workload["metadata"]["name"].startswith("raycluster-rc-")
    assert len(workload["metadata"]["name"]) == len("raycluster-rc-") + 5
    assert workload["metadata"]["ownerReferences"][0]["controller"] is True
    assert workload["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == RC["metadata"]["uid"]
    assert [p["name"] for p in workload["spec"]["podSets"]] == ["head", "workers"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param({"active": "yes"}, "spec.active", id="wrong-type"),
        pytest.param({"podSets": []}, "spec.podSets", id="too-few-items"),
        pytest.param({"queueName": "Not_A_Name"}, "spec.queueName", id="pattern"),
        pytest.param({"surprise": 1}, "spec.surprise", id="unknown-field"),
    ],
)
def test_crd_validation_names_the_invalid_field(change: dict[str, Any], field: str) -> None:
    workload = make_workload_for(RC).build()
    workload["spec"].update(change)
    with pytest.raises(CrdValidationError) as invalid:
        assert_valid(workload)
    assert field in [f for f, _ in invalid.value.errors]


def test_crd_validation_reports_missing_required_fields() -> None:
    workload = make_workload_for(RC).build()
    del workload["spec"]["podSets"][0]["template"]
    errors = load_crd_schemas().errors(workload)
    assert ("spec.podSets[0].template", "Required value") in errors


def test_a_client_that_resets_its_keep_alive_connection_prints_no_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A killed service process resets its idle connections; socketserver would print a
    ConnectionResetError traceback from the connection's thread into the gate's output."""
    with (
        KubeServer() as server,
        socket.create_connection(("127.0.0.1", urlsplit(server.url).port or 0)) as sock,
    ):
        sock.sendall(b"GET /version HTTP/1.1\r\nHost: test\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 OK")
        # Linger 0: close() sends a reset, as the kernel does for a killed process.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    # Leaving the server joined the connection's thread: whatever it printed is captured.
    assert "Traceback" not in capsys.readouterr().err


def test_any_other_error_in_a_connection_is_still_printed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    http = HttpServer.__new__(HttpServer)  # handle_error reads no state of the server
    for error in (ConnectionResetError(104, "reset"), BrokenPipeError(32, "pipe"), KeyError("x")):
        try:
            raise error
        except (OSError, KeyError):
            http.handle_error(None, ("127.0.0.1", 4242))
    printed = capsys.readouterr().err
    assert printed.count("Traceback") == 1
    assert "KeyError: 'x'" in printed and "('127.0.0.1', 4242)" in printed


def test_a_client_that_hangs_up_before_its_answer_is_no_server_bug(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A service process stopped mid-request (or a client past its read timeout) leaves the
    server writing to a reset socket: not a 500 to count in `errors`, nor a traceback."""
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    body = json.dumps(configmap).encode()
    committed, hung_up = threading.Event(), threading.Event()

    def hold_the_answer(_: Change) -> None:
        committed.set()
        hung_up.wait(5)

    with KubeServer() as server:
        server.on_change(hold_the_answer)
        with socket.create_connection(("127.0.0.1", urlsplit(server.url).port or 0)) as sock:
            sock.sendall(
                b"POST /api/v1/namespaces/ns/configmaps HTTP/1.1\r\nHost: test\r\n"
                b"Content-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            assert committed.wait(5)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        hung_up.set()
    assert server.errors == []
    assert "Traceback" not in capsys.readouterr().err
