"""Who manages each workload, over real HTTP (ISSUE 17): every view carries `manager`
(`kueue`, `kai`, `kuberay`), a RayCluster the service would suspend itself is a row of its own
named after the RayCluster, and `unsupported` (KAI's fractional GPUs) is a state like the others.

The rows of KAI and plain RayClusters come from another module's reader; here a cycle's
snapshot is republished with such a row beside Kueue's, and every answer is read from it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from autoscaler.domain.models import OwnerRef, State, WorkloadStatus
from autoscaler.domain.policy.management import HandsOff, Manager
from tests.api.rig import ApiRig
from tests.support.decision_builders import a_decision
from tests.support.domain_builders import a_workload

FRACTIONAL = "KAI fractional GPUs (gpu-fraction 0.5 on pod kai-rc-head) are not supported"


def raycluster_row(name: str, manager: Manager, *, state: State, reason: str) -> WorkloadStatus:
    """A RayCluster no Kueue Workload admits, as its reader makes it: the row is the
    RayCluster itself (its own owner)."""
    info = a_workload("team-a", name).gpu_pod(f"{name}-head").build()
    info = replace(
        info,
        manager=manager,
        owner=OwnerRef("ray.io/v1", "RayCluster", name, uid=info.uid),
        queue="research" if manager is Manager.KAI else "",
        hands_off=HandsOff(state, reason) if state is State.UNSUPPORTED else None,
    )
    decision = a_decision("team-a", name).build()
    return WorkloadStatus(info, replace(decision, state=state, reason=reason))


def publish_beside_kueue(rig: ApiRig, *rows: WorkloadStatus) -> None:
    snapshot = rig.cycle()
    rig.store.publish(replace(snapshot, workloads=(*snapshot.workloads, *rows)))


@pytest.fixture
def mixed(rig: ApiRig) -> ApiRig:
    """Alice's Kueue-admitted RayCluster, a KAI one with a fractional GPU, a plain idle one."""
    rig.add_raycluster("team-a", "alice-rc")
    publish_beside_kueue(
        rig,
        raycluster_row("kai-rc", Manager.KAI, state=State.UNSUPPORTED, reason=FRACTIONAL),
        raycluster_row("plain-rc", Manager.KUBERAY, state=State.IDLE, reason="idle for 61m"),
    )
    return rig


def test_every_workload_says_who_manages_it(mixed: ApiRig) -> None:
    items = mixed.reader.get("/api/v1/workloads").json()["items"]
    managers = {item["owner"]["name"]: item["manager"] for item in items}
    assert managers == {"alice-rc": "kueue", "kai-rc": "kai", "plain-rc": "kuberay"}


def test_a_kai_raycluster_with_fractional_gpus_is_reported_unsupported(mixed: ApiRig) -> None:
    item = mixed.reader.get("/api/v1/workloads/team-a/kai-rc").json()
    assert (item["name"], item["manager"], item["queue"]) == ("kai-rc", "kai", "research")
    assert (item["state"], item["action"]) == ("unsupported", "none")
    assert item["reason"] == FRACTIONAL
    assert item["owner"] == {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "name": "kai-rc",
        "display": "RayCluster team-a/kai-rc",
    }
    assert "Kueue" not in item["stopMeans"]  # KAI's row: the service suspends it itself


def test_unsupported_workloads_can_be_listed_by_state(mixed: ApiRig) -> None:
    items = mixed.reader.get("/api/v1/workloads", params={"state": "unsupported"}).json()
    assert [item["name"] for item in items["items"]] == ["kai-rc"]


def test_the_openapi_document_names_the_managers_and_the_unsupported_state(
    shared: ApiRig,
) -> None:
    schemas = shared.http.get("/openapi.json").json()["components"]["schemas"]
    view = schemas["WorkloadView"]["properties"]

    assert set(schemas["Manager"]["enum"]) == {"kueue", "kai", "kuberay"}
    assert "unsupported" in schemas["State"]["enum"]
    assert "`unsupported`" in view["state"]["description"]
    assert "spec.suspend" in view["manager"]["description"]
