"""Kubernetes shapes of the Kueue model: quantities, object readers, status writers."""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from datetime import datetime
from typing import Any

import jsonschema
import pytest
import yaml

from autoscaler.domain.models import WorkloadRef
from autoscaler.sim import PODS, KueueState, LocalQueue, Phase, QueueingStrategy, admit_pending
from tests.support.crd_validation import DEFAULT_CRD_DIR
from tests.support.kueue_objects import (
    cluster_queue_from_object,
    cluster_queue_status,
    local_queue_from_object,
    priority_class_from_object,
    workload_from_object,
    workload_status,
)
from tests.support.quantity import format_quantity, parse_quantity, parse_time, rfc3339

from .builders import GPU, T0, at

RFC3339_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
REF = WorkloadRef("demo", "raycluster-first")


@pytest.mark.parametrize(
    ("resource", "value", "expected"),
    [
        pytest.param("cpu", "500m", 500, id="millicores"),
        pytest.param("cpu", 2, 2000, id="whole-cpus-as-int"),
        pytest.param("cpu", "0.1", 100, id="fractional-cpu"),
        pytest.param("cpu", "1u", 1, id="tiny-cpu-rounds-up"),
        pytest.param("memory", "8Gi", 8 * 2**30, id="binary-suffix"),
        pytest.param("memory", "1.5Ki", 1536, id="fractional-binary-suffix"),
        pytest.param("memory", "16G", 16 * 10**9, id="decimal-suffix"),
        pytest.param("memory", "1e3", 1000, id="exponent"),
        pytest.param("memory", "1E", 10**18, id="exa-is-a-suffix-not-an-exponent"),
        pytest.param(GPU, "2", 2, id="gpus-as-string"),
        pytest.param(GPU, 2.0, 2, id="gpus-as-float"),
    ],
)
def test_quantities_become_kueue_canonical_integers(
    resource: str, value: str | int | float, expected: int
) -> None:
    assert parse_quantity(resource, value) == expected


@pytest.mark.parametrize("value", ["", "two", "1.2.3", "5Xi", True])
def test_a_malformed_quantity_is_refused(value: Any) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity("cpu", value)


@pytest.mark.parametrize(
    ("resource", "amount", "expected"),
    [
        pytest.param("cpu", 2000, "2", id="whole-cpus"),
        pytest.param("cpu", 1500, "1500m", id="millicores"),
        pytest.param(GPU, 2, "2", id="gpus"),
    ],
)
def test_canonical_integers_format_back_as_quantities(
    resource: str, amount: int, expected: str
) -> None:
    assert format_quantity(resource, amount) == expected


def test_times_are_rfc3339_utc_with_z_and_naive_ones_are_refused() -> None:
    assert rfc3339(T0) == "2026-03-02T13:00:00Z"
    assert parse_time("2026-03-02T13:00:00Z") == T0
    with pytest.raises(ValueError, match="naive"):
        rfc3339(datetime(2026, 1, 1))


# Readers.


def cluster_queue_object(**spec: Any) -> dict[str, Any]:
    resources = [
        {"name": "cpu", "nominalQuota": 9},
        {"name": "memory", "nominalQuota": "36Gi"},
        {"name": "pods", "nominalQuota": 5},
        {"name": GPU, "nominalQuota": 2, "borrowingLimit": "1", "lendingLimit": 1},
    ]
    group = {
        "coveredResources": [r["name"] for r in resources],
        "flavors": [{"name": "default-flavor", "resources": resources}],
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cluster-queue"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [group], **spec},
    }


def test_a_cluster_queue_object_becomes_quotas_with_limits_and_cohort() -> None:
    obj = cluster_queue_object(cohortName="all-gpus", queueingStrategy="StrictFIFO")
    cq = cluster_queue_from_object(obj)
    assert (cq.name, cq.cohort, cq.flavor) == ("cluster-queue", "all-gpus", "default-flavor")
    assert cq.queueing_strategy is QueueingStrategy.STRICT_FIFO
    assert {r: q.nominal for r, q in cq.quotas.items()} == {
        "cpu": 9000,
        "memory": 36 * 2**30,
        PODS: 5,
        GPU: 2,
    }
    assert (cq.quotas[GPU].borrowing_limit, cq.quotas[GPU].lending_limit) == (1, 1)


