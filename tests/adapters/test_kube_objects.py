"""Pure reading of Kubernetes objects into domain values (no server)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.adapters.kubernetes.objects import (
    controller_owner,
    event_for,
    parse_pod,
    parse_workload,
    pauses_from_data,
    pauses_to_data,
    pod_gpus,
)
from autoscaler.adapters.kubernetes.pod_selectors import PodSelector
from autoscaler.adapters.kueue.context import FoundPods
from autoscaler.adapters.kueue.links import Links
from autoscaler.adapters.kueue.ownership import PodTree
from autoscaler.domain.models import OwnerRef, Pauses, PodInfo
from autoscaler.settings.tree import ClusterSettings
from tests.support.builders import (
    KUEUE_V1BETA1,
    make_pod,
    make_raycluster,
    make_workload,
    make_workload_for,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
T1 = T0 + timedelta(hours=2)
GPU_RESOURCES = ClusterSettings().gpu_resources


def stored(obj: dict[str, Any]) -> dict[str, Any]:
    """As read back from the API server, which stamps every object's creation time."""
    obj["metadata"].setdefault("creationTimestamp", "2026-02-28T12:00:00Z")
    return obj


def pod_with(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    pod = make_pod("ns", "p").build()
    pod["spec"]["containers"] = list(containers)
    if init:
        pod["spec"]["initContainers"] = list(init)
    return pod


def needs(*, limits: dict[str, str] | None = None, requests: dict[str, str] | None = None) -> Any:
    resources = {"limits": limits or {}, "requests": requests or {}}
    return {"name": "c", "image": "i", "resources": resources}


@pytest.mark.parametrize(
    ("pod", "gpus"),
    [
        pytest.param(pod_with(needs(limits={"cpu": "2"})), 0, id="cpu-only-pod-has-none"),
        pytest.param(pod_with(needs(limits={"nvidia.com/gpu": "2"})), 2, id="whole-gpus"),
        pytest.param(
            pod_with(
                needs(requests={"nvidia.com/gpu": "1"}), needs(limits={"nvidia.com/gpu": "1"})
            ),
            2,
            id="containers-add-up-request-or-limit",
        ),
        pytest.param(
            pod_with(needs(limits={"nvidia.com/mig-1g.10gb": "1", "nvidia.com/mig-2g.20gb": "1"})),
            2,
            id="mig-slices-match-the-prefix",
        ),
        pytest.param(pod_with(needs(limits={"nvidia.com/gpu.shared": "1"})), 1, id="shared-gpu"),
        pytest.param(pod_with(needs(limits={"amd.com/gpu": "1"})), 0, id="other-vendors-ignored"),
        pytest.param(
            pod_with(
                needs(limits={"nvidia.com/gpu": "1"}), init=(needs(limits={"nvidia.com/gpu": "2"}),)
            ),
            2,
            id="a-larger-init-container-sizes-the-pod",
        ),
        pytest.param(pod_with(), 0, id="no-containers"),
    ],
)
def test_a_pods_gpus_are_counted_like_the_scheduler_counts_them(pod: Any, gpus: int) -> None:
    assert pod_gpus(pod, GPU_RESOURCES) == gpus


def test_an_exact_resource_name_does_not_match_longer_names() -> None:
    pod = pod_with(needs(limits={"nvidia.com/gpu.shared": "1"}))
    assert pod_gpus(pod, ["nvidia.com/gpu"]) == 0


def test_a_garbled_gpu_quantity_is_malformed() -> None:
    with pytest.raises(ValueError, match=r"nvidia\.com/gpu"):
        pod_gpus(pod_with(needs(limits={"nvidia.com/gpu": "lots"})), GPU_RESOURCES)


def test_a_pod_is_read_with_phase_node_labels_and_gpus() -> None:
    obj = make_pod("ns", "rc-head").owned_by_raycluster("rc").gpus(1).node("n1")
    pod = parse_pod(stored(obj.running(since=T0).build()), GPU_RESOURCES)
    assert (pod.name, pod.phase, pod.node, pod.gpus, pod.phase_running) == (
        "rc-head",
        "Running",
        "n1",
        1,
        True,
    )
    assert pod.labels["ray.io/cluster"] == "rc"


def test_a_pod_without_a_creation_time_is_malformed() -> None:
    obj = make_pod("ns", "p").build()
    obj["metadata"].pop("creationTimestamp", None)
    with pytest.raises(ValueError, match="creationTimestamp"):
        parse_pod(obj, GPU_RESOURCES)


@pytest.mark.parametrize(
    ("template", "one", "every"),
    [
        pytest.param("ray.io/cluster={name}", "ray.io/cluster=rc", "ray.io/cluster", id="ray"),
        pytest.param(
            "app==x,ray.io/cluster={name},!skip",
            "app=x,ray.io/cluster=rc,!skip",
            "app=x,ray.io/cluster,!skip",
            id="extra-requirements-kept",
        ),
        pytest.param("job={name},tier!=batch", "job=rc,tier!=batch", "job,tier!=batch", id="not"),
    ],
)
def test_a_pod_selector_selects_one_owner_or_every_owner(
    template: str, one: str, every: str
) -> None:
    selector = PodSelector.parse(template)
    assert (selector.for_owner("rc"), selector.across_owners()) == (one, every)


def test_a_pod_selector_matches_labels_for_one_owner() -> None:
    selector = PodSelector.parse("ray.io/cluster={name},!skip")
    assert selector.matches({"ray.io/cluster": "rc"}, owner="rc")
    assert not selector.matches({"ray.io/cluster": "other"}, owner="rc")
    assert not selector.matches({"ray.io/cluster": "rc", "skip": ""}, owner="rc")


@pytest.mark.parametrize(
    ("template", "label"),
    [
        ("ray.io/cluster={name},!skip", ("ray.io/cluster", "rc")),
        ("app=x,job==pre-{name}", ("job", "pre-rc")),
        ("!skip,app!={name}", None),
    ],
)
def test_a_pod_selector_names_the_label_its_owners_pods_carry(
    template: str, label: tuple[str, str] | None
) -> None:
    assert PodSelector.parse(template).owner_label("rc") == label


def test_a_pod_tree_selects_as_matching_every_pod_would() -> None:
    labels = [
        {"ray.io/cluster": "rc", "team": "a"},
        {"ray.io/cluster": "other", "team": "a"},
        {"ray.io/cluster": "rc"},
        {"team": "a"},
        {"ray.io/cluster": "rc", "team": "a", "skip": ""},
        {"team": "a", "ray.io/cluster": "rc"},
    ]
    found = FoundPods()
    for at, kept in enumerate(labels):
        found.add("ns", PodInfo(name=f"p{at}", phase="Running", created_at=T0, gpus=1, labels=kept))
    tree = PodTree(found, Links())
    selector = PodSelector.parse("team=a,ray.io/cluster={name},!skip")

    selected = {
        owner: [p.name for p in tree.selected("ns", selector, owner)] for owner in ("rc", "other")
    }

    assert selected == {"rc": ["p0", "p5"], "other": ["p1"]}


def test_set_based_pod_selectors_are_refused() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        PodSelector.parse("ray.io/cluster in (a,b)")


def test_only_the_controller_reference_is_the_owner() -> None:
    rc = make_raycluster("ns", "rc").build()
    workload = make_workload_for(rc).build()
    workload["metadata"]["ownerReferences"].insert(
        0, {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u"}
    )
    owner = controller_owner(workload)
    assert owner == OwnerRef("ray.io/v1", "RayCluster", "rc", rc["metadata"]["uid"])


def test_an_admitted_v1beta2_workload_is_read_with_its_owner() -> None:
    rc = make_raycluster("ns", "rc").gpu_worker(replicas=2, gpus=1).priority_class("dev").build()
    obj = make_workload_for(rc).queue("user-queue").admitted(at=T0, cluster_queue="cq").build()

    info = parse_workload(stored(obj), owner=rc)

    assert (info.ref.namespace, info.queue, info.cluster_queue) == ("ns", "user-queue", "cq")
    assert (info.admitted, info.admitted_at, info.active) == (True, T0, True)
    assert (info.expected_pods, info.priority_class) == (3, "dev")
    assert info.owner is not None and info.owner.kind == "RayCluster"
    assert info.owner_labels["kueue.x-k8s.io/priority-class"] == "dev"


def test_a_v1beta1_workload_names_its_priority_class_directly() -> None:
    obj = make_workload("ns", "wl").pod_set("main").priority_class("urgent").build(KUEUE_V1BETA1)
    assert parse_workload(stored(obj)).priority_class == "urgent"


def test_without_a_workload_priority_the_owners_label_names_it() -> None:
    rc = make_raycluster("ns", "rc").priority_class("from-owner").build()
    obj = make_workload("ns", "wl").owned_by(rc).pod_set("head").build()
    assert parse_workload(stored(obj), owner=rc).priority_class == "from-owner"


def test_a_pending_workload_expects_its_requested_pods_and_has_no_admission_time() -> None:
    obj = make_workload("ns", "wl").pod_set("head").pod_set("w", count=4).build()
    info = parse_workload(stored(obj))
    assert (info.admitted, info.admitted_at, info.expected_pods) == (False, None, 5)


def test_a_finished_workload_is_not_admitted_though_kueue_keeps_its_admitted_condition() -> None:
    """Kueue adds Finished=True and leaves Admitted=True and the admission in place (kueue
    pkg/workload/finish/finish.go, SetFinishedCondition; its cache drops the Workload's quota
    usage): its quota is released, so it is neither judged nor acted on."""
    obj = make_workload("ns", "wl").pod_set("w").admitted(at=T0).finished(at=T1).build()
    info = parse_workload(stored(obj))
    assert (info.admitted, info.admitted_at, info.finished_at) == (False, None, T1)


def test_admitted_counts_win_over_requested_counts() -> None:
    obj = make_workload("ns", "wl").pod_set("w", count=4).admitted(at=T0).build()
    obj["status"]["admission"]["podSetAssignments"][0]["count"] = 2  # partial admission
    assert parse_workload(stored(obj)).expected_pods == 2


def test_a_deactivated_workload_reports_why_and_when_it_was_evicted() -> None:
    obj = make_workload("ns", "wl").pod_set("w").active(False).evicted(at=T0).build()
    info = parse_workload(stored(obj))
    assert (info.active, info.admitted, info.evicted_reason) == (False, False, "InactiveWorkload")
    assert info.evicted_at == T0


def test_a_workload_without_a_namespace_is_malformed() -> None:
    obj = make_workload("ns", "wl").pod_set("w").build()
    del obj["metadata"]["namespace"]
    with pytest.raises(KeyError):
        parse_workload(stored(obj))


@pytest.mark.parametrize(
    ("data", "pauses"),
    [
        pytest.param({}, Pauses(), id="no-key-no-pause"),
        pytest.param({"pauses": '{"everything": true}'}, Pauses(everything=True), id="all"),
        pytest.param(
            {"pauses": '{"namespaces": ["a", "b"]}'},
            Pauses(namespaces=frozenset({"a", "b"})),
            id="some-namespaces",
        ),
    ],
)
def test_pauses_are_read_from_the_runtime_state(data: dict[str, str], pauses: Pauses) -> None:
    assert pauses_from_data(data) == pauses


def test_pauses_written_read_back_the_same() -> None:
    pauses = Pauses(everything=False, namespaces=frozenset({"b", "a"}))
    data = pauses_to_data(pauses)
    assert data == {"pauses": '{"everything": false, "namespaces": ["a", "b"]}'}
    assert pauses_from_data(data) == pauses


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("not json", id="not-json"),
        pytest.param('{"everything": "yes"}', id="not-a-bool"),
        pytest.param('{"namespaces": "a,b"}', id="not-a-list"),
    ],
)
def test_garbled_pauses_are_malformed(text: str) -> None:
    with pytest.raises(ValueError):
        pauses_from_data({"pauses": text})


