"""SuspendActuator against the in-process test API server: what each write sends, and that
reactivating restores exactly what was there."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from autoscaler.adapters.kuberay.actuator import SuspendActuator
from autoscaler.adapters.kuberay.fleet import FleetReader
from autoscaler.adapters.kuberay.source import ListedRayClusters
from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kubernetes.resources import ALLOWED_CALLS, RAYCLUSTERS
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.core.errors import Conflict
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.management import Manager
from autoscaler.settings.tree import ClusterSettings
from tests.support.builders import make_raycluster
from tests.support.kube_server import KubeServer
from tests.support.ray_rig import NOW, FixedClock, client_of, emptied, put_raycluster

SETTINGS = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")
AUDIT = DeactivationAudit(
    at=NOW, reason="idle for 60m", peak=0.01, threshold=0.05, policy="threshold 5%, window 1h"
)
RC = "/apis/ray.io/v1/namespaces/team-a/rayclusters/rc"


@pytest.fixture(scope="module")
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        yield running


@pytest.fixture
def kube(server: KubeServer) -> Iterator[KubeServer]:
    yield emptied(server)
    assert server.errors == []


@pytest.fixture
def actuator(kube: KubeServer) -> SuspendActuator:
    return SuspendActuator(client=client_of(kube), clock=FixedClock())


def row(kube: KubeServer, name: str = "rc") -> WorkloadInfo:
    """The RayCluster's row as the reader gives it before acting (a fresh read)."""
    client = client_of(kube)
    reader = FleetReader(
        kueue=KueueCluster(client=client, settings=SETTINGS, read_kueue=False),
        rayclusters=ListedRayClusters(
            client=client, settings=SETTINGS, logger=logging.getLogger("tests.kuberay")
        ),
        enabled=frozenset({Manager.KUBERAY, Manager.KAI}),
    )
    found = reader.get_workload(WorkloadRef("team-a", name))
    assert found is not None
    return found


def stored(kube: KubeServer, name: str = "rc") -> dict[str, Any]:
    return kube.store.get("rayclusters.ray.io", name=name, namespace="team-a")


def writes(kube: KubeServer) -> list[Any]:
    return [(r.method, r.path, r.body) for r in kube.requests.writes()]


def created(kube: KubeServer, raycluster: dict[str, Any]) -> dict[str, Any]:
    """Created as KubeRay's users create it, by a client allowed to (this service is not)."""
    client = KubeClient(
        api_client_for(kube.configuration()),
        timeout=timedelta(seconds=5),
        allowed=ALLOWED_CALLS | {("ray.io", "rayclusters", "create")},
    )
    client.create(RAYCLUSTERS, raycluster, namespace="team-a")
    kube.requests.clear()
    return stored(kube)


def test_deactivate_annotates_then_sends_exactly_the_suspend(
    kube: KubeServer, actuator: SuspendActuator
) -> None:
    put_raycluster(kube, make_raycluster("team-a", "rc"))
    found = row(kube)
    actuator.deactivate(found, AUDIT)
    (annotate, suspend) = writes(kube)
    assert annotate[:2] == ("PATCH", RC)
    assert annotate[2] == {
        "metadata": {
            "annotations": {**AUDIT.annotations(), keys.SUSPEND_WAS: "absent"},
            "resourceVersion": found.resource_version,
        }
    }
    assert suspend == ("PATCH", RC, {"spec": {"suspend": True}})
    assert stored(kube)["spec"]["suspend"] is True


@pytest.mark.parametrize(
    "suspend_before",
    [pytest.param(None, id="absent-stays-absent"), pytest.param(False, id="false-stays-false")],
)
def test_reactivate_restores_exactly_what_was_there(
    kube: KubeServer, actuator: SuspendActuator, suspend_before: bool | None
) -> None:
    builder = make_raycluster("team-a", "rc").gpu_worker(replicas=2, gpus=1)
    if suspend_before is not None:
        builder.suspended(suspend_before)
    before = created(kube, builder.build())  # through the API: defaulted as it will stay
    actuator.deactivate(row(kube), AUDIT)
    actuator.reactivate(row(kube), {keys.REACTIVATED_AT: "2026-03-01T14:00:00Z"})
    after = stored(kube)
    assert after["spec"] == before["spec"]
    assert keys.SUSPEND_WAS not in after["metadata"]["annotations"]
    assert after["metadata"]["annotations"][keys.REACTIVATED_AT] == "2026-03-01T14:00:00Z"


