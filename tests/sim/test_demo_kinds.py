"""The `many-kinds` demo story: a Notebook, a PyTorchJob hung at 0 %, an idle LeaderWorkerSet
and a busy RayCluster under one quota, a PyTorchJob waiting. Each is judged on its own GPUs;
the idle ones are warned 15 minutes ahead (the product's `warnBefore`) and deactivated when
their 60-minute window completes; the notebook's stop is a requeue (its pod comes back as a
new Workload, queued behind the waiter: kueue pkg/controller/jobs/pod/pod_controller.go,
Stop; test/integration/singlecluster/controller/jobs/pod/pod_controller_test.go "Should stop
the single pod with the queue name"), the job's and the server's last; the waiter is
admitted in the minute the last stop frees its 8 GPUs."""

from __future__ import annotations

from datetime import timedelta

import pytest

from autoscaler.demo.run import DemoRun
from autoscaler.demo.scenarios import SCENARIOS
from autoscaler.domain.models import State
from autoscaler.domain.policy.owners import KNOWN_OWNERS
from autoscaler.settings.rules import enabled_owner_kinds
from tests.support import demo_runs

NAME = "many-kinds"
NOTEBOOK = "Notebook ml/alice"
HUNG = "PyTorchJob ml/train-7"
SERVER = "LeaderWorkerSet ml/llm-server"
WAITER = "PyTorchJob ml/train-8"


def stamp(minute: int) -> str:
    return demo_runs.stamp(NAME, minute)


@pytest.fixture(scope="module")
def story() -> tuple[DemoRun, str]:
    return demo_runs.played(NAME)


def test_the_story_enables_the_opt_in_kinds_and_says_why() -> None:
    scenario = SCENARIOS[NAME]
    opt_in = {"Notebook", "PyTorchJob", "LeaderWorkerSet"}

    assert not any(KNOWN_OWNERS[kind].enabled for kind in opt_in)  # off by default
    assert opt_in | {"RayCluster"} <= enabled_owner_kinds(scenario.settings(dry_run=False))
    said = " ".join(text for _, text in scenario.notes)
    assert "a PyTorchJob's stop restarts its training, so the kind is opt-in" in said


def test_each_idle_owner_is_warned_then_deactivated_on_its_own_gpus(
    story: tuple[DemoRun, str],
) -> None:
    run, printed = story

    for name, warned_at, stopped_at in ((HUNG, 45, 60), (SERVER, 50, 65), (NOTEBOOK, 55, 70)):
        assert f"{stamp(warned_at)} warned {name}: stop planned at" in printed
        assert f"deactivated {name}:" not in printed.split(stamp(stopped_at))[0]
        assert f"{stamp(stopped_at)} deactivated {name}: idle for the whole window" in printed
    assert [entry.raycluster for entry in run.live.audits] == [HUNG, SERVER, NOTEBOOK]
    assert [entry.gpus for entry in run.live.audits] == [4, 2, 2]


def test_the_busy_raycluster_is_left_alone(story: tuple[DemoRun, str]) -> None:
    run, printed = story

    assert "ray-tune:" not in printed  # never warned, stopped, nor even turned idle
    (alone,) = [a for a in run.summary.left_alone if a.raycluster == "ray-tune"]
    assert alone.state is State.BUSY
    assert run.live.watched["ray-tune"].warnings == ()


def test_the_notebooks_stop_is_a_requeue_behind_the_waiter_the_others_last(
    story: tuple[DemoRun, str],
) -> None:
    run, printed = story
    requeue = f"{stamp(70)} {NOTEBOOK} yields its GPUs to the queue; it comes back when quota"
    admitted = f"{stamp(70)} Kueue admitted {WAITER}"

    assert requeue in printed and admitted in printed
    assert printed.index(f"{stamp(70)} deactivated {NOTEBOOK}") < printed.index(admitted)
    assert run.live.admitted_at[WAITER] == SCENARIOS[NAME].start + timedelta(minutes=70)
    assert "insufficient quota" in run.live.waiting[NOTEBOOK]  # queued again, behind it
    final = {run.live.names[row.ref]: row for row in run.live.final.workloads}
    stopped = run.live.audits[-1].workload
    assert final[NOTEBOOK].ref != stopped  # a new Workload for the pod made again
    assert final[NOTEBOOK].decision.state is State.PENDING
    assert final[NOTEBOOK].ref.name.startswith("pod-alice-0-")
    for lasting in (HUNG, SERVER):  # their Workloads stay, inactive
        assert final[lasting].decision.state is State.DEACTIVATED
        assert not final[lasting].info.active


def test_the_summary_says_the_waiter_came_in_sooner_than_in_dry_run(
    story: tuple[DemoRun, str],
) -> None:
    run, _ = story

    (sooner,) = run.summary.sooner
    assert sooner.raycluster == WAITER
    assert sooner.dry_run_admitted_at is None  # in dry-run nothing frees its 8 GPUs
    assert {r.raycluster for r in run.summary.reclaimed} == {HUNG, SERVER, NOTEBOOK}
