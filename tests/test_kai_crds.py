"""KAI Scheduler's Queue and PodGroup on the test API server: served where KAI serves them and
validated against the CRDs vendored from KAI's release (tests/crds), like every custom resource."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.support.builders import make_kai_queue, make_podgroup
from tests.support.crd_validation import assert_valid
from tests.support.kube_server import KubeServer

KAI = "scheduling.run.ai"


@pytest.fixture
def custom() -> Iterator[client.CustomObjectsApi]:
    with KubeServer() as server, client.ApiClient(server.configuration()) as api:
        yield client.CustomObjectsApi(api)
    assert server.errors == []


def refusal(error: ApiException) -> tuple[int, str]:
    body: dict[str, Any] = json.loads(error.body)
    return error.status, str(body["message"])


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(make_kai_queue("org").build(), id="queue-unlimited"),
        pytest.param(
            make_kai_queue("team-a", parent="org", gpu_quota=2, gpu_limit=4)
            .allocated(gpus="1.5")
            .build(),
            id="queue-with-parent-quota-limit-and-status",
        ),
        pytest.param(make_kai_queue("team-b").without_gpu_limit().build(), id="queue-no-limit"),
        pytest.param(make_podgroup("ns", "pg", queue="team-a").build(), id="podgroup"),
        pytest.param(
            make_podgroup("ns", "pg", queue="team-a", min_member=3).pending().build(),
            id="podgroup-pending",
        ),
        pytest.param(
            make_podgroup("ns", "pg", queue="team-a").priority_class("train").running().build(),
            id="podgroup-running",
        ),
    ],
)
def test_built_kai_objects_match_kais_crds(obj: dict[str, Any]) -> None:
    assert_valid(obj)


def test_a_valid_queue_and_podgroup_are_accepted_and_read_back(
    custom: client.CustomObjectsApi,
) -> None:
    custom.create_cluster_custom_object(
        KAI, "v2", "queues", make_kai_queue("team-a", gpu_quota=2, gpu_limit=4).build()
    )
    custom.create_namespaced_custom_object(
        KAI, "v2alpha2", "ns", "podgroups", make_podgroup("ns", "pg", queue="team-a").build()
    )

    queue = custom.get_cluster_custom_object(KAI, "v2", "queues", "team-a")
    groups = custom.list_cluster_custom_object(KAI, "v2alpha2", "podgroups")["items"]
    assert queue["spec"]["resources"]["gpu"] == {"quota": 2, "limit": 4, "overQuotaWeight": 1}
    assert [(g["metadata"]["namespace"], g["spec"]["queue"]) for g in groups] == [("ns", "team-a")]


def test_an_invalid_queue_is_refused_naming_the_field(custom: client.CustomObjectsApi) -> None:
    queue = make_kai_queue("team-a").build()
    queue["spec"]["resources"]["gpu"]["quota"] = "lots"

    with pytest.raises(ApiException) as refused:
        custom.create_cluster_custom_object(KAI, "v2", "queues", queue)

    status, message = refusal(refused.value)
    assert status == 422
    assert "spec.resources.gpu.quota" in message


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param({"minMember": 0}, "spec.minMember", id="gang-of-none"),
        pytest.param({"preemptibility": "sometimes"}, "spec.preemptibility", id="not-in-enum"),
        pytest.param({"queueName": "team-a"}, "spec.queueName", id="unknown-field"),
    ],
)
def test_an_invalid_podgroup_is_refused_naming_the_field(
    custom: client.CustomObjectsApi, change: dict[str, Any], field: str
) -> None:
    group = make_podgroup("ns", "pg", queue="team-a").build()
    group["spec"].update(change)

    with pytest.raises(ApiException) as refused:
        custom.create_namespaced_custom_object(KAI, "v2alpha2", "ns", "podgroups", group)

    status, message = refusal(refused.value)
    assert status == 422
    assert field in message


def test_a_queue_is_cluster_scoped_and_a_podgroup_is_namespaced(
    custom: client.CustomObjectsApi,
) -> None:
    resources = {r.name: r.namespaced for r in custom.get_api_resources(KAI, "v2").resources} | {
        r.name: r.namespaced for r in custom.get_api_resources(KAI, "v2alpha2").resources
    }

    assert resources["queues"] is False
    assert resources["podgroups"] is True