def test_a_refused_suspend_takes_its_annotations_back(
    kube: KubeServer, actuator: SuspendActuator
) -> None:
    put_raycluster(kube, make_raycluster("team-a", "rc"))
    found = row(kube)
    kube.faults.fail_next(
        "PATCH", RC, status=422, when=lambda r: r.body == {"spec": {"suspend": True}}
    )
    with pytest.raises(Exception, match="injected failure 422"):
        actuator.deactivate(found, AUDIT)
    annotations = stored(kube)["metadata"].get("annotations") or {}
    assert not any(key.startswith(keys.PREFIX) for key in annotations)
    assert "suspend" not in stored(kube)["spec"]


def test_a_refused_suspend_gives_back_an_earlier_deactivations_annotations(
    kube: KubeServer, actuator: SuspendActuator
) -> None:
    earlier = {keys.DEACTIVATED_AT: "2026-02-01T09:00:00Z", keys.DEACTIVATED_REASON: "idle"}
    builder = make_raycluster("team-a", "rc")
    for key, value in earlier.items():
        builder.annotation(key, value)
    put_raycluster(kube, builder)
    kube.faults.fail_next(
        "PATCH", RC, status=422, when=lambda r: r.body == {"spec": {"suspend": True}}
    )
    with pytest.raises(Exception, match="injected failure 422"):
        actuator.deactivate(row(kube), AUDIT)
    annotations = stored(kube)["metadata"]["annotations"]
    assert {k: v for k, v in annotations.items() if k.startswith(keys.PREFIX)} == earlier


def test_reactivating_a_raycluster_whose_suspend_was_says_true_is_refused(
    kube: KubeServer, actuator: SuspendActuator
) -> None:
    """This service never suspends a suspended RayCluster, so a "true" is not ours: undoing
    it would answer OK and leave it suspended."""
    builder = make_raycluster("team-a", "rc").suspended().annotation(keys.SUSPEND_WAS, "true")
    put_raycluster(kube, builder, running=False)
    found = row(kube)
    with pytest.raises(Conflict, match="never written by this service"):
        actuator.reactivate(found, {keys.REACTIVATED_AT: "2026-03-01T14:00:00Z"})
    assert writes(kube) == []
    assert stored(kube)["spec"]["suspend"] is True


def test_reactivating_a_raycluster_suspended_by_someone_else_is_refused(
    kube: KubeServer, actuator: SuspendActuator
) -> None:
    put_raycluster(kube, make_raycluster("team-a", "rc").suspended(), running=False)
    found = row(kube)
    assert not found.active
    with pytest.raises(Conflict, match="not suspended by this service"):
        actuator.reactivate(found, {keys.REACTIVATED_AT: "2026-03-01T14:00:00Z"})
    assert writes(kube) == []


def test_a_raycluster_changed_since_read_is_not_suspended(
    kube: KubeServer, actuator: SuspendActuator
) -> None:
    put_raycluster(kube, make_raycluster("team-a", "rc"))
    found = row(kube)
    kube.store.patch(
        "rayclusters.ray.io",
        name="rc",
        namespace="team-a",
        patch={"metadata": {"labels": {"a": "b"}}},
    )
    with pytest.raises(Conflict):
        actuator.deactivate(found, AUDIT)
    assert writes(kube) == []


def test_announce_is_one_event_on_the_raycluster(
    kube: KubeServer, actuator: SuspendActuator
) -> None:
    put_raycluster(kube, make_raycluster("team-a", "rc"))
    actuator.announce(row(kube), reason="IdleGPUDeactivated", message="idle for 60m")
    (event,) = [body for method, _, body in writes(kube) if method == "POST"]
    assert event["involvedObject"]["kind"] == "RayCluster"
    assert event["involvedObject"]["name"] == "rc"


def test_delete_owner_deletes_the_raycluster_only_while_it_is_the_one_read(
    kube: KubeServer, actuator: SuspendActuator
) -> None:
    put_raycluster(kube, make_raycluster("team-a", "rc"))
    found = row(kube)
    actuator.delete_owner(found)
    (delete,) = writes(kube)
    assert delete[:2] == ("DELETE", RC)
    assert delete[2]["preconditions"] == {"uid": found.uid}
