"""An admin's "deactivate now" never stops a workload the service must leave alone (ISSUE 17):
a RayJob's RayCluster (the RayJob's to stop) and a KAI RayCluster on fractional GPUs are
refused with a 409 naming why, and nothing is written to the cluster."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from tests.api.rig import ApiRig
from tests.support.builders import RayClusterBuilder, make_pod, make_raycluster


@pytest.fixture
def rig() -> Iterator[ApiRig]:
    with ApiRig(suspending=("kai", "kuberay")) as running:
        yield running
    assert running.kube.errors == []


def put_running(rig: ApiRig, builder: RayClusterBuilder, *, fraction: str | None = None) -> None:
    """The RayCluster and its one GPU pod, running for 3 hours; `fraction`: the pod asks KAI
    for a share of a GPU instead."""
    raycluster = rig.kube.store.put(builder.build())
    name = raycluster["metadata"]["name"]
    pod = make_pod("team-a", f"{name}-head").owned_by_raycluster(raycluster)
    pod = pod.annotation("gpu-fraction", fraction) if fraction else pod.gpus(1)
    rig.kube.store.put(pod.running(since=rig.now - timedelta(hours=3)).build())
    rig.usage.peaks[("team-a", f"{name}-head")] = (0.0, 1)


def is_review(path: str) -> bool:
    """The caller's token and rights checked: no write to the cluster's objects."""
    return path.endswith(("/tokenreviews", "/subjectaccessreviews"))


@pytest.mark.parametrize(
    ("name", "builder", "fraction", "why"),
    [
        pytest.param(
            "job-rc",
            make_raycluster("team-a", "job-rc").owned_by_rayjob("train"),
            None,
            "controlled by RayJob train",
            id="rayjob-owned-raycluster",
        ),
        pytest.param(
            "shared-rc",
            make_raycluster("team-a", "shared-rc").kai_queue("research").gpu_fraction("0.5"),
            "0.5",
            "KAI fractional GPUs",
            id="kai-fractional-gpus",
        ),
    ],
)
def test_an_admins_deactivate_of_a_hands_off_raycluster_is_a_409_and_writes_nothing(
    rig: ApiRig, name: str, builder: RayClusterBuilder, fraction: str | None, why: str
) -> None:
    put_running(rig, builder.head(gpus=1), fraction=fraction)
    [row] = rig.cycle().workloads
    assert row.info.hands_off is not None
    rig.kube.requests.clear()
    response = rig.http.post(
        f"/api/v1/workloads/team-a/{name}/deactivate",
        json={"reason": "free the GPUs"},
        headers=rig.as_user("admin"),
    )
    assert response.status_code == 409
    assert why in response.json()["detail"]
    assert [r.path for r in rig.kube.requests.writes() if not is_review(r.path)] == []
    assert "suspend" not in rig.owner("team-a", name)["spec"]
