"""KubeClient against the in-process test API server, over real HTTP with the official client."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client import Configuration

from autoscaler.adapters.kubernetes.client import (
    KubeClient,
    api_client_for,
    api_client_from_settings,
)
from autoscaler.adapters.kubernetes.resources import (
    ALLOWED_CALLS,
    CONFIGMAPS,
    PODS,
    ApiResource,
    kueue_workloads,
)
from autoscaler.adapters.kubernetes.reviews import review_access, review_token
from autoscaler.core.errors import (
    AnswerLost,
    ClusterError,
    ClusterUnavailable,
    ConfigError,
    Conflict,
    Forbidden,
    NotFound,
    WatchExpired,
)
from autoscaler.settings.tree import ClusterSettings
from tests.support.builders import make_pod, make_raycluster, make_workload_for
from tests.support.kube_server import KubeServer

NAMESPACE = "team-a"
WORKLOADS = kueue_workloads("v1beta2")


def config_map(name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name}},
        "data": dict(data),
    }


@pytest.fixture(scope="module")
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        yield running


@pytest.fixture
def client(server: KubeServer) -> Iterator[KubeClient]:
    server.requests.clear()
    server.faults.clear()
    client = KubeClient(api_client_for(server.configuration()), timeout=timedelta(seconds=5))
    yield client
    client.close()
    assert server.errors == []


def test_discovery_lists_kueue_versions_preferred_first(client: KubeClient) -> None:
    assert client.group_versions("kueue.x-k8s.io") == ["v1beta2", "v1beta1"]


def test_discovery_of_an_older_kueue_offers_only_v1beta1() -> None:
    with KubeServer(disabled_versions={"kueue.x-k8s.io/v1beta2"}) as old:
        client = KubeClient(api_client_for(old.configuration()), timeout=timedelta(seconds=5))
        assert client.group_versions("kueue.x-k8s.io") == ["v1beta1"]
        client.close()


def test_discovery_of_a_group_that_is_not_installed_is_empty(client: KubeClient) -> None:
    assert client.group_versions("example.com") == []


def test_merge_patch_sends_exactly_the_body_as_a_merge_patch(
    client: KubeClient, server: KubeServer
) -> None:
    rc = make_raycluster(NAMESPACE, "patched").build()
    server.store.put(make_workload_for(rc).build())
    name = make_workload_for(rc).build()["metadata"]["name"]

    patched = client.merge_patch(WORKLOADS, name, {"spec": {"active": False}}, namespace=NAMESPACE)

    assert patched["spec"]["active"] is False
    (request,) = server.requests.writes()
    assert request.method == "PATCH"
    assert request.path == f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NAMESPACE}/workloads/{name}"
    assert request.content_type == "application/merge-patch+json"
    assert request.body == {"spec": {"active": False}}


def test_requests_carry_the_configured_bearer_token(client: KubeClient, server: KubeServer) -> None:
    client.list_objects(PODS, namespace=NAMESPACE)
    assert [r.token for r in server.requests.all()] == ["test-token"]


def test_list_filters_by_label_selector_and_returns_the_list_version(
    client: KubeClient, server: KubeServer
) -> None:
    server.store.put(make_pod(NAMESPACE, "rc-a-head").owned_by_raycluster("rc-a").build())
    server.store.put(make_pod(NAMESPACE, "rc-b-head").owned_by_raycluster("rc-b").build())

    found = client.list_objects(PODS, label_selector="ray.io/cluster=rc-b")

    assert [item["metadata"]["name"] for item in found.items] == ["rc-b-head"]
    assert found.resource_version == str(server.store.resource_version)
    assert server.requests.all()[-1].query["labelSelector"] == "ray.io/cluster=rc-b"


def test_update_with_a_stale_resource_version_is_a_conflict(client: KubeClient) -> None:
    created = client.create(CONFIGMAPS, config_map("raced"), namespace=NAMESPACE)
    first = {**created, "data": {"a": "1"}}
    client.update(CONFIGMAPS, "raced", first, namespace=NAMESPACE)

    with pytest.raises(Conflict):
        client.update(CONFIGMAPS, "raced", {**created, "data": {"b": "2"}}, namespace=NAMESPACE)

    assert client.get(CONFIGMAPS, "raced", namespace=NAMESPACE)["data"] == {"a": "1"}


def test_creating_an_existing_object_is_a_conflict(client: KubeClient) -> None:
    client.create(CONFIGMAPS, config_map("twice"), namespace=NAMESPACE)
    with pytest.raises(Conflict):
        client.create(CONFIGMAPS, config_map("twice"), namespace=NAMESPACE)


def test_a_missing_object_is_not_found(client: KubeClient) -> None:
    with pytest.raises(NotFound, match="configmaps team-a/absent"):
        client.get(CONFIGMAPS, "absent", namespace=NAMESPACE)


@pytest.mark.parametrize(
    ("status", "error"),
    [
        pytest.param(401, Forbidden, id="401-is-forbidden"),
        pytest.param(403, Forbidden, id="403-is-forbidden"),
        pytest.param(404, NotFound, id="404-is-not-found"),
        pytest.param(409, Conflict, id="409-is-conflict"),
        pytest.param(410, WatchExpired, id="410-is-expired"),
        pytest.param(422, ClusterError, id="422-is-a-plain-cluster-error"),
        pytest.param(500, ClusterUnavailable, id="500-is-unavailable"),
        pytest.param(503, ClusterUnavailable, id="503-is-unavailable"),
        pytest.param(429, ClusterUnavailable, id="429-is-unavailable"),
    ],
)
def test_api_failures_become_our_errors(
    client: KubeClient, server: KubeServer, status: int, error: type[ClusterError]
) -> None:
    server.faults.fail_next("GET", "/api/v1/namespaces/team-a/pods", status=status)
    with pytest.raises(error) as raised:
        client.list_objects(PODS, namespace=NAMESPACE)
    assert type(raised.value) is error
    assert raised.value.__cause__ is not None


def test_throttling_reports_when_to_retry(client: KubeClient, server: KubeServer) -> None:
    server.faults.fail_next("GET", "/api/v1/pods", status=429, retry_after=7)
    with pytest.raises(ClusterUnavailable, match=r"retry after 7s"):
        client.list_objects(PODS)


def test_the_status_message_is_kept_in_the_error(client: KubeClient, server: KubeServer) -> None:
    server.faults.fail_next("GET", "/api/v1/pods", status=403, message="no pods for you")
    with pytest.raises(Forbidden, match="list pods: 403 no pods for you"):
        client.list_objects(PODS)


def test_a_call_outside_the_allowed_list_is_refused_before_any_request(
    client: KubeClient, server: KubeServer
) -> None:
    with pytest.raises(Forbidden, match="refused: patch pods"):
        client.merge_patch(PODS, "p", {"metadata": {"labels": {"x": "y"}}}, namespace=NAMESPACE)
    with pytest.raises(Forbidden, match="refused: delete pods"):
        client.delete(PODS, "p", namespace=NAMESPACE, uid="u")
    with pytest.raises(Forbidden, match="refused: patch configmaps"):
        client.merge_patch(CONFIGMAPS, "c", {"data": {}}, namespace=NAMESPACE)
    with pytest.raises(Forbidden, match="refused: list leases"):
        client.list_objects(ApiResource("coordination.k8s.io", "v1", "leases"))
    assert server.requests.all() == []


def test_the_allowed_list_is_the_services_exact_rbac() -> None:
    by_resource: dict[tuple[str, str], set[str]] = {}
    for group, resource, verb in ALLOWED_CALLS:
        by_resource.setdefault((group, resource), set()).add(verb)
    assert by_resource == {
        ("kueue.x-k8s.io", "workloads"): {"get", "list", "watch", "patch"},
        # pausing a namespace: it must exist; namespace labels for rules: listed, watched
        ("", "namespaces"): {"get", "list", "watch"},
        # Kueue's queues, for when-contended (PendingWork) and each Workload's cohort
        ("kueue.x-k8s.io", "clusterqueues"): {"get", "list", "watch"},
        ("kueue.x-k8s.io", "localqueues"): {"list", "watch"},
        ("kueue.x-k8s.io", "resourceflavors"): {"list", "watch"},
        ("kueue.x-k8s.io", "cohorts"): {"list", "watch"},
        ("visibility.kueue.x-k8s.io", "clusterqueues/pendingworkloads"): {"get"},
        # delete: the opt-in last rung of a rule with action `delete` (ISSUE 15)
        ("ray.io", "rayclusters"): {"get", "list", "watch", "patch", "delete"},
        ("ray.io", "rayjobs"): {"get", "list", "watch", "patch"},
        # owners Kubernetes' own controllers or Kueue own: read, never written (their
        # Workload is annotated instead); a plain pod is its Workload's owner under Kueue's
        # pod integration
        ("batch", "jobs"): {"get", "list", "watch"},
        ("apps", "deployments"): {"get", "list", "watch"},
        ("apps", "statefulsets"): {"get", "list", "watch"},
        ("", "pods"): {"get", "list", "watch"},
        # the other owner kinds of the table: read, and annotated
        **{
            (group, plural): {"get", "list", "watch", "patch"}
            for group, plural in (
                ("jobset.x-k8s.io", "jobsets"),
                ("kubeflow.org", "jaxjobs"),
                ("kubeflow.org", "mpijobs"),
                ("kubeflow.org", "notebooks"),
                ("kubeflow.org", "paddlejobs"),
                ("kubeflow.org", "pytorchjobs"),
                ("kubeflow.org", "tfjobs"),
                ("kubeflow.org", "xgboostjobs"),
                ("leaderworkerset.x-k8s.io", "leaderworkersets"),
                ("trainer.kubeflow.org", "trainjobs"),
                ("workload.codeflare.dev", "appwrappers"),
            )
        },
        # the intermediate objects between an owner and its pods: their ownerReferences only
        ("apps", "replicasets"): {"list", "watch"},
        # create: our Events; list and watch: the node autoscaler's TriggeredScaleUp Events
        ("", "events"): {"create", "list", "watch"},
        # get, create, update: the runtime state; list, watch: Kueue's Configuration, by name
        ("", "configmaps"): {"get", "create", "update", "list", "watch"},
        ("keda.sh", "scaledobjects"): {"list", "watch"},
        ("coordination.k8s.io", "leases"): {"get", "create", "update"},
        ("authentication.k8s.io", "tokenreviews"): {"create"},
        ("authorization.k8s.io", "subjectaccessreviews"): {"create"},
        # KAI Scheduler's queues and PodGroups: who waits under KAI (the KAI actuator only)
        ("scheduling.run.ai", "queues"): {"list"},
        ("scheduling.run.ai", "podgroups"): {"list"},
    }


def unserved_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed on return: nothing listens there


def client_for(host: str, *, timeout: timedelta) -> KubeClient:
    return KubeClient(api_client_for(Configuration(host=host)), timeout=timeout)


def test_an_unreachable_server_is_unavailable_and_nothing_was_sent() -> None:
    client = client_for(f"http://127.0.0.1:{unserved_port()}", timeout=timedelta(seconds=2))
    with pytest.raises(ClusterUnavailable, match="unreachable") as raised:
        client.list_objects(PODS)
    assert not isinstance(raised.value, AnswerLost)
    client.close()


@pytest.mark.parametrize("method", ["get", "patch"])
def test_a_server_that_never_answers_loses_the_answer_which_may_have_applied(
    method: str,
) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # connections queue up, nobody ever answers
        host = f"http://127.0.0.1:{silent.getsockname()[1]}"
        client = client_for(host, timeout=timedelta(seconds=0.3))
        with pytest.raises(AnswerLost, match="the answer was lost"):
            if method == "get":
                client.get(CONFIGMAPS, "any", namespace=NAMESPACE)
            else:
                client.merge_patch(WORKLOADS, "any", {"metadata": {}}, namespace=NAMESPACE)
        client.close()


def test_a_watch_yields_changes_after_the_listed_version(
    client: KubeClient, server: KubeServer
) -> None:
    listed = client.list_objects(PODS, namespace="watched")
    events = client.watch(PODS, namespace="watched", resource_version=listed.resource_version)
    server.store.put(make_pod("watched", "w1").build())

    first = next(events)
    server.store.patch("pods", name="w1", namespace="watched", patch={"spec": {"nodeName": "n"}})
    second = next(events)
    events.close()

    assert (first.type, first.object["metadata"]["name"]) == ("ADDED", "w1")
    assert (second.type, second.object["spec"]["nodeName"]) == ("MODIFIED", "n")


def test_a_watch_resumes_from_the_last_version_after_the_stream_ends(
    client: KubeClient, server: KubeServer
) -> None:
    listed = client.list_objects(PODS, namespace="resumed")
    events = client.watch(PODS, namespace="resumed", resource_version=listed.resource_version)
    server.store.put(make_pod("resumed", "r1").build())
    assert next(events).object["metadata"]["name"] == "r1"
    seen = server.store.resource_version

    server.drop_watches()
    server.store.put(make_pod("resumed", "r2").build())
    assert next(events).object["metadata"]["name"] == "r2"
    events.close()

    watches = [r for r in server.requests.all() if r.is_watch]
    assert [r.query["resourceVersion"] for r in watches] == [listed.resource_version, str(seen)]


def test_a_watch_from_an_expired_version_says_to_list_again(
    client: KubeClient, server: KubeServer
) -> None:
    server.faults.expire_next_watch()
    events = client.watch(PODS, resource_version="1")
    with pytest.raises(WatchExpired):
        next(events)


def test_token_and_access_reviews_are_created(client: KubeClient, server: KubeServer) -> None:
    server.reviews.add_token("alice-token", username="alice", groups=("team-a",))
    server.reviews.allow(user="alice", verb="patch", group="kueue.x-k8s.io", resource="workloads")

    token = review_token(client, "alice-token", audiences=("idle-gpu-autoscaler",))
    access = review_access(
        client,
        {
            "user": "alice",
            "resourceAttributes": {
                "verb": "patch",
                "group": "kueue.x-k8s.io",
                "resource": "workloads",
                "namespace": NAMESPACE,
            },
        },
    )

    assert token["status"]["user"]["username"] == "alice"
    assert access["status"]["allowed"] is True
    assert [r.path for r in server.requests.writes()] == [
        "/apis/authentication.k8s.io/v1/tokenreviews",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    ]


def test_a_kubeconfig_context_selects_the_cluster(server: KubeServer, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "elsewhere",
                "clusters": [
                    {"name": "test", "cluster": {"server": server.url}},
                    {"name": "nowhere", "cluster": {"server": "http://127.0.0.1:1"}},
                ],
                "users": [{"name": "svc", "user": {"token": "kubeconfig-token"}}],
                "contexts": [
                    {"name": "chosen", "context": {"cluster": "test", "user": "svc"}},
                    {"name": "elsewhere", "context": {"cluster": "nowhere", "user": "svc"}},
                ],
            }
        )
    )
    settings = ClusterSettings(kubeconfig=kubeconfig, context="chosen")
    server.requests.clear()

    client = KubeClient(api_client_from_settings(settings), timeout=settings.request_timeout)
    client.list_objects(PODS, namespace=NAMESPACE)
    client.close()

    assert [r.token for r in server.requests.all()] == ["kubeconfig-token"]


def test_an_unreadable_kubeconfig_is_a_config_error(tmp_path: Path) -> None:
    settings = ClusterSettings(kubeconfig=tmp_path / "missing", context="any")
    with pytest.raises(ConfigError, match=r"cluster\.kubeconfig"):
        api_client_from_settings(settings)


def test_a_hostile_kubeconfig_is_refused_before_the_kubernetes_loader_reads_it(
    tmp_path: Path,
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_bytes(b"clusters: " + b"[" * 5000 + b"]" * 5000)  # a RecursionError there
    settings = ClusterSettings(kubeconfig=kubeconfig, context="any")
    with pytest.raises(ConfigError) as refused:
        api_client_from_settings(settings)
    assert str(refused.value).startswith(f"{kubeconfig} (cluster.kubeconfig): nested deeper")