def test_an_event_names_its_object_and_the_reporting_component() -> None:
    now = T0 + timedelta(microseconds=5)
    owner = OwnerRef("ray.io/v1", "RayCluster", "rc", "uid-1")

    event = event_for(owner, namespace="ns", reason="IdleGPUDeactivated", message="m", now=now)

    assert event["involvedObject"] == {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "name": "rc",
        "namespace": "ns",
        "uid": "uid-1",
    }
    assert event["metadata"]["name"].startswith("rc.")
    assert (event["type"], event["source"], event["count"]) == (
        "Normal",
        {"component": "idle-gpu-autoscaler"},
        1,
    )
    assert (event["firstTimestamp"], event["eventTime"]) == (
        "2026-03-01T12:00:00Z",
        "2026-03-01T12:00:00.000005Z",
    )


# Kueue's own messages (kubernetes-sigs/kueue at ff69552e): pkg/scheduler/preemption/
# preemption.go `preemptionMessage` writes "Preempted to accommodate a workload (UID: <uid>,
# JobUID: <job uid>) due to <reason>; preemptor path: ...; preemptee path: ...", "UNKNOWN"
# for a missing UID; `IssuePreemptions` sets Evicted=True reason Preempted (pkg/workload/evict)
# and Preempted=True with the preemption reason (pkg/workload/workload.go
# SetPreemptedCondition); once admitted again, Preempted=False reason QuotaReserved,
# "Previously: ..." (test/integration/singlecluster/scheduler/preemption_test.go).
HIERARCHICAL = (  # preemption_hierarchical_test.go, "preempt with hierarchical advantage"
    "Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation "
    "within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing"
)
NO_UID = (  # preemption_test.go TestPreemptionMessage, its first case
    "Preempted to accommodate a workload (UID: UNKNOWN, JobUID: UNKNOWN) due to UNKNOWN; "
    "preemptor path: UNKNOWN; preemptee path: UNKNOWN"
)


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        pytest.param(
            [
                ("Evicted", True, "Preempted", HIERARCHICAL),
                ("Preempted", True, "InCohortReclamation", HIERARCHICAL),
            ],
            ("wl-in", "InCohortReclamation"),
            id="both-conditions-the-preempted-reason-wins",
        ),
        pytest.param(
            [("Evicted", True, "Preempted", HIERARCHICAL)],
            ("wl-in", "Preempted"),
            id="evicted-preempted-alone",
        ),
        pytest.param(
            [("Evicted", True, "Preempted", NO_UID), ("Preempted", True, "InClusterQueue", NO_UID)],
            ("", "InClusterQueue"),
            id="uid-unknown-names-nobody",
        ),
        pytest.param(
            [("Preempted", False, "QuotaReserved", f"Previously: {HIERARCHICAL}")],
            None,
            id="admitted-again-previously-is-no-preemption",
        ),
        pytest.param(
            [("Evicted", True, "PodsReadyTimeout", "Exceeded the PodsReady timeout")],
            None,
            id="another-eviction-is-no-preemption",
        ),
    ],
)
def test_kueues_preemption_is_read_from_its_conditions(
    conditions: list[tuple[str, bool, str, str]], expected: tuple[str, str] | None
) -> None:
    builder = make_workload("ns", "wl").pod_set("w")
    for kind, status, reason, message in conditions:
        builder.condition(kind, at=T1, status=status, reason=reason, message=message)
    found = parse_workload(stored(builder.build())).preemption
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert (found.preemptor_uid, found.reason, found.at) == (*expected, T1)
