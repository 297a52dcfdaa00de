"""The `kai` story (ISSUE 17) on the real service with the simulated adapters: the idle KAI
notebook is warned, then suspended; the reactivate route brings back exactly what was there;
the summary names the KAI clusters with their manager."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta

import httpx
import pytest

from autoscaler.demo.run import DemoOptions, DemoRun
from autoscaler.demo.scenarios import SCENARIOS, Arrival
from autoscaler.demo.story import World, play
from autoscaler.domain.annotations import SUSPEND_WAS
from autoscaler.domain.models import State, WorkloadRef
from autoscaler.domain.policy.management import Manager
from autoscaler.sim.cluster_pods import POD_START
from tests.sim.kai_builders import plain_spec
from tests.support.demo_api import TOKEN, acting_world, world_api
from tests.support.demo_runs import play_served

KAI = SCENARIOS["kai"]
NOTEBOOK = WorkloadRef("team-c", "kai-notebook")


def at(minute: float) -> datetime:
    return KAI.start + timedelta(minutes=minute)


def test_the_nodes_hold_the_gpus_of_a_plain_kuberay_cluster_as_of_a_kai_one() -> None:
    plain = Arrival(0, plain_spec(gpus=2), KAI.arrivals[0].profile)

    with_plain = replace(KAI, arrivals=(*KAI.arrivals, plain))

    assert with_plain.gpus == KAI.gpus + 2  # no Kueue quota counts them


@pytest.fixture(scope="module")
def run() -> tuple[DemoRun, str]:
    out = io.StringIO()
    played = play_served(DemoOptions(scenario="kai", speed=None, interactive=False), out=out)
    return played, out.getvalue()


def test_the_idle_kai_notebook_is_warned_then_suspended_when_its_window_completes(
    run: tuple[DemoRun, str],
) -> None:
    played, printed = run
    idle_window_completes = at(10 + 60)

    assert {e.raycluster: e.audit.at for e in played.live.audits} == {
        "kai-notebook": idle_window_completes
    }
    assert "[14:55 +55m] warned kai-notebook: stop planned at 15:10, in 15 min" in printed
    assert "[15:10 +70m] suspended kai-notebook: idle for the whole window" in printed
    suspended = played.live.final.find(NOTEBOOK)
    assert suspended is not None and suspended.info.manager is Manager.KAI
    assert (suspended.decision.state, suspended.decision.reason) == (
        State.DEACTIVATED,
        "stopped at 15:10 by rule default (spec.suspend is true)",
    )


def test_the_live_view_shows_the_kai_clusters_with_their_manager_and_queue(
    run: tuple[DemoRun, str],
) -> None:
    _, printed = run
    last = [line for line in printed.splitlines() if line.startswith("[15:20 +80m] kai-")]

    assert [" ".join(line.split()[2:]) for line in last] == [
        "kai-notebook (KAI Scheduler) team-c team-c -> kai/team-c 0/2 - suspended",
        "kai-shared-notebook (KAI Scheduler) team-c team-c -> kai/team-c 0/0 - unsupported",
    ]


def test_the_summary_names_the_suspended_kai_notebook_and_the_unsupported_one(
    run: tuple[DemoRun, str],
) -> None:
    played, printed = run

    (reclaimed,) = played.summary.reclaimed
    assert (reclaimed.raycluster, reclaimed.manager, reclaimed.gpus) == (
        "kai-notebook",
        Manager.KAI,
        2,
    )
    assert reclaimed.gpu_hours == pytest.approx(2 * 10 / 60)  # 15:10 to the end at 15:20
    alone = {a.raycluster: (a.manager, a.state) for a in played.summary.left_alone}
    assert alone == {
        "trainer": (Manager.KUEUE, State.BUSY),
        "kai-shared-notebook": (Manager.KAI, State.UNSUPPORTED),
    }
    assert "    kai-notebook (KAI Scheduler, suspended): 2 GPUs 15:10–15:20 (story end)" in printed
    assert (
        "    kai-shared-notebook (KAI Scheduler), now unsupported: KAI fractional GPUs" in printed
    )


def test_the_dry_run_replay_suspends_nothing(run: tuple[DemoRun, str]) -> None:
    played, _ = run

    assert played.replay.audits == ()
    row = played.replay.final.find(NOTEBOOK)
    assert row is not None and row.info.active


@pytest.fixture
def world() -> World:
    return acting_world(KAI, logger=logging.getLogger("test-demo-kai"))


@pytest.fixture
def api(world: World) -> Iterator[httpx.Client]:
    with world_api(world, logger=logging.getLogger("test-demo-kai")) as client:
        yield client


def test_reactivating_the_suspended_notebook_brings_back_exactly_what_was_there(
    world: World, api: httpx.Client
) -> None:
    play(world)  # kai-notebook is applied without spec.suspend, and suspended at minute 70
    suspended = world.cluster.rayclusters.get(NOTEBOOK)
    assert suspended is not None and suspended.suspend is True
    assert suspended.annotations[SUSPEND_WAS] == "absent"

    answer = api.post(
        "/api/v1/workloads/team-c/kai-notebook/reactivate",
        json={"reason": "back from lunch"},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    again = api.post(
        "/api/v1/workloads/team-c/kai-notebook/reactivate",
        json={"reason": "twice"},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )

    assert answer.status_code == 200, answer.text
    assert again.status_code == 409  # already active
    back = world.cluster.rayclusters.get(NOTEBOOK)
    assert back is not None and back.suspend is None and SUSPEND_WAS not in back.annotations
    world.clock.advance(POD_START)
    row = world.cluster.get_workload(NOTEBOOK)
    assert row is not None and row.admitted and row.gpus == 2
    decision = world.service.reconciler.run_once().find(NOTEBOOK)
    assert decision is not None and decision.decision.state is State.GRACE
