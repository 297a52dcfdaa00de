"""The RayCluster and RayJob builders of ISSUE 17 (plain KubeRay, KAI Scheduler, a RayJob's
cluster, Kueue without the queue label) build what the upstream CRDs accept, and the pods
tests/support/kuberay_emulator.py makes for them are valid pods that keep what KAI and the
service read from them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import kubernetes_validate
import pytest

from tests.support.builders import (
    GPU,
    KAI_FRACTION,
    KAI_PRIORITY_LABEL,
    KAI_QUEUE_LABEL,
    ORIGIN_NAME_LABEL,
    QUEUE_LABEL,
    make_raycluster,
    make_rayjob,
    make_workload_for,
)
from tests.support.crd_validation import assert_valid
from tests.support.kuberay_emulator import kuberay_pods

T0 = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)
JOB = make_rayjob("ns", "job").head(gpus=1).gpu_worker(replicas=1).queue("user-queue")
KAI = make_raycluster("ns", "kai").head(gpus=1).kai_queue("team-a").kai_priority("train")
UNLABELLED = make_raycluster("ns", "unlabelled").head(gpus=1).build()


def fraction(*, workers: int = 0) -> dict[str, Any]:
    """KAI's GPU sharing: half a GPU per pod by annotation, no GPU request."""
    builder = make_raycluster("ns", "shared").head(gpus=1).kai_queue("team-a")
    if workers:
        builder.gpu_worker(replicas=workers)
    return builder.gpu_fraction("0.5").build()


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(make_raycluster("ns", "p").head(gpus=1).build(), id="plain-suspend-absent"),
        pytest.param(make_raycluster("ns", "f").suspended(False).build(), id="suspend-false"),
        pytest.param(make_raycluster("ns", "t").suspended().build(), id="suspended"),
        pytest.param(KAI.build(), id="kai-labelled"),
        pytest.param(fraction(workers=1), id="kai-gpu-fraction"),
        pytest.param(
            make_raycluster("ns", "p").head_priority_class("inference").build(),
            id="pod-priority-class",
        ),
        pytest.param(JOB.build(), id="rayjob"),
        pytest.param(JOB.raycluster().build(), id="rayjob-owned-raycluster"),
        pytest.param(make_workload_for(JOB.build()).build(), id="rayjob-workload"),
        pytest.param(
            make_workload_for(UNLABELLED).queue("user-queue").build(),
            id="workload-of-an-unlabelled-raycluster",
        ),
    ],
)
def test_built_ray_objects_match_the_upstream_crds(obj: dict[str, Any]) -> None:
    assert_valid(obj)


def test_a_kai_raycluster_carries_kais_queue_and_priority_labels_and_no_kueue_label() -> None:
    labels = KAI.build()["metadata"]["labels"]
    assert labels == {KAI_QUEUE_LABEL: "team-a", KAI_PRIORITY_LABEL: "train"}


def test_a_rayjobs_raycluster_is_controlled_by_the_job_and_says_where_it_came_from() -> None:
    job, cluster = JOB.build(), JOB.raycluster().build()
    [owner] = cluster["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == (
        "RayJob",
        job["metadata"]["uid"],
        True,
    )
    assert cluster["metadata"]["labels"][ORIGIN_NAME_LABEL] == "job"
    assert QUEUE_LABEL not in cluster["metadata"]["labels"]  # the job carries it
    assert cluster["spec"] == job["spec"]["rayClusterSpec"]


def test_the_workload_of_a_rayjob_is_owned_by_the_job_with_its_clusters_pod_sets() -> None:
    workload = make_workload_for(JOB.build()).build()
    assert workload["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    assert [p["name"] for p in workload["spec"]["podSets"]] == ["head", "workers"]
    assert workload["spec"]["queueName"] == "user-queue"


def test_the_workload_of_an_unlabelled_raycluster_references_it_and_the_cluster_stays_bare() -> (
    None
):
    workload = make_workload_for(UNLABELLED).queue("user-queue").build()
    assert workload["metadata"]["ownerReferences"][0]["uid"] == UNLABELLED["metadata"]["uid"]
    assert "labels" not in UNLABELLED["metadata"]


def test_emulated_kuberay_pods_are_valid_and_keep_the_templates_annotations() -> None:
    pods = kuberay_pods(fraction(workers=2), now=T0)
    assert [p["metadata"]["name"] for p in pods] == [
        "shared-head",
        "shared-workers-worker-0",
        "shared-workers-worker-1",
    ]
    for pod in pods:
        kubernetes_validate.validate(pod, kubernetes_validate.latest_version(), strict=True)
        assert pod["metadata"]["annotations"] == {KAI_FRACTION: "0.5"}
        assert pod["metadata"]["labels"]["ray.io/cluster"] == "shared"
        resources = [c["resources"] for c in pod["spec"]["containers"]]
        assert all(GPU not in r["requests"] and GPU not in r["limits"] for r in resources)


def test_emulated_pods_of_a_rayjobs_cluster_name_the_cluster_not_the_job() -> None:
    """As KubeRay does (ray-operator/controllers/ray/rayjob_controller.go
    constructRayClusterForRayJob puts `ray.io/originated-from-*` on the RayCluster;
    common/pod.go labelPod gives its pods `ray.io/cluster`, and the RayCluster is their
    controller): a RayJob's pods are found through its RayCluster, never by the job's name."""
    cluster = JOB.raycluster().build()
    assert cluster["metadata"]["labels"][ORIGIN_NAME_LABEL] == "job"
    for pod in kuberay_pods(cluster, now=T0):
        meta = pod["metadata"]
        assert ORIGIN_NAME_LABEL not in meta["labels"]
        assert meta["labels"]["ray.io/cluster"] == cluster["metadata"]["name"]
        [owner] = meta["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["controller"]) == (
            "RayCluster",
            cluster["metadata"]["name"],
            True,
        )
