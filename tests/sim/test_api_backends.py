"""The demo's API backends: the real app's writes and state, kept by the simulated cluster."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx
import pytest

from autoscaler.compose.demo import (
    DEMO_USER,
    demo_tokens,
)
from autoscaler.core.errors import Conflict
from autoscaler.demo.scenarios import SCENARIOS
from autoscaler.demo.story import World, play
from autoscaler.domain import annotations as keys
from autoscaler.domain.access import Target
from autoscaler.domain.audit.records import AuditRecord, PauseNote
from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.sim.actuators import SimulatedActuator
from autoscaler.sim.clock import SimulatedClock
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.state import SimulatedRuntimeState
from tests.sim.test_sim_cluster import raycluster, two_gpu_cluster
from tests.support.demo_api import TOKEN, acting_world, world_api

ADMIN = Target("update", "", "configmaps", "idle-gpu-autoscaler", "idle-gpu-autoscaler-state")
NOTE = {keys.EXEMPT_UNTIL: "2026-03-02T12:00:00Z"}


def admitted(cluster: SimulatedCluster, clock: SimulatedClock) -> WorkloadInfo:
    ref = cluster.create(raycluster("first-raycluster"), now=clock.now())
    cluster.step(now=clock.now())
    return fresh(cluster, ref)


def fresh(cluster: SimulatedCluster, ref: WorkloadRef) -> WorkloadInfo:
    found = cluster.get_workload(ref)
    assert found is not None
    return found


def test_the_demo_token_is_an_admin_everywhere_and_no_other_token_is_anyone() -> None:
    tokens = demo_tokens(TOKEN, admin=ADMIN)
    anywhere = Target("patch", "ray.io", "rayclusters", "team-b", "rc")

    who = tokens.authenticate(TOKEN)

    assert who is not None and who.username == DEMO_USER  # its uid names the entry
    assert tokens.authorize(who, ADMIN).allowed and tokens.authorize(who, anywhere).allowed
    assert tokens.authenticate(TOKEN + "x") is None


def test_an_owner_annotation_lands_on_the_raycluster_and_a_workload_one_on_the_workload() -> None:
    cluster, clock = two_gpu_cluster()
    workload = admitted(cluster, clock)
    writes = SimulatedActuator(cluster=cluster, clock=clock)

    on_owner = writes.annotate_owner(workload, NOTE)
    on_workload = writes.annotate_workload(workload, {keys.EXEMPT_BY: "alice"})

    now = fresh(cluster, workload.ref)
    assert (str(on_owner), str(on_workload)) == (
        "RayCluster demo/first-raycluster",
        f"Workload demo/{workload.ref.name}",
    )
    assert now.owner_annotations == NOTE
    assert now.annotations == {keys.EXEMPT_BY: "alice"}


def test_reactivation_requeues_an_unchanged_workload_and_refuses_a_changed_one() -> None:
    cluster, clock = two_gpu_cluster()
    ref = admitted(cluster, clock).ref
    cluster.set_active(ref, active=False, now=clock.now())
    deactivated = fresh(cluster, ref)
    writes = SimulatedActuator(cluster=cluster, clock=clock)
    cluster.annotate(ref, {"someone": "else"}, now=clock.now())  # a write in between

    with pytest.raises(Conflict):
        writes.reactivate(deactivated, {keys.REACTIVATED_AT: "2026-03-02T10:05:00Z"})
    writes.reactivate(fresh(cluster, ref), {keys.REACTIVATED_AT: "2026-03-02T10:05:00Z"})

    back = fresh(cluster, ref)
    assert back.active and back.annotations[keys.REACTIVATED_AT] == "2026-03-02T10:05:00Z"
    assert keys.REACTIVATED_AT not in back.owner_annotations


def test_the_runtime_states_pauses_are_the_ones_the_cluster_reports_to_the_loop() -> None:
    cluster, _ = two_gpu_cluster()
    state = SimulatedRuntimeState(cluster=cluster, audit_limit=2)

    paused = state.change(lambda current: current.paused("team-a", _note()))
    state.record(*(_record(n) for n in range(3)))

    assert cluster.read_pauses().namespaces == frozenset({"team-a"}) == paused.pauses.namespaces
    assert [r.reason for r in state.read().audit] == ["2", "1"]  # newest first, bounded
    assert state.read().pauses == cluster.read_pauses()


@pytest.fixture
def world() -> World:
    return acting_world(SCENARIOS["two-clusters"], logger=logging.getLogger("test-demo-api"))


@pytest.fixture
def api(world: World) -> Iterator[httpx.Client]:
    with world_api(world, logger=logging.getLogger("test-demo-api")) as client:
        yield client


def test_a_pause_set_through_the_demos_api_keeps_the_loop_from_acting(
    world: World, api: httpx.Client
) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}

    paused = api.post("/api/v1/pause", json={"reason": "watching only"}, headers=auth)
    refused = api.post("/api/v1/resume", json={"reason": "no"}, headers={"Authorization": "x"})
    outcome = play(world)

    assert paused.status_code == 200 and paused.json()["servicePaused"] is True
    assert refused.status_code == 401
    assert outcome.audits == ()  # the first RayCluster went idle, and stayed
    assert {row.decision.state.value for row in outcome.final.workloads} >= {"paused"}
    assert api.get("/api/v1/decisions", headers=auth).json()["items"][0]["action"] == "pause"


def _note() -> PauseNote:
    return PauseNote(by="alice", reason="demo", at=SCENARIOS["two-clusters"].start)


def _record(n: int) -> AuditRecord:
    at = SCENARIOS["two-clusters"].start.replace(minute=n)
    return AuditRecord(at=at, actor="alice", action="exempt", target="demo/rc", reason=str(n))
