"""The judgement table: what IsActive, GetMetrics and the metrics-api answer for a target."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from datetime import timedelta

import pytest

from autoscaler.domain.models import Pauses, PodRecord, Snapshot, State
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.keda.answers import KedaAnswers
from autoscaler.keda.selectors import parse_selector
from autoscaler.keda.targets import Activity, Judgement, Target
from tests.keda.rig import FakeClock, make_answers
from tests.keda.snapshots import a_snapshot, gpu_pod
from tests.support.domain_builders import (
    NOW,
    THRESHOLD,
    UsageBuilder,
    WorkloadBuilder,
    a_rule_named,
    a_workload,
    minutes_ago,
    usage,
)

RC = Target("ml", workload="rc")
LLM = Target("ml", selector=parse_selector("app=llm"))
FAST = Target("ml", workload="rc", profile="fast")
FAST_VIEW = {"fast": (timedelta(minutes=10), THRESHOLD)}


def rc(*, pod_phase: str = "Running", pod_created: int = 24 * 60) -> WorkloadBuilder:
    return a_workload("ml", "rc").gpu_pod("rc-0", phase=pod_phase, created=minutes_ago(pod_created))


def judge(snapshot: Snapshot | None, target: Target = RC) -> Judgement:
    store = SnapshotStore()
    if snapshot is not None:
        store.publish(snapshot)
    return answers_for(store).judge(target)


def answers_for(store: SnapshotStore) -> KedaAnswers:
    return make_answers(store, FakeClock(), profiles=("fast",), logger=logging.getLogger("t"))


def idle() -> UsageBuilder:  # a fresh builder each time: builders are mutable
    return usage().gpu("ml", "rc-0", peak=0.01)


def busy() -> UsageBuilder:
    return usage().gpu("ml", "rc-0", peak=0.8, last_busy=NOW)


CASES = [
    pytest.param(
        a_snapshot(rc().build(), usage_of=busy()),
        RC,
        Activity.ACTIVE,
        80.0,
        id="busy-is-active-at-its-peak",
    ),
    pytest.param(
        a_snapshot(rc().build(), usage_of=idle()),
        RC,
        Activity.INACTIVE,
        1.0,
        id="idle-all-window-is-inactive-at-its-peak",
    ),
    pytest.param(
        a_snapshot(
            rc().build(), usage_of=usage().gpu("ml", "rc-0", peak=0.6, last_busy=minutes_ago(20))
        ),
        RC,
        Activity.ACTIVE,
        60.0,
        id="busy-earlier-in-the-window-is-active-at-its-peak",
    ),
    pytest.param(
        a_snapshot(rc(pod_created=20).build(), usage_of=idle()),
        RC,
        Activity.ACTIVE,
        100.0,
        id="idle-since-a-recent-pod-start-is-active-at-100",
    ),
    pytest.param(
        a_snapshot(rc(pod_phase="Pending").build(), usage_of=idle()),
        RC,
        Activity.INACTIVE,
        0.0,
        id="no-running-pods-is-inactive-at-0",
    ),
    pytest.param(
        a_snapshot(rc().inactive().exempt().build()),
        RC,
        Activity.INACTIVE,
        0.0,
        id="deactivated-is-inactive-even-when-exempt",
    ),
    pytest.param(
        a_snapshot(rc().exempt().build(), usage_of=idle()),
        RC,
        Activity.ACTIVE,
        100.0,
        id="exempt-and-running-is-active-at-100",
    ),
    pytest.param(
        a_snapshot(rc().exempt_until(minutes_ago(-30)).build(), usage_of=idle()),
        RC,
        Activity.ACTIVE,
        100.0,
        id="exempt-until-later-is-active",
    ),
    pytest.param(
        a_snapshot(rc().exempt_until(minutes_ago(1)).build(), usage_of=idle()),
        RC,
        Activity.INACTIVE,
        1.0,
        id="an-expired-exemption-no-longer-holds",
    ),
    pytest.param(
        a_snapshot(rc(pod_phase="Pending").exempt().build()),
        RC,
        Activity.INACTIVE,
        0.0,
        id="exempt-without-running-pods-stays-inactive",
    ),
    pytest.param(
        a_snapshot(rc().build(), usage_of=idle(), pauses=Pauses(namespaces=frozenset({"ml"}))),
        RC,
        Activity.ACTIVE,
        100.0,
        id="paused-namespace-with-running-pods-is-active",
    ),
    pytest.param(
        a_snapshot(rc(pod_phase="Pending").build(), pauses=Pauses(everything=True)),
        RC,
        Activity.INACTIVE,
        0.0,
        id="a-pause-never-wakes-a-target-from-zero",
    ),
    pytest.param(
        a_snapshot(rc().admitted(at=minutes_ago(5)).build(), usage_of=idle()),
        RC,
        Activity.ACTIVE,
        100.0,
        id="in-grace-is-active",
    ),
    pytest.param(
        a_snapshot(rc().reactivated(at=minutes_ago(5)).build(), usage_of=idle()),
        RC,
        Activity.ACTIVE,
        100.0,
        id="reactivated-recently-is-in-grace",
    ),
    pytest.param(
        a_snapshot(rc().build()), RC, Activity.UNKNOWN, None, id="missing-series-is-unknown"
    ),
    pytest.param(
        a_snapshot(rc().build(), usage_of=usage().gpu("ml", "rc-0", last_sample=minutes_ago(10))),
        RC,
        Activity.UNKNOWN,
        None,
        id="stale-series-is-unknown",
    ),
    pytest.param(
        a_snapshot(rc().build(), usage_of=usage().failing("connection refused")),
        RC,
        Activity.UNKNOWN,
        None,
        id="prometheus-down-is-unknown",
    ),
    pytest.param(
        a_snapshot(rc().build(), usage_of=idle().doubting("ml")),
        RC,
        Activity.UNKNOWN,
        None,
        id="partial-data-is-unknown",
    ),
    pytest.param(
        a_snapshot(rc().exempt().build(), usage_of=usage().failing("down")),
        RC,
        Activity.ACTIVE,
        100.0,
        id="exempt-needs-no-metrics",
    ),
    pytest.param(
        a_snapshot(rc().not_admitted().build(), usage_of=idle()),
        RC,
        Activity.UNKNOWN,
        None,
        id="running-but-not-admitted-is-unknown",
    ),
    pytest.param(a_snapshot(), RC, Activity.NOT_FOUND, None, id="an-unknown-workload-is-not-found"),
    pytest.param(
        a_snapshot(rc().build(), usage_of=idle(), cluster_ok=False),
        RC,
        Activity.UNKNOWN,
        None,
        id="cluster-unread-is-unknown",
    ),
    pytest.param(None, RC, Activity.UNKNOWN, None, id="no-cycle-yet-is-unknown"),
    pytest.param(
        a_snapshot(
            rc().build(),
            usage_of=usage().gpu("ml", "rc-0", peak=0.01, last_busy=minutes_ago(20)),
            profiles=FAST_VIEW,
        ),
        FAST,
        Activity.INACTIVE,
        1.0,
        id="a-shorter-profile-window-sees-idle-sooner",
    ),
    pytest.param(
        a_snapshot(
            rc().build(),
            usage_of=usage().gpu("ml", "rc-0", peak=0.01, last_busy=minutes_ago(20)),
            profiles=FAST_VIEW,
        ),
        RC,
        Activity.ACTIVE,
        100.0,
        id="the-default-window-is-not-complete-yet",
    ),
    pytest.param(
        a_snapshot(rc().build(), usage_of=idle()),
        FAST,
        Activity.UNKNOWN,
        None,
        id="a-profile-missing-from-the-cycle-is-unknown",
    ),
]


@pytest.mark.parametrize(("snapshot", "target", "activity", "value"), CASES)
def test_a_workload_target_is_judged_from_the_snapshot(
    snapshot: Snapshot | None, target: Target, activity: Activity, value: float | None
) -> None:
    judgement = judge(snapshot, target)
    assert judgement.activity is activity, judgement.reason
    if value is not None:
        assert judgement.value == pytest.approx(value)


@pytest.mark.parametrize(("snapshot", "target", "activity", "value"), CASES)
def test_the_value_is_above_the_threshold_exactly_when_active(
    snapshot: Snapshot | None, target: Target, activity: Activity, value: float | None
) -> None:
    judgement = judge(snapshot, target)
    if judgement.known:
        assert (judgement.value > THRESHOLD * 100) is (judgement.activity is Activity.ACTIVE)


def llm(
    name: str, *, namespace: str = "ml", created: int = 24 * 60, phase: str = "Running"
) -> PodRecord:
    labels = {"app": "llm", "pod-template-hash": "abc"}
    return gpu_pod(namespace, name, labels=labels, created=minutes_ago(created), phase=phase)


SELECTOR_CASES = [
    pytest.param(
        (llm("llm-0"), llm("llm-1")),
        idle().gpu("ml", "llm-0").gpu("ml", "llm-1"),
        Activity.INACTIVE,
        id="all-matching-pods-idle-is-inactive",
    ),
    pytest.param(
        (llm("llm-0"), llm("llm-1")),
        usage().gpu("ml", "llm-0").gpu("ml", "llm-1", peak=0.7, last_busy=NOW),
        Activity.ACTIVE,
        id="one-busy-pod-makes-it-active",
    ),
    pytest.param((), usage(), Activity.INACTIVE, id="no-matching-pod-is-inactive"),
    pytest.param(
        (llm("llm-0", namespace="other"),),
        usage().gpu("other", "llm-0", peak=0.9, last_busy=NOW),
        Activity.INACTIVE,
        id="pods-of-other-namespaces-do-not-count",
    ),
    pytest.param(
        (llm("llm-0", phase="Pending"),),
        usage(),
        Activity.INACTIVE,
        id="pending-pods-are-not-running",
    ),
    pytest.param(
        (llm("llm-0"), llm("llm-1", created=5)),
        usage().gpu("ml", "llm-0").gpu("ml", "llm-1"),
        Activity.ACTIVE,
        id="a-new-pod-in-grace-holds-the-group",
    ),
    pytest.param(
        (llm("llm-0"), llm("llm-1")),
        usage().gpu("ml", "llm-0"),
        Activity.UNKNOWN,
        id="a-pod-without-series-is-unknown",
    ),
]


@pytest.mark.parametrize(("pods", "usage_of", "activity"), SELECTOR_CASES)
def test_a_pod_selector_target_judges_the_matching_gpu_pods_as_one_group(
    pods: tuple[PodRecord, ...], usage_of: UsageBuilder, activity: Activity
) -> None:
    unrelated = gpu_pod("ml", "web-0", labels={"app": "web"})
    snapshot = a_snapshot(
        usage_of=usage_of.gpu("ml", "web-0", peak=0.9, last_busy=NOW), pods=(*pods, unrelated)
    )
    judgement = judge(snapshot, LLM)
    assert judgement.activity is activity, judgement.reason


def test_a_group_in_grace_says_until_when_as_the_reasons_write_a_time() -> None:
    snapshot = a_snapshot(usage_of=usage().gpu("ml", "llm-0"), pods=(llm("llm-0", created=5),))
    judgement = judge(snapshot, LLM)
    assert judgement.activity is Activity.ACTIVE
    assert re.fullmatch(r"in grace period until \d\d:\d\d", judgement.reason), judgement.reason


def test_a_paused_namespace_holds_matching_running_pods() -> None:
    snapshot = a_snapshot(
        usage_of=usage().gpu("ml", "llm-0"), pods=(llm("llm-0"),), pauses=Pauses(everything=True)
    )
    assert judge(snapshot, LLM).activity is Activity.ACTIVE


def test_a_snapshot_older_than_the_allowed_age_is_unknown() -> None:
    store = SnapshotStore()
    store.publish(a_snapshot(rc().build(), usage_of=idle(), taken_at=NOW - timedelta(minutes=4)))
    judgement = answers_for(store).judge(RC)
    assert judgement.activity is Activity.UNKNOWN
    assert "not running" in judgement.reason


def test_each_target_is_judged_once_per_snapshot_and_afresh_after_a_publish() -> None:
    store = SnapshotStore()
    answers = answers_for(store)
    store.publish(a_snapshot(rc().build(), usage_of=idle(), cycle=1))
    first = answers.judge(RC)
    assert answers.judge(Target("ml", workload="rc")) is first
    store.publish(a_snapshot(rc().build(), usage_of=busy(), cycle=2))
    assert answers.judge(RC).activity is Activity.ACTIVE


@pytest.mark.parametrize(
    ("target", "name"),
    [
        pytest.param(RC, "gpu-peak-utilization-ml-rc", id="workload"),
        pytest.param(FAST, "gpu-peak-utilization-ml-rc-fast", id="workload-with-profile"),
        pytest.param(
            Target("ML", workload="rc.v2_x"),
            "gpu-peak-utilization-ml-rc-v2-x",
            id="unsafe-characters",
        ),
    ],
)
def test_metric_names_are_lowercase_path_safe_and_depend_only_on_the_metadata(
    target: Target, name: str
) -> None:
    assert target.metric_name == name


def test_a_selector_metric_name_is_a_short_hash_of_the_selector() -> None:
    name = LLM.metric_name
    assert name.startswith("gpu-peak-utilization-ml-sel-")
    assert name == Target("ml", selector=parse_selector("app==llm")).metric_name
    assert len(Target("ml", workload="w" * 250).metric_name) <= 200


def test_a_workload_whose_rule_cannot_be_evaluated_is_unknown_to_keda_not_idle() -> None:
    snapshot = a_snapshot(rc().build(), usage_of=idle())
    (row,) = snapshot.workloads
    why = "rule gpu-a100 cannot be evaluated: no GPU model known this cycle; no action"
    unknown_rule = replace(row.decision, state=State.UNKNOWN, reason=why)
    snapshot = replace(snapshot, workloads=(replace(row, decision=unknown_rule),))

    judgement = judge(snapshot)

    assert judgement.activity is Activity.UNKNOWN
    assert judgement.reason == why


def test_a_keda_managed_workload_whose_rule_cannot_be_evaluated_is_unknown_to_keda() -> None:
    snapshot = a_snapshot(rc().build(), usage_of=idle())
    (row,) = snapshot.workloads
    managed = replace(
        row.decision,
        state=State.KEDA_MANAGED,
        rule=a_rule_named("gpu-a100"),
        rule_unknown="no GPU model known this cycle (gpuModels)",
    )
    snapshot = replace(snapshot, workloads=(replace(row, decision=managed),))

    judgement = judge(snapshot)

    assert judgement.activity is Activity.UNKNOWN
    assert judgement.reason == (
        "rule gpu-a100 cannot be evaluated: no GPU model known this cycle (gpuModels)"
    )