def test_a_cluster_queue_without_cohort_has_none_and_defaults_to_best_effort_fifo() -> None:
    cq = cluster_queue_from_object(cluster_queue_object())
    assert (cq.cohort, cq.queueing_strategy) == (None, QueueingStrategy.BEST_EFFORT_FIFO)


def test_a_cluster_queue_with_several_flavors_in_a_group_is_refused() -> None:
    obj = cluster_queue_object()
    group = obj["spec"]["resourceGroups"][0]
    group["flavors"].append({**group["flavors"][0], "name": "spot"})
    with pytest.raises(ValueError, match="one flavor"):
        cluster_queue_from_object(obj)


def test_local_queues_and_priority_classes_are_read() -> None:
    lq = {"metadata": {"namespace": "demo", "name": "user-queue"}, "spec": {"clusterQueue": "cq"}}
    wpc = {"metadata": {"name": "prod-priority"}, "value": 1000}
    assert local_queue_from_object(lq) == LocalQueue("demo", "user-queue", "cq")
    assert priority_class_from_object(wpc) == ("prod-priority", 1000)


def container(requests: dict[str, Any], limits: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": requests, "limits": limits or requests}}


def workload_object(**spec: Any) -> dict[str, Any]:
    """A RayCluster's Workload: a 1-GPU head and one 1-GPU worker."""
    head = {"containers": [container({"cpu": "2", "memory": "8G", GPU: "1"})]}
    worker = {"containers": [container({"cpu": "2", "memory": "8G", GPU: "1"})]}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "namespace": REF.namespace,
            "name": REF.name,
            "creationTimestamp": "2026-03-02T13:00:00Z",
        },
        "spec": {
            "queueName": "user-queue",
            "podSets": [
                {"name": "head", "count": 1, "template": {"spec": head}},
                {"name": "workers-group-0", "count": 1, "template": {"spec": worker}},
            ],
            **spec,
        },
    }


def read(obj: dict[str, Any], **options: Any) -> Any:
    classes = {"prod-priority": 1000, "dev-priority": 100}
    return workload_from_object(obj, priority_classes=classes, now=at(999), **options)


def test_a_workload_object_sums_its_pod_sets_and_defaults_to_active_and_pending() -> None:
    workload = read(workload_object())
    assert workload.requests == {"cpu": 4000, "memory": 16 * 10**9, GPU: 2}
    assert (workload.pod_count, workload.created_at, workload.phase) == (2, T0, Phase.PENDING)
    assert (workload.priority, workload.priority_class) == (0, None)


@pytest.mark.parametrize(
    ("spec", "labels", "expected"),
    [
        pytest.param(
            {
                "priorityClassRef": {
                    "group": "kueue.x-k8s.io",
                    "kind": "WorkloadPriorityClass",
                    "name": "prod-priority",
                }
            },
            {},
            (1000, "prod-priority"),
            id="v1beta2-priority-class-ref",
        ),
        pytest.param(
            {"priorityClassName": "dev-priority"},
            {},
            (100, "dev-priority"),
            id="v1beta1-priority-class-name",
        ),
        pytest.param(
            {},
            {"kueue.x-k8s.io/priority-class": "dev-priority"},
            (100, "dev-priority"),
            id="priority-class-label",
        ),
        pytest.param(
            {"priorityClassName": "dev-priority", "priority": 7},
            {},
            (7, "dev-priority"),
            id="spec-priority-wins-as-kueue-already-resolved-it",
        ),
        pytest.param(
            {"priorityClassName": "unknown"}, {}, (0, "unknown"), id="unknown-class-is-zero"
        ),
    ],
)
def test_a_workload_priority_comes_from_its_class(
    spec: dict[str, Any], labels: dict[str, str], expected: tuple[int, str]
) -> None:
    obj = workload_object(**spec)
    obj["metadata"]["labels"] = labels
    workload = read(obj)
    assert (workload.priority, workload.priority_class) == expected


