"""parse_raycluster: a RayCluster no Kueue Workload admits, read as a row of its own."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.adapters.kuberay.rayclusters import parse_raycluster, ray_pod
from autoscaler.adapters.kubernetes import objects
from autoscaler.adapters.kueue.context import NamespaceMeta
from autoscaler.domain.models import OwnerRef, State, WorkloadInfo
from autoscaler.domain.policy.claims import RayClusterFacts, claim
from autoscaler.domain.policy.management import Manager
from tests.support.builders import RayClusterBuilder, make_raycluster, timestamp
from tests.support.ray_rig import T0, ray_pods

BOTH = frozenset({Manager.KAI, Manager.KUBERAY})
TEAM = NamespaceMeta(labels={"team": "a"}, annotations={})


def read(
    builder: RayClusterBuilder, *, workers: int = 2, fraction: str | None = None
) -> WorkloadInfo:
    raycluster = builder.gpu_worker(replicas=workers, gpus=1).build()
    raycluster["metadata"].update(creationTimestamp=timestamp(T0), resourceVersion="7")
    pods = ray_pods(raycluster, workers=workers)
    if fraction is not None:  # KAI's share of a device: an annotation, no GPU request
        pods[-1]["metadata"]["annotations"] = {"gpu-fraction": fraction}
        pods[-1]["spec"]["containers"][0]["resources"] = {}
    facts = RayClusterFacts(
        labels=objects.labels_of(raycluster),
        annotations=objects.annotations_of(raycluster),
        controller=objects.controller_owner(raycluster),
        admitting_workload=None,
    )
    return parse_raycluster(
        raycluster,
        pods=[ray_pod(p, ["nvidia.com/gpu"]) for p in pods],
        claim=claim(facts, enabled=BOTH),
        namespace=TEAM,
    )


def facts_of(row: WorkloadInfo) -> dict[str, Any]:
    return {
        "manager": row.manager,
        "active": row.active,
        "admitted": row.admitted,
        "queue": row.queue,
        "cluster_queue": row.cluster_queue,
        "priority_class": row.priority_class,
        "usage": dict(row.admitted_usage),
        "hands_off": None if row.hands_off is None else row.hands_off.state,
    }


PLAIN = {
    "manager": Manager.KUBERAY,
    "active": True,
    "admitted": True,
    "queue": "",
    "cluster_queue": None,
    "priority_class": None,
    "usage": {},
    "hands_off": None,
}


@pytest.mark.parametrize(
    ("builder", "fraction", "expected"),
    [
        pytest.param(make_raycluster("team-a", "rc"), None, PLAIN, id="plain-kuberay"),
        pytest.param(
            make_raycluster("team-a", "rc").kai_queue("team-a").kai_priority("train"),
            None,
            {
                **PLAIN,
                "manager": Manager.KAI,
                "queue": "team-a",
                "cluster_queue": "kai/team-a",
                "priority_class": "train",
                "usage": {("kai", "nvidia.com/gpu"): 2},
            },
            id="kai-labelled-queue-and-priority-label",
        ),
        pytest.param(
            make_raycluster("team-a", "rc").head_priority_class("inference"),
            None,
            {**PLAIN, "priority_class": "inference"},
            id="plain-priority-from-the-head-template",
        ),
        pytest.param(
            make_raycluster("team-a", "rc").kai_queue("team-a"),
            "0.5",
            {
                **PLAIN,
                "manager": Manager.KAI,
                "queue": "team-a",
                "cluster_queue": "kai/team-a",
                "usage": {("kai", "nvidia.com/gpu"): 1},
                "hands_off": State.UNSUPPORTED,
            },
            id="fractional-gpus-are-unsupported",
        ),
        pytest.param(
            make_raycluster("team-a", "rc").owned_by_rayjob("job"),
            None,
            {**PLAIN, "hands_off": State.PROTECTED},
            id="rayjob-owned-is-a-protected-row",
        ),
        pytest.param(
            make_raycluster("team-a", "rc").suspended(),
            None,
            {**PLAIN, "active": False, "admitted": False},
            id="suspended-by-someone-else-is-inactive",
        ),
    ],
)
def test_a_raycluster_reads_as_its_manager_sees_it(
    builder: RayClusterBuilder, fraction: str | None, expected: dict[str, Any]
) -> None:
    assert facts_of(read(builder, fraction=fraction)) == expected


def test_the_row_is_the_raycluster_itself() -> None:
    row = read(make_raycluster("team-a", "rc").annotation("note", "x"), workers=3)
    uid = row.uid
    assert (str(row.ref), row.owner) == (
        "team-a/rc",
        OwnerRef("ray.io/v1", "RayCluster", "rc", uid),
    )
    assert row.expected_pods == 4  # the head and three workers
    assert (row.created_at, row.admitted_at, row.resource_version) == (T0, T0, "7")
    assert row.annotations == row.owner_annotations == {"note": "x"}
    assert (row.namespace_labels, row.gpus) == ({"team": "a"}, 3)


def test_fractional_gpus_are_named_with_the_pod_that_asks_for_them() -> None:
    row = read(make_raycluster("team-a", "rc").kai_queue("q"), fraction="0.5")
    assert row.hands_off is not None
    assert row.hands_off.reason == (
        "KAI fractional GPUs (gpu-fraction 0.5 on pod rc-worker-1) are not supported: never stopped"
    )


def test_a_rayjob_owned_raycluster_says_whose_it_is() -> None:
    row = read(make_raycluster("team-a", "rc").owned_by_rayjob("nightly"))
    assert row.hands_off is not None
    assert row.hands_off.reason == "controlled by RayJob nightly: never suspended on its own"
