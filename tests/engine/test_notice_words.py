"""A notice says how the workload holds its GPUs: a workload admitted whose GPU pods never
run is warned as "GPUs held, not running", naming what Kubernetes says is wrong and for how
long, on the Event, in the notification (title and text) and after a snooze; an idle one
keeps the idle words. The decision is the real policy's and warning stage's."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from autoscaler.adapters.notify.wording import word
from autoscaler.domain.annotations import time_text
from autoscaler.domain.models import Action, Decision, Pauses, State, WorkloadInfo
from autoscaler.domain.notices.held import what_is_wrong
from autoscaler.domain.notices.notice import Notice, NoticeRules
from autoscaler.domain.notices.notifications import NoticeKind
from autoscaler.domain.notices.staging import stage
from autoscaler.domain.policy.decisions import decide
from autoscaler.domain.usage.assessment import held_class
from autoscaler.engine.notify.notices import event_message, notification_of
from tests.support.decision_builders import a_decision
from tests.support.domain_builders import (
    NOW,
    a_policy,
    a_workload,
    minutes_ago,
    usage,
    with_default,
)

IMAGE = "ghcr.io/x:v2"
CANNOT_PULL = f"image {IMAGE} cannot be pulled (ImagePullBackOff)"


def stuck_pulling(minutes: float = 45) -> WorkloadInfo:
    return (
        a_workload("team-a", "rc")
        .admitted(at=minutes_ago(minutes))
        .cpu_pod("head")
        .waiting_pod("w-0", "ImagePullBackOff", image=IMAGE)
        .waiting_pod("w-1", "ImagePullBackOff", image=IMAGE)
        .read_by_kueue()
        .build()
    )


def warned(workload: WorkloadInfo) -> Decision:
    policy = with_default(a_policy(), notice=NoticeRules(warn_before=timedelta(minutes=15)))
    rule = policy.default_rule.usage
    fleet = replace(usage().build(), window=rule.window, threshold=rule.threshold)
    decision = decide(workload, fleet, policy=policy, pauses=Pauses(), now=NOW)
    staged = stage(decision, workload, rule=decision.rule, dry_run=False, now=NOW)
    assert (staged.state, staged.action) == (State.NOT_RUNNING, Action.WARN), staged.reason
    return staged


def test_the_event_of_a_not_running_warning_says_gpus_held_not_running_and_what_is_wrong() -> None:
    workload = stuck_pulling()
    decision = warned(workload)
    stop_at = decision.notice.stop_at
    assert stop_at is not None

    message = event_message(decision, workload=workload)

    assert message.startswith(
        f"GPUs held, not running: stop planned at {time_text(stop_at)} — {CANNOT_PULL} "
        "for 45 min — by idle-gpu-autoscaler: not running for 45m, past 30m"
    )
    assert "Idle" not in message and "idle GPUs" not in message
    assert message.endswith("or get its GPU pods running.")
    assert (
        "RayCluster team-a/rc: it holds GPUs while none of its GPU pods runs. If stopped: "
        "suspended: KubeRay deletes its pods" in message
    )


def test_the_notification_of_a_not_running_warning_names_the_class_and_the_trouble() -> None:
    workload = stuck_pulling()
    decision = warned(workload)

    notification = notification_of(NoticeKind.WARNING, workload, decision, now=NOW)
    wording = word(notification)

    assert (notification.held, notification.wrong) == (
        State.NOT_RUNNING,
        f"{CANNOT_PULL} for 45 min",
    )
    assert wording.title == (
        "RayCluster team-a/rc holds GPUs, not running: stop planned at 2025-03-03 12:15 UTC "
        f"({CANNOT_PULL} for 45 min)"
    )
    assert wording.text.startswith("It holds 2 GPUs while none of its GPU pods runs: not running")
    assert "sat idle" not in wording.text and "keep it running" not in wording.text


def test_a_snoozed_not_running_workload_is_told_it_is_warned_again_if_still_not_running() -> None:
    workload = stuck_pulling()
    decision = warned(workload)
    snoozed = replace(
        notification_of(NoticeKind.WARNING, workload, decision, now=NOW),
        kind=NoticeKind.SNOOZED,
        snoozed_until=NOW + timedelta(hours=4),
        snoozed_by="alice",
    )

    assert "If it is still not running then" in word(snoozed).text


def test_the_trouble_is_said_once_per_kind_and_the_span_in_hours_past_two() -> None:
    decision = warned(stuck_pulling(minutes=185))

    assert what_is_wrong(decision) == f"{CANNOT_PULL} for 3h5m"


def test_an_idle_warning_keeps_the_idle_words() -> None:
    stop_at = NOW + timedelta(minutes=15)
    decision = replace(
        a_decision("team-a", "nb").idle().build(),
        action=Action.WARN,
        notice=Notice(warned_at=NOW, stop_at=stop_at),
    )
    workload = a_workload("team-a", "nb").build()

    wording = word(notification_of(NoticeKind.WARNING, workload, decision, now=NOW))

    assert held_class(decision) is State.IDLE and what_is_wrong(decision) is None
    assert event_message(decision, workload=workload).startswith(
        f"Idle GPUs: stop planned at {time_text(stop_at)} by idle-gpu-autoscaler: "
    )
    assert wording.title == "RayCluster team-a/nb will be stopped at 2025-03-03 12:15 UTC"
    assert wording.text.startswith("It holds 1 GPU that sat idle: ")
