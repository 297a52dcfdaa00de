"""Quota held without work, as decision tables: an admitted Workload none of whose GPU pods
runs is `not-running`, decided from Kubernetes' objects, never from metrics.

Unless a row says otherwise the workload is a RayCluster in `team-a`, admitted 45 minutes
before `NOW` (12:00, so at 11:15), read by the Kueue adapter (its PodsReady absent: Kueue's
waitForPodsReady is off for it), judged by the shipped defaults (30 minutes of
`notRunningAfter`, 15 minutes of grace) with dry-run off, and no GPU series in Prometheus.

The pod states are the kubelet's and the scheduler's own words (domain/usage/pod_states.py
cites where each is written upstream). The Kueue rows follow Kueue's workload controller
(pkg/controller/core/workload_controller.go, `admittedNotReadyWorkload`): its timer counts
from the Admitted condition, and it runs only where PodsReady is written, which the job
reconciler does only with waitForPodsReady on (pkg/controller/jobframework/reconciler.go);
its timeout is the one Kueue's Configuration gives (tests/domain/test_kueue_configuration.py
reads it as Kueue's defaults.go does); unreadable, the deadline is unknown and the workload is
still left to Kueue.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from autoscaler.domain.kueue_config import V1BETA1, V1BETA2, interpret, unreadable
from autoscaler.domain.models import Action, Decision, Pauses, State, WorkloadInfo
from autoscaler.domain.notices.notice import NoticeRules
from autoscaler.domain.notices.staging import stage
from autoscaler.domain.policy.decisions import Policy, decide
from autoscaler.domain.policy.rules import RuleAction
from tests.support.domain_builders import (
    NOW,
    WorkloadBuilder,
    a_policy,
    a_workload,
    minutes_ago,
    usage,
    with_default,
)
from tests.support.notice_builders import snoozed, warned

NS = "team-a"
KUEUE_CONFIG = "kueue-system/kueue-manager-config"
KUEUE_10M = interpret(
    {"apiVersion": V1BETA2, "waitForPodsReady": {"timeout": "10m"}}, source=KUEUE_CONFIG
)
FRESH = minutes_ago(0.5)
PULL_FAILS = "ImagePullBackOff"


def admitted(minutes: float = 45, name: str = "rc") -> WorkloadBuilder:
    return a_workload(NS, name).admitted(at=minutes_ago(minutes)).cpu_pod("head")


def judge(workload: WorkloadInfo, *, policy: Policy | None = None, **kw: object) -> Decision:
    policy = policy or a_policy()
    rule = policy.default_rule.usage
    fleet = replace(usage().build(), window=rule.window, threshold=rule.threshold)
    pauses = kw.get("pauses")
    return decide(
        workload,
        fleet,
        policy=policy,
        pauses=pauses if isinstance(pauses, Pauses) else Pauses(),
        now=NOW,
    )


ROWS = [
    # --- each pod reason, past the limit: stopped ---------------------------------------------
    pytest.param(
        admitted().waiting_pod("w-0", PULL_FAILS).read_by_kueue(),
        State.NOT_RUNNING,
        Action.DEACTIVATE,
        "not running for 45m, past 30m (since admission at 11:15): "
        "pod w-0: image ghcr.io/x:v2 cannot be pulled (ImagePullBackOff)",
        id="image-pull-backoff-past-the-limit-is-stopped-naming-the-image",
    ),
    pytest.param(
        admitted().waiting_pod("w-0", "ErrImagePull", image="ghcr.io/y:v1").read_by_kueue(),
        State.UNKNOWN,
        Action.NONE,
        "no GPU pod runs yet: pod w-0 is Pending (ErrImagePull)",
        id="err-image-pull-is-a-first-attempt-not-yet-stuck-only-its-back-off-is",
    ),
    pytest.param(
        admitted().waiting_pod("w-0", "CrashLoopBackOff", phase="Running").read_by_kueue(),
        State.NOT_RUNNING,
        Action.DEACTIVATE,
        "container main keeps crashing (CrashLoopBackOff)",
        id="crash-loop-counts-as-not-running-even-in-phase-running",
    ),
    pytest.param(
        admitted()
        .waiting_pod("w-0", "CreateContainerConfigError", message='secret "s3" not found')
        .read_by_kueue(),
        State.NOT_RUNNING,
        Action.DEACTIVATE,
        'container main cannot be created (CreateContainerConfigError: secret "s3" not found)',
        id="container-config-error-is-not-running",
    ),
    pytest.param(
        admitted().unschedulable_pod("w-0").read_by_kueue(),
        State.NOT_RUNNING,
        Action.DEACTIVATE,
        "pod w-0 cannot be scheduled: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
        id="unschedulable-with-no-scale-up-is-not-running-with-the-schedulers-message",
    ),
    pytest.param(
        admitted().read_by_kueue(gpus=2),
        State.NOT_RUNNING,
        Action.DEACTIVATE,
        "no GPU pod created for the 2 GPUs admitted",
        id="no-gpu-pod-created-at-all-is-not-running",
    ),
    pytest.param(
        admitted().read_by_kueue(gpus=2, pods_unsure="its RayCluster rc was not found"),
        State.UNKNOWN,
        Action.NONE,
        "no GPU pod found by pod selector ray.io/cluster=rc, but its RayCluster rc was not "
        "found; never stopped",
        id="no-gpu-pod-found-with-the-owner-missing-is-unknown",
    ),
    pytest.param(
        admitted().read_by_kueue(
            gpus=2, pods_unsure="a pod in team-a was skipped as malformed (see the log)"
        ),
        State.UNKNOWN,
        Action.NONE,
        "but a pod in team-a was skipped as malformed (see the log); never stopped",
        id="no-gpu-pod-found-with-a-pod-skipped-as-malformed-is-unknown",
    ),
    pytest.param(
        admitted()
        .waiting_pod("w-0", PULL_FAILS)
        .read_by_kueue(gpus=2, pods_unsure="pod team-a/w-1's Job w-1 was not found"),
        State.UNKNOWN,
        Action.NONE,
        "1 GPU pod found by pod selector ray.io/cluster=rc, but pod team-a/w-1's Job w-1 was "
        "not found; never stopped",
        id="a-stuck-pod-found-with-the-chain-broken-is-unknown-a-missed-pod-may-run",
    ),
    pytest.param(
        admitted().read_by_kueue(gpus=2).finished(at=minutes_ago(20)),
        State.PENDING,
        Action.NONE,
        "finished at 11:40: Kueue released its quota; no action",
        id="a-finished-workload-whose-pods-are-gone-is-never-not-running",
    ),
    # --- within the limit, grace, and states never known to be stuck --------------------------
    pytest.param(
        admitted(20).waiting_pod("w-0", PULL_FAILS).read_by_kueue(),
        State.NOT_RUNNING,
        Action.NONE,
        "not running for 20m of 30m",
        id="just-admitted-within-the-limit-is-reported-not-stopped",
    ),
    pytest.param(
        admitted(10).waiting_pod("w-0", PULL_FAILS).read_by_kueue(),
        State.GRACE,
        Action.NONE,
        "in grace period",
        id="within-the-grace-period-is-grace",
    ),
    pytest.param(
        admitted(90).waiting_pod("w-0", "ContainerCreating").read_by_kueue(),
        State.UNKNOWN,
        Action.NONE,
        "no GPU pod runs yet: pod w-0 is Pending (ContainerCreating)",
        id="container-creating-is-never-taken-for-stuck-a-large-image-may-be-pulling",
    ),
    # --- someone else is in charge: Kueue, a ProvisioningRequest, a node autoscaler -----------
    pytest.param(
        admitted()
        .waiting_pod("w-0", PULL_FAILS)
        .read_by_kueue(pods_ready=("False", "WaitForStart", minutes_ago(45)), kueue=KUEUE_10M),
        State.NOT_RUNNING,
        Action.NONE,
        "Kueue's waitForPodsReady is in charge: it evicts it by 11:25 with its 10m timeout "
        f"(counted from 11:15; {KUEUE_CONFIG}); left to Kueue",
        id="kueue-wait-for-pods-ready-in-charge-is-reported-with-its-deadline-and-left-to-kueue",
    ),
    pytest.param(
        admitted()
        .waiting_pod("w-0", PULL_FAILS)
        .read_by_kueue(
            pods_ready=("False", "WaitForStart", minutes_ago(45)),
            kueue=interpret({"apiVersion": V1BETA2}, source=KUEUE_CONFIG),
        ),
        State.NOT_RUNNING,
        Action.NONE,
        "it evicts it by 11:45 with its 30m timeout",
        id="kueue-v1beta2-without-a-timeout-uses-its-default-30m",
    ),
    pytest.param(
        admitted()
        .waiting_pod("w-0", PULL_FAILS)
        .read_by_kueue(
            pods_ready=("False", "WaitForRecovery", minutes_ago(10)),
            kueue=interpret(
                {"apiVersion": V1BETA2, "waitForPodsReady": {"recoveryTimeout": "3m"}},
                source=KUEUE_CONFIG,
            ),
        ),
        State.NOT_RUNNING,
        Action.NONE,
        "it evicts it by 11:53 with its 3m recoveryTimeout (counted from 11:50",
        id="kueue-waiting-for-recovery-counts-its-recovery-timeout-from-the-condition",
    ),
    pytest.param(
        admitted()
        .waiting_pod("w-0", PULL_FAILS)
        .read_by_kueue(
            pods_ready=("False", "WaitForStart", minutes_ago(45)),
            kueue=unreadable(KUEUE_CONFIG, f"cannot read {KUEUE_CONFIG}: 403 Forbidden"),
        ),
        State.NOT_RUNNING,
        Action.NONE,
        f"Kueue's waitForPodsReady deadline unknown: cannot read {KUEUE_CONFIG}: 403 Forbidden; "
        "left to Kueue",
        id="kueues-configuration-unreadable-deadline-unknown-still-left-to-kueue",
    ),
    pytest.param(
        admitted()
        .waiting_pod("w-0", PULL_FAILS)
        .read_by_kueue(
            pods_ready=("False", "WaitForStart", minutes_ago(45)),
            kueue=interpret({"apiVersion": V1BETA1}, source=KUEUE_CONFIG),
        ),
        State.NOT_RUNNING,
        Action.NONE,
        f"deadline unknown: {KUEUE_CONFIG} says waitForPodsReady is off, yet PodsReady is there; "
        "left to Kueue",
        id="kueues-configuration-says-off-but-pods-ready-is-there-still-left-to-kueue",
    ),
    pytest.param(
        admitted()
        .waiting_pod("w-0", PULL_FAILS)
        .read_by_kueue(pods_ready=("True", "Started", minutes_ago(40))),
        State.NOT_RUNNING,
        Action.DEACTIVATE,
        "image ghcr.io/x:v2 cannot be pulled",
        id="pods-ready-true-means-kueues-timer-no-longer-runs",
    ),
    pytest.param(
        admitted()
        .waiting_pod("w-0", PULL_FAILS)
        .read_by_kueue(pending_checks=("gpu-provisioning",)),
        State.STARTING,
        Action.NONE,
        "starting: admission check gpu-provisioning pending; no action",
        id="a-pending-provisioning-request-check-is-starting",
    ),
    pytest.param(
        admitted().unschedulable_pod("w-0", scale_up_at=minutes_ago(10)).read_by_kueue(),
        State.STARTING,
        Action.NONE,
        "starting: node scale-up triggered for pod w-0 at 11:50; no action",
        id="a-recent-scale-up-is-starting",
    ),
    pytest.param(
        admitted(90).unschedulable_pod("w-0", scale_up_at=minutes_ago(40)).read_by_kueue(),
        State.NOT_RUNNING,
        Action.DEACTIVATE,
        "pod w-0 cannot be scheduled",
        id="a-scale-up-older-than-the-limit-no-longer-holds-it",
    ),
    pytest.param(
        admitted().unschedulable_pod("w-0").read_by_kueue(scale_ups_read=False),
        State.UNKNOWN,
        Action.NONE,
        "(node scale-up Events unreadable)",
        id="unschedulable-with-scale-ups-unreadable-is-unknown",
    ),
    # --- partly running, reactivation ---------------------------------------------------------
    pytest.param(
        admitted().gpu_pod("w-0").waiting_pod("w-1", PULL_FAILS).read_by_kueue(),
        State.UNKNOWN,
        Action.NONE,
        "partly running: 1 of 2 GPU pods run; pod w-1: image ghcr.io/x:v2 cannot be pulled "
        "(ImagePullBackOff); reported, never stopped",
        id="partly-running-is-reported-never-stopped",
    ),
    pytest.param(
        admitted(180).waiting_pod("w-0", PULL_FAILS).read_by_kueue(reactivated_at=minutes_ago(20)),
        State.NOT_RUNNING,
        Action.NONE,
        "not running for 20m of 30m (since reactivation at 11:40)",
        id="reactivated-then-stuck-again-counts-from-the-reactivation",
    ),
    pytest.param(
        admitted(180).waiting_pod("w-0", PULL_FAILS).read_by_kueue(reactivated_at=minutes_ago(35)),
        State.NOT_RUNNING,
        Action.DEACTIVATE,
        "not running for 35m, past 30m (since reactivation at 11:25)",
        id="reactivated-then-stuck-past-the-limit-is-stopped",
    ),
    # --- the limit counts from the GPU pods' creation too: a pod re-created (a node drained)
    # --- long after admission starts its own count ------------------------------------------
    pytest.param(
        a_workload(NS, "rc")
        .admitted(at=minutes_ago(3 * 24 * 60))
        .cpu_pod("head")
        .waiting_pod("w-0", PULL_FAILS, created=minutes_ago(5))
        .read_by_kueue(),
        State.NOT_RUNNING,
        Action.NONE,
        "not running for 5m of 30m (since pod w-0 was created at 11:55)",
        id="a-pod-recreated-days-after-admission-counts-from-its-creation",
    ),
    pytest.param(
        a_workload(NS, "rc")
        .admitted(at=minutes_ago(3 * 24 * 60))
        .cpu_pod("head")
        .waiting_pod("w-0", "CrashLoopBackOff", phase="Running", created=minutes_ago(2))
        .read_by_kueue(),
        State.NOT_RUNNING,
        Action.NONE,
        "not running for 2m of 30m (since pod w-0 was created at 11:58)",
        id="a-first-crash-loop-of-a-recreated-pod-counts-from-its-creation",
    ),
    pytest.param(
        a_workload(NS, "rc")
        .admitted(at=minutes_ago(3 * 24 * 60))
        .cpu_pod("head")
        .waiting_pod("w-0", PULL_FAILS, created=minutes_ago(40))
        .waiting_pod("w-1", PULL_FAILS, created=minutes_ago(35))
        .read_by_kueue(),
        State.NOT_RUNNING,
        Action.DEACTIVATE,
        "not running for 35m, past 30m (since pod w-1 was created at 11:25)",
        id="the-newest-gpu-pod-dates-it-and-past-the-limit-it-is-stopped",
    ),
    # --- durations in the one formatter's spelling, instants dated when not today ----------
    pytest.param(
        a_workload(NS, "rc")
        .created_at(minutes_ago(3 * 24 * 60))
        .admitted(at=minutes_ago(3 * 24 * 60))
        .cpu_pod("head")
        .waiting_pod("w-0", PULL_FAILS)
        .read_by_kueue(),
        State.NOT_RUNNING,
        Action.DEACTIVATE,
        "not running for 3d, past 30m (since admission at 2025-02-28 12:00): pod w-0",
        id="held-for-days-says-3d-and-dates-the-admission",
    ),
    pytest.param(
        admitted(90.5).waiting_pod("w-0", PULL_FAILS).read_by_kueue(),
        State.NOT_RUNNING,
        Action.DEACTIVATE,
        "not running for 1h30m30s, past 30m (since admission at 10:29)",
        id="an-uneven-span-is-written-in-parts",
    ),
    pytest.param(
        a_workload(NS, "rc")
        .admitted(at=minutes_ago(13 * 60))
        .cpu_pod("head")
        .waiting_pod("w-0", PULL_FAILS, created=minutes_ago(13 * 60))
        .read_by_kueue(
            pods_ready=("False", "WaitForStart", minutes_ago(13 * 60)),
            kueue=KUEUE_10M,
        ),
        State.NOT_RUNNING,
        Action.NONE,
        "it evicts it by 2025-03-02 23:10 with its 10m timeout (counted from 2025-03-02 23:00;",
        id="kueues-deadline-is-dated-when-not-today",
    ),
    # --- only the GPU containers say whether a pod runs: a sidecar without GPUs never does --
    pytest.param(
        admitted()
        .waiting_pod(
            "w-0", "CrashLoopBackOff", phase="Running", container="log-shipper", holds_gpus=False
        )
        .read_by_kueue(),
        State.UNKNOWN,
        Action.NONE,
        "running but not monitored: pod w-0 has 0 GPU series for 1 requested GPUs",
        id="a-crash-looping-sidecar-without-gpus-beside-a-running-gpu-container-runs",
    ),
    pytest.param(
        admitted()
        .waiting_pod("w-0", "CrashLoopBackOff", container="git-sync", holds_gpus=False)
        .read_by_kueue(),
        State.NOT_RUNNING,
        Action.DEACTIVATE,
        "pod w-0: container git-sync keeps crashing (CrashLoopBackOff)",
        id="a-pending-pod-held-back-by-an-init-container-without-gpus-is-not-running",
    ),
    # --- the monitoring gap stays unknown ----------------------------------------------------
    pytest.param(
        admitted().gpu_pod("w-0").read_by_kueue(),
        State.UNKNOWN,
        Action.NONE,
        "running but not monitored: pod w-0 has 0 GPU series for 1 requested GPUs",
        id="running-gpu-pods-without-series-are-running-but-not-monitored",
    ),
]


@pytest.mark.parametrize(("workload", "state", "action", "reason"), ROWS)
def test_not_running_decision_table(
    workload: WorkloadBuilder, state: State, action: Action, reason: str
) -> None:
    decision = judge(workload.build())

    assert (decision.state, decision.action) == (state, action), decision.reason
    assert reason in decision.reason


def test_the_time_left_counts_down_to_the_limit_and_none_is_promised_under_kueue() -> None:
    within = judge(admitted(20).waiting_pod("w-0", PULL_FAILS).read_by_kueue().build())
    kueue = judge(
        admitted(20)
        .waiting_pod("w-0", PULL_FAILS)
        .read_by_kueue(pods_ready=("False", "WaitForStart", minutes_ago(20)))
        .build()
    )

    assert within.time_left == timedelta(minutes=10)
    assert within.idle_since == minutes_ago(20)
    assert kueue.time_left is None


def test_only_the_monitoring_gap_is_flagged_unmonitored() -> None:
    gap = judge(admitted().gpu_pod("w-0").read_by_kueue().build())
    stuck = judge(admitted().waiting_pod("w-0", PULL_FAILS).read_by_kueue().build())

    assert gap.assessment is not None and gap.assessment.unmonitored
    assert stuck.assessment is not None and not stuck.assessment.unmonitored


def test_restart_proof_the_limit_counts_from_the_workloads_conditions_only() -> None:
    """Nothing is kept between cycles: a service started a minute ago reads how long the
    quota has been held from the Admitted (or Requeued=Reactivated) condition and the GPU
    pods' creationTimestamp, not from when it first saw the workload; here the pods are as
    old as the Workload (300 minutes), so the admission dates it."""
    old_objects = (
        a_workload(NS, "rc")
        .created_at(minutes_ago(300))
        .admitted(at=minutes_ago(45))
        .waiting_pod("w-0", PULL_FAILS)
        .read_by_kueue()
        .build()
    )
    readmitted = replace(old_objects, admitted_at=minutes_ago(20))  # past the 15m grace

    first_cycle = judge(old_objects)
    after_readmission = judge(readmitted)

    assert first_cycle.action is Action.DEACTIVATE
    assert first_cycle.idle_since == minutes_ago(45)
    assert (after_readmission.state, after_readmission.action) == (State.NOT_RUNNING, Action.NONE)
    assert after_readmission.time_left == timedelta(minutes=10)  # the limit's, not the grace's


@pytest.mark.parametrize(
    ("action", "expected", "says"),
    [
        (RuleAction.OBSERVE, Action.NONE, "observed only"),
        (RuleAction.WARN, Action.NONE, "warn only"),
        (RuleAction.DEACTIVATE, Action.DEACTIVATE, "cannot be pulled"),
    ],
)
def test_the_rules_action_applies_as_to_idle_work(
    action: RuleAction, expected: Action, says: str
) -> None:
    policy = with_default(a_policy(), action=action)

    decision = judge(
        admitted().waiting_pod("w-0", PULL_FAILS).read_by_kueue().build(), policy=policy
    )

    assert (decision.state, decision.action) == (State.NOT_RUNNING, expected)
    assert says in decision.reason


@pytest.mark.parametrize(
    ("workload", "pauses", "state"),
    [
        (admitted().waiting_pod("w-0", PULL_FAILS).read_by_kueue().exempt(), None, State.EXEMPT),
        (
            admitted().waiting_pod("w-0", PULL_FAILS).read_by_kueue(),
            Pauses(namespaces=frozenset({NS})),
            State.PAUSED,
        ),
    ],
    ids=["an-exemption-holds", "a-pause-holds"],
)
def test_exemptions_and_pauses_hold(
    workload: WorkloadBuilder, pauses: Pauses | None, state: State
) -> None:
    decision = judge(workload.build(), pauses=pauses)

    assert (decision.state, decision.action) == (state, Action.NONE)


def test_a_scoped_rules_own_limit_applies() -> None:
    policy = a_policy()
    longer = replace(
        policy.default_rule,
        usage=replace(policy.default_rule.usage, not_running_after=timedelta(hours=2)),
    )
    policy = replace(policy, rules=(longer,))

    decision = judge(
        admitted().waiting_pod("w-0", PULL_FAILS).read_by_kueue().build(), policy=policy
    )

    assert (decision.state, decision.action) == (State.NOT_RUNNING, Action.NONE)
    assert "not running for 45m of 2h" in decision.reason


# --- the same ladder as idle work: warned ahead, snoozed, then stopped -------------------------

LEAD = timedelta(minutes=15)


def staged(workload: WorkloadInfo) -> Decision:
    policy = with_default(a_policy(), notice=NoticeRules(warn_before=LEAD))
    decision = judge(workload, policy=policy)
    return stage(decision, workload, rule=decision.rule, dry_run=False, now=NOW)


LADDER_ROWS = [
    pytest.param(
        admitted().waiting_pod("w-0", PULL_FAILS).read_by_kueue(),
        State.NOT_RUNNING,
        Action.WARN,
        "warning: stop planned at",
        id="due-without-a-warning-is-warned-first",
    ),
    pytest.param(
        admitted(20).waiting_pod("w-0", PULL_FAILS).read_by_kueue(),
        State.NOT_RUNNING,
        Action.WARN,
        "not running for 20m of 30m",
        id="due-within-the-lead-time-is-warned-ahead",
    ),
    pytest.param(
        warned(
            admitted().waiting_pod("w-0", PULL_FAILS).read_by_kueue(),
            at=minutes_ago(20),
            planned=minutes_ago(5),
        ),
        State.NOT_RUNNING,
        Action.DEACTIVATE,
        "warned at",
        id="warned-and-served-its-notice-is-stopped",
    ),
    pytest.param(
        snoozed(
            warned(
                admitted().waiting_pod("w-0", PULL_FAILS).read_by_kueue(),
                at=minutes_ago(20),
                planned=minutes_ago(5),
            ),
            until=NOW + timedelta(hours=1),
        ),
        State.SNOOZED,
        Action.NONE,
        "snoozed until",
        id="a-snooze-holds-the-stop",
    ),
    pytest.param(
        admitted()
        .waiting_pod("w-0", PULL_FAILS)
        .read_by_kueue(pods_ready=("False", "WaitForStart", minutes_ago(45))),
        State.NOT_RUNNING,
        Action.NONE,
        "left to Kueue",
        id="left-to-kueue-is-never-warned",
    ),
]


@pytest.mark.parametrize(("workload", "state", "action", "reason"), LADDER_ROWS)
def test_not_running_climbs_the_same_ladder(
    workload: WorkloadBuilder, state: State, action: Action, reason: str
) -> None:
    decision = staged(workload.build())

    assert (decision.state, decision.action) == (state, action), decision.reason
    assert reason in decision.reason


# --- a reason stays bounded however many pods are stuck -----------------------------------------

# The scheduler's message for one of 32 workers on a large cluster (kubernetes
# pkg/scheduler/framework/types.go, FitError.Error): every node's reason, counted.
LONG_MESSAGE = "0/480 nodes are available: " + ", ".join(
    f"{n} node(s) had untolerated taint {{pool-{n}: gpu}}" for n in range(1, 40)
)


def test_a_reason_names_each_trouble_once_and_at_most_three_pods() -> None:
    workload = admitted()
    for index in range(32):
        workload = workload.unschedulable_pod(f"w-{index}", LONG_MESSAGE)

    decision = judge(workload.read_by_kueue().build())

    assert (decision.state, decision.action) == (State.NOT_RUNNING, Action.DEACTIVATE)
    assert "pods w-0, w-1, w-2 and 29 more cannot be scheduled: 0/480 nodes" in decision.reason
    assert decision.reason.count("cannot be scheduled") == 1
    assert len(decision.reason) < 400, decision.reason
    assert decision.assessment is not None
    assert len(decision.assessment.trouble) < 300, decision.assessment.trouble


def test_a_reason_names_at_most_three_troubles_however_many_differ() -> None:
    workload = admitted()
    for index in range(32):
        # a message that differs within its first 200 characters: clipped ones may not
        workload = workload.unschedulable_pod(f"w-{index}", f"{index}: {LONG_MESSAGE}")

    decision = judge(workload.read_by_kueue().build())

    assert decision.reason.count("cannot be scheduled") == 3
    assert decision.reason.endswith("; 29 more pods with other troubles")
    assert len(decision.reason) < 1000, decision.reason
    assert decision.assessment is not None
    assert decision.assessment.trouble.endswith("; and 29 more")
    assert len(decision.assessment.trouble) < 1000