def test_pod_requests_use_limits_when_missing_and_the_largest_init_container() -> None:
    pod = {
        "containers": [container({"cpu": "1"}, {"cpu": "2", GPU: 1}), container({"cpu": "500m"})],
        "initContainers": [container({"cpu": "3", "memory": "1Gi"})],
        "overhead": {"memory": "1Ki"},
    }
    obj = workload_object()
    obj["spec"]["podSets"] = [{"name": "main", "count": 2, "template": {"spec": pod}}]
    workload = read(obj)
    assert workload.pod_sets[0].requests == {"cpu": 3000, GPU: 1, "memory": 2**30 + 1024}
    assert workload.requests == {"cpu": 6000, GPU: 2, "memory": 2 * (2**30 + 1024)}


def test_excluded_resource_prefixes_are_ignored_like_kueue_config_does() -> None:
    workload = read(workload_object(), excluded_resource_prefixes=("memory", "cpu"))
    assert workload.requests == {GPU: 2}


def test_an_inactive_workload_object_reads_as_inactive() -> None:
    assert read(workload_object(active=False)).phase is Phase.INACTIVE


# Writers.


def seeded_state() -> KueueState:
    cq = cluster_queue_from_object(cluster_queue_object())
    lq = LocalQueue("demo", "user-queue", "cluster-queue")
    state = KueueState().with_cluster_queue(cq).with_local_queue(lq)
    first = read(workload_object())
    second = read(workload_object())
    second = replace(second, name="raycluster-second")
    return state.with_workload(first).with_workload(second)


def condition(status: dict[str, Any], kind: str) -> dict[str, str]:
    return next(c for c in status["conditions"] if c["type"] == kind)


def test_an_admitted_workload_status_names_its_queue_pod_sets_and_admission_time() -> None:
    state, _ = admit_pending(seeded_state(), at(30))
    status = workload_status(state, REF)

    assert status["admission"]["clusterQueue"] == "cluster-queue"
    head, worker = status["admission"]["podSetAssignments"]
    assert head == {
        "name": "head",
        "flavors": dict.fromkeys(["cpu", "memory", GPU, PODS], "default-flavor"),
        "resourceUsage": {"cpu": "2", "memory": "8000000000", GPU: "1", PODS: "1"},
        "count": 1,
    }
    assert worker["name"] == "workers-group-0"
    for kind in ("QuotaReserved", "Admitted"):
        assert condition(status, kind)["status"] == "True"
        assert condition(status, kind)["lastTransitionTime"] == "2026-03-02T13:00:30Z"


def test_a_pending_workload_status_says_why_in_quota_reserved() -> None:
    state, _ = admit_pending(seeded_state(), at(30))
    status = workload_status(state, WorkloadRef("demo", "raycluster-second"))
    reserved = condition(status, "QuotaReserved")
    assert (reserved["status"], reserved["reason"]) == ("False", "Pending")
    assert "insufficient quota for nvidia.com/gpu" in reserved["message"]
    assert condition(status, "Admitted")["reason"] == "NoReservation"
    assert "admission" not in status


def test_a_deactivated_workload_status_shows_the_eviction_and_no_admission() -> None:
    state, _ = admit_pending(seeded_state(), at(30))
    state, _ = state.set_active(REF, active=False, now=at(90))
    status = workload_status(state, REF)
    evicted = condition(status, "Evicted")
    assert (evicted["status"], evicted["reason"]) == ("True", "Deactivated")
    assert evicted["lastTransitionTime"] == "2026-03-02T13:01:30Z"
    assert condition(status, "Requeued")["status"] == "False"
    assert condition(status, "QuotaReserved")["status"] == "False"
    assert "admission" not in status


