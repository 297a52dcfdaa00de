"""KEDA and the usage classes (ISSUE 16): only idle for the whole window answers inactive;
loading and idle-held work is active, and a failed evidence signal is unknown, never inactive.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta

import pytest

from autoscaler.domain.models import Snapshot
from autoscaler.domain.usage.evidence import Signal
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.keda.answers import KedaAnswers
from autoscaler.keda.selectors import parse_selector
from autoscaler.keda.targets import Activity, Judgement, Judging, Target
from tests.keda.rig import FakeClock, make_answers
from tests.keda.snapshots import JUDGING, a_snapshot, gpu_pod
from tests.support.domain_builders import (
    NOW,
    THRESHOLD,
    WorkloadBuilder,
    a_workload,
    minutes_ago,
    usage,
)
from tests.support.evidence_builders import evidence

RC = Target("ml", workload="rc")
LLM = Target("ml", selector=parse_selector("app=llm"))


def rc(*, gpus: int = 1, started: float = 24 * 60) -> WorkloadBuilder:
    at = minutes_ago(started)
    builder = (
        a_workload("ml", "rc").cpu_pod("head", created=at).gpu_pod("rc-0", gpus=gpus, created=at)
    )
    return builder.admitted(at=at).created_at(at)


def judge(snapshot: Snapshot, target: Target = RC) -> Judgement:
    store = SnapshotStore()
    store.publish(snapshot)
    answers: KedaAnswers = make_answers(
        store, FakeClock(), profiles=(), logger=logging.getLogger("t")
    )
    return answers.judge(target)


LOADING = evidence().framebuffer("ml", "rc-0", uuid="GPU-a", since=minutes_ago(20))

CASES = [
    pytest.param(
        a_snapshot(
            rc(started=25).build(),
            usage_of=usage().gpu("ml", "rc-0", uuid="GPU-a", peak=0.02).seeing(LOADING.build()),
        ),
        Activity.ACTIVE,
        100.0,
        "loading since 11:40",
        id="loading-at-near-zero-compute-is-active-at-100",
    ),
    pytest.param(
        a_snapshot(
            rc(gpus=2).build(),
            usage_of=usage().gpu("ml", "rc-0", peak=0.9, last_busy=NOW).gpu("ml", "rc-0", peak=0.0),
        ),
        Activity.ACTIVE,
        90.0,
        "1 of 2 GPUs idle",
        id="idle-held-is-active-at-its-peak",
    ),
    pytest.param(
        a_snapshot(
            rc().build(),
            usage_of=usage()
            .gpu("ml", "rc-0", peak=0.0)
            .seeing(evidence().ray_tasks("ml", "head", since=minutes_ago(5)).build()),
        ),
        Activity.ACTIVE,
        100.0,
        "Ray tasks executing",
        id="ray-tasks-running-at-0-percent-gpu-is-active",
    ),
    pytest.param(
        a_snapshot(
            rc().build(),
            usage_of=usage()
            .gpu("ml", "rc-0", peak=0.0)
            .seeing(evidence().note("ml", "head", "driver attached").build()),
        ),
        Activity.INACTIVE,
        0.0,
        "idle for the whole window",
        id="an-idle-notebook-with-its-driver-attached-is-inactive",
    ),
    pytest.param(
        a_snapshot(
            rc().build(),
            usage_of=usage()
            .gpu("ml", "rc-0", peak=0.0)
            .seeing(evidence().failing(Signal.PCIE, "query timed out").build()),
        ),
        Activity.UNKNOWN,
        None,
        "evidence signal pcie failed",
        id="a-failed-evidence-signal-is-unknown-never-inactive",
    ),
]


@pytest.mark.parametrize(("snapshot", "activity", "value", "reason"), CASES)
def test_only_idle_for_the_whole_window_answers_inactive(
    snapshot: Snapshot, activity: Activity, value: float | None, reason: str
) -> None:
    judgement = judge(snapshot)

    assert judgement.activity is activity, judgement.reason
    assert reason in judgement.reason
    if value is not None:
        assert judgement.value == pytest.approx(value)
        assert (judgement.value > THRESHOLD * 100) is (activity is Activity.ACTIVE)


def test_selected_pods_that_are_loading_are_active() -> None:
    pod = gpu_pod("ml", "llm-0", labels={"app": "llm"}, created=minutes_ago(25))
    seen = evidence().framebuffer("ml", "llm-0", uuid="GPU-l", since=minutes_ago(20)).build()
    fleet = usage().gpu("ml", "llm-0", uuid="GPU-l", peak=0.01).seeing(seen)

    judgement = judge(a_snapshot(usage_of=fleet, pods=(pod,)), LLM)

    assert (judgement.activity, judgement.value) == (Activity.ACTIVE, 100.0)
    assert judgement.reason.startswith("loading since")


def test_a_rule_view_is_judged_with_that_rules_max_loading_and_grace() -> None:
    default = JUDGING.rules[-1]
    usage_rules = replace(default.usage, max_loading=timedelta(minutes=20))
    written = replace(default, name="lab", usage=usage_rules, grace_period=timedelta(minutes=5))
    judging = Judging((written, default))

    lab, profile = judging.under("lab"), judging.under("fast")

    assert (lab.usage.max_loading, lab.grace_period) == (
        timedelta(minutes=20),
        timedelta(minutes=5),
    )
    assert profile == default  # a legacy profile keeps the default rule's numbers
