"""The `when-contended` demo story: idle clusters in a cohort stay up while nobody waits; a job
that does not fit arrives, and exactly the borrower whose freeing lets it in is warned, for it,
deactivated after the warning's 15 minutes (the product's `warnBefore`), and it is admitted."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import pytest

from autoscaler.demo.run import DemoRun
from autoscaler.demo.scenarios import SCENARIOS, Scenario
from autoscaler.domain.models import Action, Decision, State, WorkloadRef
from autoscaler.engine.cycle.reclaim import Reclaimer
from autoscaler.sim.clock import SimulatedClock
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.pods import GpuPool
from autoscaler.sim.queues import SimulatedQueues
from tests.support import demo_runs
from tests.support.domain_builders import A_DEFAULT_RULE

NAME = "when-contended"


def stamp(minute: int) -> str:
    return demo_runs.stamp(NAME, minute)


@pytest.fixture(scope="module")
def story() -> tuple[DemoRun, str]:
    return demo_runs.played(NAME)


def test_idle_clusters_in_the_cohort_are_left_running_while_nobody_waits(
    story: tuple[DemoRun, str],
) -> None:
    _, printed = story
    nobody = (
        "idle past the window, left running until contended: nobody waits that it would let "
        "in (rule lab-when-contended)"
    )

    assert f"{stamp(60)} eval-server: {nobody}" in printed
    assert f"{stamp(65)} bob-notebook: {nobody}" in printed
    assert f"{stamp(70)} carol-notebook: {nobody}" in printed
    assert "deactivated" not in printed.split(stamp(90))[0]


def test_the_waiting_job_gets_exactly_the_borrower_it_needs_warned_first_then_admitted(
    story: tuple[DemoRun, str],
) -> None:
    run, printed = story
    warned = f"{stamp(90)} warned bob-notebook for nightly-finetune, which waits: stop planned at"

    assert warned in printed
    assert "deactivated" not in printed.split(stamp(105))[0]  # not before the warning's 15 min
    assert f"{stamp(105)} deactivated bob-notebook for nightly-finetune, which waits: " in printed
    assert f"{stamp(105)} Kueue admitted nightly-finetune" in printed
    assert {entry.raycluster for entry in run.live.audits} == {"bob-notebook"}
    admitted = SCENARIOS[NAME].start + timedelta(minutes=105)
    assert run.live.admitted_at["nightly-finetune"] == admitted
    left = {a.raycluster for a in run.summary.left_alone}
    assert {"alice-notebook", "carol-notebook", "eval-server"} <= left


# The scenario's cluster judged at the engine's level, whatever the settings can say today.


def arrived(scenario: Scenario, *, until: float) -> tuple[SimulatedCluster, datetime]:
    """The scenario's cluster with every RayCluster due by minute `until` applied, as Kueue
    left it (nothing deactivated)."""
    now = scenario.start + timedelta(minutes=until)
    cluster = SimulatedCluster(
        kueue=scenario.kueue,
        gpus=GpuPool.for_gpus(scenario.gpus),
        clock=SimulatedClock(start=now, speed=None),
    )
    for arrival in sorted(scenario.arrivals, key=lambda a: a.minute):
        if arrival.minute <= until:
            at = scenario.start + timedelta(minutes=arrival.minute)
            cluster.create(arrival.spec, now=at)
            cluster.step(now=at)
    return cluster, now


def screened(cluster: SimulatedCluster, scenario: Scenario) -> dict[str, Decision]:
    """Every admitted cluster that its profile has gone idle is due; the reclaimer judges."""
    infos = [info for info in cluster.list_workloads() if info.admitted]
    idle_from = {"eval-server": 0, "bob-notebook": 5, "carol-notebook": 10}
    names = {info.ref: cluster.spec(info.ref).name for info in infos}
    decisions = [
        Decision(
            info.ref,
            State.IDLE,
            Action.DEACTIVATE,
            "idle",
            idle_since=scenario.start + timedelta(minutes=idle_from[names[info.ref]]),
            rule=A_DEFAULT_RULE,
        )
        if names[info.ref] in idle_from
        else Decision(info.ref, State.BUSY, Action.NONE, "busy", rule=A_DEFAULT_RULE)
        for info in infos
    ]
    reclaimer = Reclaimer(
        pending=SimulatedQueues(read=cluster.kueue), logger=logging.getLogger("test")
    )
    found, _ = reclaimer.screen(infos, decisions, contended=lambda d: d.state is State.IDLE)
    return {names[d.workload]: d for d in found}


def test_before_the_job_arrives_the_scenarios_idle_clusters_serve_nobody() -> None:
    scenario = SCENARIOS[NAME]
    cluster, _ = arrived(scenario, until=89)

    found = screened(cluster, scenario)

    assert {name for name, d in found.items() if d.action is Action.DEACTIVATE} == set()


def test_when_the_job_waits_only_the_longest_idle_borrowing_notebook_is_freed_for_it() -> None:
    scenario = SCENARIOS[NAME]
    cluster, _ = arrived(scenario, until=90)
    (waiter,) = (w.ref for w in cluster.kueue().workloads.values() if "finetune" in w.name)

    found = screened(cluster, scenario)

    freed = {name: d.beneficiary for name, d in found.items() if d.action is Action.DEACTIVATE}
    assert freed == {"bob-notebook": waiter}
    assert isinstance(waiter, WorkloadRef)