def test_a_readmitted_workload_reports_the_eviction_as_previous() -> None:
    state, _ = admit_pending(seeded_state(), at(30))
    state, _ = state.set_active(REF, active=False, now=at(90))
    state, _ = state.set_active(REF, active=True, now=at(120))
    state, _ = state.finish(WorkloadRef("demo", "raycluster-second"), now=at(150))
    state, _ = admit_pending(state, at(150))
    status = workload_status(state, REF)
    evicted = condition(status, "Evicted")
    assert (evicted["status"], evicted["message"]) == (
        "False",
        "Previously: The workload is deactivated",
    )
    assert condition(status, "Requeued")["reason"] == "Reactivated"
    assert condition(status, "Admitted")["lastTransitionTime"] == "2026-03-02T13:02:30Z"


def states_in_every_phase() -> list[KueueState]:
    """One state per life stage of REF, each reached by the model's own transitions."""
    first, _ = admit_pending(seeded_state(), at(30))
    off, _ = first.set_active(REF, active=False, now=at(90))
    back, _ = off.set_active(REF, active=True, now=at(120))
    other = WorkloadRef("demo", "raycluster-second")
    again, _ = admit_pending(back.finish(other, now=at(130))[0], at(150))
    done, _ = again.finish(REF, now=at(200))
    return [seeded_state(), first, off, back, again, done]


@pytest.mark.parametrize(
    "index",
    range(6),
    ids=["pending", "admitted", "deactivated", "reactivated", "readmitted", "finished"],
)
def test_a_rendered_status_reads_back_into_the_same_status(index: int) -> None:
    state = states_in_every_phase()[index]
    obj = workload_object(active=state.workload(REF).active)
    obj["status"] = workload_status(state, REF)

    restored = state.with_workload(read(obj))

    assert restored.workload(REF).phase is state.workload(REF).phase
    assert workload_status(restored, REF) == obj["status"]


def test_a_cluster_queue_status_reports_reservation_and_counts() -> None:
    state, _ = admit_pending(seeded_state(), at(30))
    status = cluster_queue_status(state, "cluster-queue")
    gpu = next(r for r in status["flavorsReservation"][0]["resources"] if r["name"] == GPU)
    assert (gpu["total"], gpu["borrowed"]) == ("2", "0")
    assert (status["admittedWorkloads"], status["pendingWorkloads"]) == (1, 1)


# The upstream CRD is the judge of the shapes.


def strict_schema(node: Any) -> Any:
    """OpenAPI -> JSON Schema: drop x-kubernetes-*, forbid fields the CRD does not declare."""
    if not isinstance(node, dict):
        return node
    out = {k: strict_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes-")}
    if "properties" in out:
        out["properties"] = {k: strict_schema(v) for k, v in node["properties"].items()}
        out.setdefault("additionalProperties", False)
    if "anyOf" in out:
        out["anyOf"] = [strict_schema(v) for v in node["anyOf"]]
    return out


@pytest.fixture(scope="module")
def workload_status_schema() -> dict[str, Any]:
    path = DEFAULT_CRD_DIR / "kueue.x-k8s.io_workloads.yaml"  # vendored, so never missing
    crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
    return strict_schema(
        copy.deepcopy(version["schema"]["openAPIV3Schema"]["properties"]["status"])
    )


@pytest.mark.parametrize(
    "index",
    range(6),
    ids=["pending", "admitted", "deactivated", "reactivated", "readmitted", "finished"],
)
def test_every_rendered_status_matches_the_upstream_v1beta2_crd(
    index: int, workload_status_schema: dict[str, Any]
) -> None:
    state = states_in_every_phase()[index]
    for ref in state.workloads:
        status = workload_status(state, ref)
        jsonschema.Draft4Validator(workload_status_schema).validate(status)
        assert all(RFC3339_Z.match(c["lastTransitionTime"]) for c in status["conditions"])
