"""The policy engine as decision tables: one row per situation, named as a sentence.

Unless a row says otherwise the workload is a RayCluster in `team-a`, admitted a day ago,
with one Running pod holding one GPU, judged at `NOW` by the shipped defaults (5 %, a
60-minute window, 80 % coverage, samples older than 3 minutes stale, 15 minutes of grace)
with dry-run off.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta, timezone

import pytest

from autoscaler.domain.annotations import EXEMPT
from autoscaler.domain.models import Action, Decision, FleetUsage, Pauses, State, WorkloadInfo
from autoscaler.domain.policy.decisions import Policy, apply_cap, decide
from tests.support.decision_builders import decide_fleet
from tests.support.domain_builders import (
    NOW,
    UsageBuilder,
    WorkloadBuilder,
    a_policy,
    a_workload,
    minutes_ago,
    rfc3339,
    usage,
)

NS = "team-a"
FRESH = minutes_ago(0.5)  # a recent scrape
BERLIN = timezone(timedelta(hours=1))


def ray_cluster(name: str = "rc") -> WorkloadBuilder:
    return a_workload(NS, name).gpu_pod("w-0")


def idle_gpu(pod: str = "w-0") -> UsageBuilder:
    return usage().gpu(NS, pod, peak=0.01, last_sample=FRESH)


def judge(
    workload: WorkloadInfo,
    fleet: FleetUsage,
    *,
    policy: Policy | None = None,
    pauses: Pauses | None = None,
) -> Decision:
    policy = policy or a_policy()
    # The fleet was read for the policy's own window: stamp it so (the engine checks).
    fleet = replace(
        fleet,
        window=policy.default_rule.usage.window,
        threshold=policy.default_rule.usage.threshold,
    )
    return decide(workload, fleet, policy=policy, pauses=pauses or Pauses(), now=NOW)


def test_an_idle_workload_whose_pod_chain_broke_is_unknown_never_stopped() -> None:
    """Its GPU pods found read idle, but a pod whose chain broke may be its busy one (pods
    counted against the admission would not tell, with an elastic or scaled admission)."""
    broken = "pod team-a/w-1's Job w-1 was not found"
    idle = ray_cluster().admitted(at=minutes_ago(120)).read_by_kueue(gpus=1)
    unsure = ray_cluster().admitted(at=minutes_ago(120)).read_by_kueue(pods_unsure=broken)

    assert judge(idle.build(), idle_gpu().build()).state is State.IDLE
    decision = judge(unsure.build(), idle_gpu().build())

    assert (decision.state, decision.action) == (State.UNKNOWN, Action.NONE)
    assert decision.reason.endswith(f"but {broken}; never stopped"), decision.reason


# --- usage: busy, idle or unknown --------------------------------------------------------------

USAGE_ROWS = [
    pytest.param(
        ray_cluster(),
        idle_gpu(),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="idle-past-window-is-deactivated",
    ),
    pytest.param(
        ray_cluster(),
        usage().gpu(NS, "w-0", peak=0.05, last_sample=FRESH),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="peak-exactly-at-threshold-counts-as-idle",
    ),
    pytest.param(
        ray_cluster().admitted(at=minutes_ago(30)),
        idle_gpu(),
        State.IDLE,
        Action.NONE,
        "idle for 30m so far",
        id="idle-for-less-than-window-is-idle-without-action",
    ),
    pytest.param(
        ray_cluster(),
        usage().gpu(NS, "w-0", peak=0.9, last_sample=FRESH, last_busy=FRESH),
        State.BUSY,
        Action.NONE,
        "peak utilization 90% above threshold 5%",
        id="busy-gpu-is-busy",
    ),
    pytest.param(
        ray_cluster(),
        usage().gpu(NS, "w-0", peak=0.06, last_sample=FRESH, last_busy=FRESH),
        State.BUSY,
        Action.NONE,
        "above threshold",
        id="peak-just-above-threshold-is-busy",
    ),
    pytest.param(
        ray_cluster(),
        usage().gpu(NS, "w-0", peak=0.9, last_sample=FRESH, last_busy=minutes_ago(20)),
        State.IDLE,
        Action.NONE,
        "idle for 20m so far",
        id="busy-twenty-minutes-ago-is-idle-for-twenty-minutes",
    ),
    pytest.param(
        a_workload(NS, "rc").gpu_pod("w-0", gpus=2),
        usage()
        .gpu(NS, "w-0", peak=0.9, last_sample=FRESH, last_busy=FRESH)
        .gpu(NS, "w-0", peak=0.0, last_sample=FRESH),
        State.IDLE_HELD,
        Action.NONE,
        "1 of 2 GPUs idle for the whole 60m while 1 is busy",
        id="one-busy-gpu-of-two-beside-one-idle-all-window-is-idle-held-not-stopped",
    ),
    pytest.param(
        a_workload(NS, "rc").gpu_pod("w-0", gpus=2),
        usage()
        .gpu(NS, "w-0", peak=0.9, last_sample=FRESH, last_busy=FRESH)
        .gpu(NS, "w-0", peak=0.0, last_sample=FRESH, last_busy=minutes_ago(61)),
        State.IDLE_HELD,
        Action.NONE,
        "1 of 2 GPUs idle",
        id="a-gpu-last-busy-before-the-window-beside-a-busy-one-is-idle-held",
    ),
    pytest.param(
        a_workload(NS, "rc").gpu_pod("w-0", gpus=2).admitted(at=minutes_ago(30)),
        usage()
        .gpu(NS, "w-0", peak=0.9, last_sample=FRESH, last_busy=FRESH)
        .gpu(NS, "w-0", peak=0.0, last_sample=FRESH),
        State.BUSY,
        Action.NONE,
        "above threshold",
        id="one-busy-gpu-of-two-keeps-the-pod-busy-while-the-other-is-idle-less-than-the-window",
    ),
    pytest.param(
        a_workload(NS, "rc").gpu_pod("w-0").gpu_pod("w-1"),
        usage()
        .gpu(NS, "w-0", peak=0.0, last_sample=FRESH)
        .gpu(NS, "w-1", peak=0.7, last_sample=FRESH, last_busy=FRESH),
        State.IDLE_HELD,
        Action.NONE,
        "1 of 2 GPUs idle for the whole 60m while 1 is busy",
        id="one-busy-worker-keeps-the-cluster-from-a-stop-its-idle-worker-is-idle-held",
    ),
    pytest.param(
        a_workload(NS, "rc").cpu_pod("head").gpu_pod("w-0").gpu_pod("w-1"),
        idle_gpu("w-0").gpu(NS, "w-1", peak=0.0, last_sample=FRESH),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="cpu-only-head-with-idle-gpu-workers-is-deactivated",
    ),
    pytest.param(
        a_workload(NS, "cpu").cpu_pod("head").cpu_pod("worker"),
        usage(),
        State.UNKNOWN,
        Action.NONE,
        "no pod of this workload requests GPUs",
        id="cpu-only-workload-is-never-touched",
    ),
    pytest.param(
        ray_cluster(),
        usage(),
        State.UNKNOWN,
        Action.NONE,
        "0 GPU series for 1 requested",
        id="gpu-pod-without-series-is-unknown",
    ),
    pytest.param(
        a_workload(NS, "rc").gpu_pod("w-0", gpus=2),
        idle_gpu(),
        State.UNKNOWN,
        Action.NONE,
        "1 GPU series for 2 requested",
        id="fewer-series-than-requested-gpus-is-unknown",
    ),
    pytest.param(
        a_workload(NS, "rc").gpu_pod("w-0", gpus=2),
        usage()
        .gpu(NS, "w-0", uuid="GPU-a", last_sample=FRESH)
        .gpu(NS, "w-0", uuid="GPU-a", last_sample=FRESH),
        State.UNKNOWN,
        Action.NONE,
        "1 GPU series for 2 requested",
        id="the-same-gpu-reported-twice-does-not-stand-in-for-a-missing-one",
    ),
    pytest.param(
        a_workload(NS, "rc").gpu_pod("w-0", gpus=2),
        usage()
        .gpu(NS, "w-0", uuid="GPU-a", mig="1", last_sample=FRESH)
        .gpu(NS, "w-0", uuid="GPU-a", mig="2", last_sample=FRESH),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="two-mig-slices-of-one-gpu-are-two-devices",
    ),
    pytest.param(
        ray_cluster(),
        usage().gpu(NS, "w-0", peak=None, last_sample=FRESH),
        State.UNKNOWN,
        Action.NONE,
        "no usable samples",
        id="absent-peak-is-unknown",
    ),
    pytest.param(
        ray_cluster(),
        usage().gpu(NS, "w-0", peak=float("nan"), last_sample=FRESH),
        State.UNKNOWN,
        Action.NONE,
        "no usable samples",
        id="nan-peak-is-unknown",
    ),
    pytest.param(
        a_workload(NS, "rc").gpu_pod("w-0", gpus=2),
        usage()
        .gpu(NS, "w-0", peak=0.01, last_sample=FRESH)
        .gpu(NS, "w-0", peak=float("nan"), last_sample=FRESH),
        State.UNKNOWN,
        Action.NONE,
        "no usable samples",
        id="nan-peak-beside-an-idle-gpu-is-unknown",
    ),
    pytest.param(
        ray_cluster(),
        usage().gpu(NS, "w-0", last_sample=minutes_ago(10)),
        State.UNKNOWN,
        Action.NONE,
        "stale",
        id="newest-sample-older-than-stale-after-is-unknown",
    ),
    pytest.param(
        ray_cluster(),
        usage().gpu(NS, "w-0", last_sample=minutes_ago(3)),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="newest-sample-exactly-stale-after-old-is-still-fresh",
    ),
    pytest.param(
        ray_cluster(),
        usage().gpu(NS, "w-0", last_sample=None),
        State.UNKNOWN,
        Action.NONE,
        "stale",
        id="no-sample-time-is-unknown",
    ),
    pytest.param(
        ray_cluster(),
        usage().gpu(NS, "w-0", coverage=0.5, last_sample=FRESH),
        State.UNKNOWN,
        Action.NONE,
        "covers 50% of the window, below the required 80%",
        id="coverage-below-minimum-is-unknown",
    ),
    pytest.param(
        ray_cluster(),
        usage().gpu(NS, "w-0", coverage=float("nan"), last_sample=FRESH),
        State.UNKNOWN,
        Action.NONE,
        "below the required 80%",
        id="nan-coverage-is-unknown",
    ),
    pytest.param(
        ray_cluster(),
        idle_gpu().failing("connection refused"),
        State.UNKNOWN,
        Action.NONE,
        "metrics unavailable: connection refused",
        id="metric-source-failure-is-unknown",
    ),
    pytest.param(
        ray_cluster(),
        idle_gpu().doubting(NS),
        State.UNKNOWN,
        Action.NONE,
        "partial data",
        id="partial-data-about-the-namespace-is-unknown",
    ),
    pytest.param(
        ray_cluster(),
        idle_gpu().doubting("*"),
        State.UNKNOWN,
        Action.NONE,
        "partial data",
        id="partial-data-about-every-namespace-is-unknown",
    ),
    pytest.param(
        ray_cluster(),
        idle_gpu().doubting("team-b"),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="partial-data-about-another-namespace-does-not-matter",
    ),
    pytest.param(
        ray_cluster().expecting(3),
        idle_gpu(),
        State.UNKNOWN,
        Action.NONE,
        "1 of 3 admitted pods exist",
        id="missing-admitted-pods-is-unknown",
    ),
    pytest.param(
        ray_cluster().gpu_pod("w-1", phase="Pending"),
        idle_gpu().gpu(NS, "w-1", last_sample=FRESH),
        State.UNKNOWN,
        Action.NONE,
        "pods not running: w-1",
        id="a-pending-gpu-pod-is-unknown",
    ),
    pytest.param(
        ray_cluster().cpu_pod("head", phase="Failed"),
        idle_gpu(),
        State.UNKNOWN,
        Action.NONE,
        "pods not running: head",
        id="a-failed-cpu-head-is-unknown",
    ),
]


@pytest.mark.parametrize(("workload", "fleet", "state", "action", "reason"), USAGE_ROWS)
def test_usage_decides_busy_idle_or_unknown(
    workload: WorkloadBuilder, fleet: UsageBuilder, state: State, action: Action, reason: str
) -> None:
    decision = judge(workload.build(), fleet.build())

    assert (decision.state, decision.action) == (state, action)
    assert reason in decision.reason


# --- lifecycle and annotations ----------------------------------------------------------------

LIFECYCLE_ROWS = [
    pytest.param(
        ray_cluster().inactive(),
        State.DEACTIVATED,
        Action.NONE,
        "spec.active is false",
        id="inactive",
    ),
    pytest.param(
        ray_cluster().not_admitted(), State.PENDING, Action.NONE, "not admitted", id="not-admitted"
    ),
    pytest.param(ray_cluster().keda(), State.KEDA_MANAGED, Action.NONE, "KEDA", id="keda-managed"),
    pytest.param(
        ray_cluster().owned_by("RayJob"),
        State.KIND_NOT_ENABLED,
        Action.NONE,
        "kind RayJob not enabled (cluster.ownerKinds.RayJob.enabled)",
        id="owner-kind-not-enabled-is-left-alone-not-protected",
    ),
    pytest.param(
        ray_cluster().no_owner(),
        State.PROTECTED,
        Action.NONE,
        "owner kind none is not enabled",
        id="ownerless-workload-is-protected",
    ),
    pytest.param(
        ray_cluster().exempt(),
        State.EXEMPT,
        Action.NONE,
        "exempt indefinitely",
        id="exempt-workload",
    ),
    pytest.param(
        ray_cluster().exempt(on_owner=True),
        State.EXEMPT,
        Action.NONE,
        "exempt indefinitely",
        id="exempt-owner-exempts-its-workload",
    ),
    pytest.param(
        ray_cluster().annotated(EXEMPT, " TRUE "),
        State.EXEMPT,
        Action.NONE,
        "exempt indefinitely",
        id="exempt-is-read-without-case-or-spaces",
    ),
    pytest.param(
        ray_cluster().exempt_until(minutes_ago(-30)),
        State.EXEMPT,
        Action.NONE,
        "exempt until 12:30",
        id="exempt-until-a-future-time",
    ),
    pytest.param(
        ray_cluster().exempt_until(minutes_ago(-30), on_owner=True),
        State.EXEMPT,
        Action.NONE,
        "exempt until",
        id="owner-exempt-until-a-future-time",
    ),
    pytest.param(
        ray_cluster().exempt_until(rfc3339(minutes_ago(-30)).lower()),
        State.EXEMPT,
        Action.NONE,
        "exempt until",
        id="exempt-until-in-lower-case-rfc3339",
    ),
    pytest.param(
        ray_cluster().exempt_until(minutes_ago(-30).astimezone(BERLIN).isoformat()),
        State.EXEMPT,
        Action.NONE,
        "exempt until 12:30",  # the domain's times are UTC, whatever offset was written
        id="exempt-until-with-an-offset",
    ),
    pytest.param(
        ray_cluster().exempt_until(NOW + timedelta(days=2, minutes=-5)),
        State.EXEMPT,
        Action.NONE,
        "exempt until 2025-03-05 11:55",
        id="exempt-until-another-day-names-the-day",
    ),
    pytest.param(
        ray_cluster().exempt_until(minutes_ago(30)),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="exempt-until-a-past-time-has-expired",
    ),
    pytest.param(
        ray_cluster().exempt_until("next tuesday"),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="malformed-exempt-until-does-not-exempt",
    ),
    pytest.param(
        ray_cluster().exempt_until("2999-01-01T00:00:00"),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="exempt-until-without-a-timezone-does-not-exempt",
    ),
    pytest.param(
        ray_cluster().annotated(EXEMPT, "false"),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="exempt-false-does-not-exempt",
    ),
    pytest.param(
        ray_cluster().admitted(at=minutes_ago(5)),
        State.GRACE,
        Action.NONE,
        "in grace period until 12:10",
        id="grace-after-admission",
    ),
    pytest.param(
        ray_cluster().reactivated(at=minutes_ago(5)),
        State.GRACE,
        Action.NONE,
        "in grace period",
        id="fresh-grace-after-reactivation",
    ),
    pytest.param(
        ray_cluster().reactivated(at=minutes_ago(5), on_owner=True),
        State.GRACE,
        Action.NONE,
        "in grace period",
        id="fresh-grace-after-reactivation-recorded-on-the-owner",
    ),
    pytest.param(
        ray_cluster().reactivated(at=minutes_ago(20)),
        State.IDLE,
        Action.NONE,
        "idle for 20m so far",
        id="window-restarts-at-reactivation",
    ),
    pytest.param(
        a_workload(NS, "rc").gpu_pod("w-0", created=minutes_ago(10)),
        State.IDLE,
        Action.NONE,
        "idle for 10m so far",
        id="recreated-gpu-pod-is-not-idle-for-the-window-whatever-history-says",
    ),
    pytest.param(
        a_workload(NS, "rc").cpu_pod("head", created=minutes_ago(10)).gpu_pod("w-0"),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="a-recreated-cpu-head-does-not-restart-the-window",
    ),
    pytest.param(
        ray_cluster().admitted(at=None),
        State.IDLE,
        Action.DEACTIVATE,
        "idle for the whole window",
        id="admitted-without-a-time-counts-from-creation",
    ),
]


@pytest.mark.parametrize(("workload", "state", "action", "reason"), LIFECYCLE_ROWS)
def test_lifecycle_and_annotations_decide_before_usage(
    workload: WorkloadBuilder, state: State, action: Action, reason: str
) -> None:
    decision = judge(workload.build(), idle_gpu().build())

    assert (decision.state, decision.action) == (state, action)
    assert reason in decision.reason


# --- policy settings ---------------------------------------------------------------------------

POLICY_ROWS = [
    pytest.param(
        a_policy(dry_run=True),
        State.IDLE,
        Action.WOULD_DEACTIVATE,
        "idle for the whole window",
        id="dry-run-would-deactivate",
    ),
    pytest.param(
        a_policy(kinds={"RayCluster", "RayJob"}),
        State.IDLE,
        Action.DEACTIVATE,
        "idle",
        id="enabled-kinds-are-acted-on",
    ),
    pytest.param(
        a_policy(include={"team-b"}),
        State.PROTECTED,
        Action.NONE,
        "namespace team-a is not in the included namespaces",
        id="namespace-outside-include-list-is-protected",
    ),
    pytest.param(
        a_policy(include={NS}),
        State.IDLE,
        Action.DEACTIVATE,
        "idle",
        id="namespace-in-include-list-is-acted-on",
    ),
    pytest.param(
        a_policy(exclude={NS}),
        State.PROTECTED,
        Action.NONE,
        "namespace team-a is excluded",
        id="excluded-namespace-is-protected",
    ),
    pytest.param(
        a_policy(include={NS}, exclude={NS}),
        State.PROTECTED,
        Action.NONE,
        "excluded",
        id="exclude-wins-over-include",
    ),
    pytest.param(
        a_policy(protected_classes={"prod"}),
        State.PROTECTED,
        Action.NONE,
        "priority class prod is protected",
        id="protected-priority-class-is-protected",
    ),
    pytest.param(
        a_policy(protected_classes={"critical"}),
        State.IDLE,
        Action.DEACTIVATE,
        "idle",
        id="other-priority-class-is-acted-on",
    ),
    pytest.param(
        a_policy(window=timedelta(hours=25)),
        State.IDLE,
        Action.NONE,
        "idle for 1440m so far",
        id="window-longer-than-the-workload-has-lived-is-not-complete",
    ),
]


@pytest.mark.parametrize(("policy", "state", "action", "reason"), POLICY_ROWS)
def test_policy_settings_change_the_outcome(
    policy: Policy, state: State, action: Action, reason: str
) -> None:
    decision = judge(ray_cluster().priority("prod").build(), idle_gpu().build(), policy=policy)

    assert (decision.state, decision.action) == (state, action)
    assert reason in decision.reason


# --- pause --------------------------------------------------------------------------------------

PAUSE_ROWS = [
    pytest.param(
        Pauses(everything=True),
        idle_gpu(),
        "paused (service); would be idle: idle for the whole window",
        id="global-pause-stops-a-deactivation",
    ),
    pytest.param(
        Pauses(namespaces=frozenset({NS})),
        idle_gpu(),
        "paused (namespace team-a); would be idle: idle for the whole window",
        id="namespace-pause-stops-a-deactivation",
    ),
    pytest.param(
        Pauses(everything=True),
        usage().gpu(NS, "w-0", peak=0.9, last_sample=FRESH, last_busy=FRESH),
        "paused (service); would be busy",
        id="global-pause-reports-a-busy-workload",
    ),
    pytest.param(
        Pauses(everything=True),
        idle_gpu().failing("timeout"),
        "paused (service); would be unknown: metrics unavailable",
        id="global-pause-reports-an-unknown-workload",
    ),
]


@pytest.mark.parametrize(("pauses", "fleet", "reason"), PAUSE_ROWS)
def test_pause_reports_what_would_happen_and_does_nothing(
    pauses: Pauses, fleet: UsageBuilder, reason: str
) -> None:
    decision = judge(ray_cluster().build(), fleet.build(), pauses=pauses)

    assert (decision.state, decision.action) == (State.PAUSED, Action.NONE)
    assert decision.reason.startswith(reason)


def test_a_pause_of_another_namespace_leaves_this_one_acting() -> None:
    pauses = Pauses(namespaces=frozenset({"team-b"}))

    decision = judge(ray_cluster().build(), idle_gpu().build(), pauses=pauses)

    assert decision.action is Action.DEACTIVATE


# --- the order of checks ------------------------------------------------------------------------

ORDER_ROWS = [
    pytest.param(ray_cluster().inactive().not_admitted(), State.DEACTIVATED, id="inactive-first"),
    pytest.param(ray_cluster().not_admitted().keda(), State.PENDING, id="pending-before-keda"),
    pytest.param(ray_cluster().keda().owned_by("Job"), State.KEDA_MANAGED, id="keda-before-kind"),
    pytest.param(
        ray_cluster().owned_by("Job").exempt(), State.KIND_NOT_ENABLED, id="kind-before-exempt"
    ),
    pytest.param(
        ray_cluster().exempt().admitted(at=minutes_ago(1)), State.EXEMPT, id="exempt-before-grace"
    ),
]


@pytest.mark.parametrize(("workload", "state"), ORDER_ROWS)
def test_the_first_check_that_applies_names_the_state(
    workload: WorkloadBuilder, state: State
) -> None:
    decision = judge(workload.build(), idle_gpu().build(), pauses=Pauses(everything=True))

    assert (decision.state, decision.action) == (state, Action.NONE)


# --- numbers reported with a decision ---------------------------------------------------------


def test_an_idling_workload_reports_when_it_went_idle_and_the_time_left() -> None:
    workload = ray_cluster().build()
    fleet = usage().gpu(NS, "w-0", peak=0.9, last_sample=FRESH, last_busy=minutes_ago(20)).build()

    decision = judge(workload, fleet)

    assert decision.idle_since == minutes_ago(20)
    assert decision.time_left == timedelta(minutes=40)
    assert decision.peak == 0.9


def test_a_deactivation_reports_its_numbers() -> None:
    workload = a_workload(NS, "rc").gpu_pod("w-0", gpus=2).build()
    fleet = (
        usage()
        .gpu(NS, "w-0", peak=0.02, coverage=0.9, last_sample=FRESH)
        .gpu(NS, "w-0", peak=0.04, coverage=0.95, last_sample=FRESH)
        .build()
    )

    decision = judge(workload, fleet)

    assert decision.action is Action.DEACTIVATE
    assert (decision.gpus, decision.peak, decision.coverage) == (2, 0.04, 0.9)
    assert decision.time_left == timedelta(0)


def test_a_busy_workload_has_no_time_left() -> None:
    fleet = usage().gpu(NS, "w-0", peak=0.9, last_sample=FRESH, last_busy=FRESH).build()

    decision = judge(ray_cluster().build(), fleet)

    assert (decision.idle_since, decision.time_left) == (None, None)


def test_grace_ends_exactly_grace_period_after_admission() -> None:
    workload = ray_cluster().admitted(at=minutes_ago(15)).build()

    decision = judge(workload, idle_gpu().build())

    assert decision.state is State.IDLE


# --- the per-cycle cap -------------------------------------------------------------------------


def idle_fleet(idle_minutes: list[int]) -> tuple[list[WorkloadInfo], FleetUsage]:
    """One idle RayCluster per entry, each admitted that many minutes ago."""
    workloads, fleet = [], usage()
    for index, minutes in enumerate(idle_minutes):
        workloads.append(
            a_workload(NS, f"rc-{index}")
            .gpu_pod(f"rc-{index}-w-0")
            .admitted(at=minutes_ago(minutes))
            .build()
        )
        fleet.gpu(NS, f"rc-{index}-w-0", last_sample=FRESH)
    return workloads, fleet.build()


def test_the_cap_acts_on_the_longest_idle_and_defers_the_rest() -> None:
    workloads, fleet = idle_fleet([70, 300, 90, 120, 65])

    decisions = decide_fleet(workloads, fleet, policy=a_policy(cap=2), pauses=Pauses(), now=NOW)

    actions = {d.workload.name: d.action for d in decisions}
    assert actions == {
        "rc-0": Action.DEFERRED,
        "rc-1": Action.DEACTIVATE,
        "rc-2": Action.DEFERRED,
        "rc-3": Action.DEACTIVATE,
        "rc-4": Action.DEFERRED,
    }
    deferred = [d for d in decisions if d.action is Action.DEFERRED]
    assert all(d.reason.endswith("cap of 2 deactivations per cycle reached") for d in deferred)
    assert all(d.state is State.IDLE for d in deferred)


def test_the_cap_keeps_the_order_of_the_fleet() -> None:
    workloads, fleet = idle_fleet([70, 300, 90])

    decisions = decide_fleet(workloads, fleet, policy=a_policy(cap=1), pauses=Pauses(), now=NOW)

    assert [d.workload for d in decisions] == [w.ref for w in workloads]


def test_a_cap_of_zero_defers_every_deactivation() -> None:
    workloads, fleet = idle_fleet([70, 300])

    decisions = decide_fleet(workloads, fleet, policy=a_policy(cap=0), pauses=Pauses(), now=NOW)

    assert [d.action for d in decisions] == [Action.DEFERRED, Action.DEFERRED]


def test_the_cap_counts_dry_run_decisions_too() -> None:
    workloads, fleet = idle_fleet([70, 300, 90])
    policy = a_policy(cap=1, dry_run=True)

    decisions = decide_fleet(workloads, fleet, policy=policy, pauses=Pauses(), now=NOW)

    assert [d.action for d in decisions] == [
        Action.DEFERRED,
        Action.WOULD_DEACTIVATE,
        Action.DEFERRED,
    ]


def test_the_cap_leaves_decisions_without_an_action_alone() -> None:
    workloads, fleet = idle_fleet([70, 10])

    decisions = decide_fleet(workloads, fleet, policy=a_policy(cap=0), pauses=Pauses(), now=NOW)

    assert decisions[1].action is Action.NONE
    assert decisions[1].state is State.GRACE


def test_under_the_cap_every_idle_workload_is_acted_on() -> None:
    workloads, fleet = idle_fleet([70, 300])

    decisions = decide_fleet(workloads, fleet, policy=a_policy(cap=5), pauses=Pauses(), now=NOW)

    assert [d.action for d in decisions] == [Action.DEACTIVATE, Action.DEACTIVATE]


def test_a_negative_cap_acts_on_nothing() -> None:
    workloads, fleet = idle_fleet([70, 300, 90])
    decisions = [judge(w, fleet) for w in workloads]

    capped = apply_cap(decisions, limit=-1)

    assert {d.action for d in capped} == {Action.DEFERRED}
