"""The loop acts on the warning stage (ISSUE 15), on the simulated cluster with the real
Reconciler: no stop without a warning at least warnBefore old, read back from annotations
after a restart; activity clears it; unknown holds it; a follower writes nothing; a warning
that was not recorded is not announced."""

from __future__ import annotations

from datetime import timedelta

import pytest

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.models import Action, Pauses, State, WorkloadInfo
from autoscaler.domain.notices.notifications import NoticeKind
from autoscaler.domain.outcomes import OutcomeKind
from autoscaler.domain.policy.rules import Rule, RuleAction
from tests.engine.warning_rig import NAMESPACE, T0, Rig, a_policy, due, minutes

WARNING_KEYS = (keys.WARNED_AT, keys.WARNED_UID, keys.STOP_PLANNED_AT)


def warned(rig: Rig) -> Rig:
    snapshot = rig.cycle_at(due())
    assert [a.action for a in snapshot.actions] == [Action.WARN]
    return rig


def test_an_idle_workload_due_is_warned_first_on_the_workload_its_owner_events_and_targets() -> (
    None
):
    rig = Rig()

    snapshot = rig.cycle_at(due())

    (action,) = snapshot.actions
    assert (action.action, action.outcome.kind) == (Action.WARN, OutcomeKind.DONE)
    stop_at = T0 + due() + minutes(15)
    workload = rig.workload()
    assert workload.active
    assert workload.annotations[keys.WARNED_AT] == time_text(T0 + due())
    assert workload.annotations[keys.WARNED_UID] == workload.uid
    assert workload.annotations[keys.STOP_PLANNED_AT] == time_text(stop_at)
    assert workload.owner_annotations[keys.STOP_PLANNED_AT] == time_text(stop_at)
    assert rig.events() == ["IdleGPUStopPlanned"]
    (message,) = rig.messages()
    assert time_text(stop_at) in message
    assert f"idle-gpu-autoscaler snooze {NAMESPACE}/{rig.ref.name} 4h" in message
    assert f"/api/v1/workloads/{NAMESPACE}/{rig.ref.name}/snooze" in message
    ((notification, targets),) = rig.sink.sent
    assert (notification.kind, notification.stop_at, targets) == (
        NoticeKind.WARNING,
        stop_at,
        ("team-a-slack",),  # the namespace's annotation, read with the namespace
    )
    assert notification.warned_at == T0 + due()
    assert snapshot.find(rig.ref) is not None


def test_no_stop_before_the_warning_is_warn_before_old_then_the_stop() -> None:
    rig = warned(Rig())

    waiting = rig.cycle_at(due() + minutes(10))
    assert waiting.actions == ()
    assert rig.workload().active

    stopped = rig.cycle_at(due() + minutes(16))
    (action,) = stopped.actions
    assert (action.action, action.outcome.kind) == (Action.DEACTIVATE, OutcomeKind.DONE)
    assert not rig.workload().active
    assert rig.sink.kinds() == [NoticeKind.WARNING, NoticeKind.DEACTIVATED]


def test_a_restarted_service_reads_the_warning_back_and_keeps_its_notice() -> None:
    rig = warned(Rig())

    rig.reconciler = rig.restarted()
    early = rig.cycle_at(due() + minutes(5))
    assert early.actions == ()
    assert rig.workload().active

    rig.reconciler = rig.restarted()
    late = rig.cycle_at(due() + minutes(16))
    assert [a.action for a in late.actions] == [Action.DEACTIVATE]
    assert not rig.workload().active


def test_a_restart_before_any_warning_never_stops_without_one() -> None:
    rig = Rig()
    rig.reconciler = rig.restarted()

    snapshot = rig.cycle_at(due() + minutes(30))  # long due, but never warned

    assert [a.action for a in snapshot.actions] == [Action.WARN]
    assert rig.workload().active


def test_busy_after_a_warning_clears_it_and_says_all_clear() -> None:
    rig = warned(Rig())
    rig.fleet.idle_since = None  # busy again

    snapshot = rig.cycle_at(due() + minutes(5))

    assert [a.action for a in snapshot.actions] == [Action.ALL_CLEAR]
    workload = rig.workload()
    assert not set(WARNING_KEYS) & set(workload.annotations)
    assert keys.STOP_PLANNED_AT not in workload.owner_annotations
    assert rig.events() == ["IdleGPUStopPlanned", "IdleGPUAllClear"]
    assert rig.sink.kinds() == [NoticeKind.WARNING, NoticeKind.ALL_CLEAR]
    assert rig.cycle_at(due() + minutes(6)).actions == ()  # cleared once


def test_unknown_holds_the_warning_neither_stopping_nor_clearing() -> None:
    rig = warned(Rig())
    rig.fleet.down = True

    snapshot = rig.cycle_at(due() + minutes(30))

    assert snapshot.actions == ()
    row = snapshot.find(rig.ref)
    assert row is not None and row.decision.state is State.UNKNOWN
    workload = rig.workload()
    assert workload.active
    assert workload.annotations[keys.WARNED_AT] == time_text(T0 + due())
    assert rig.sink.kinds() == [NoticeKind.WARNING]


def test_a_follower_decides_the_warning_but_writes_and_tells_nothing() -> None:
    rig = Rig(leads=False)

    snapshot = rig.cycle_at(due())

    row = snapshot.find(rig.ref)
    assert row is not None and row.decision.action is Action.WARN
    assert snapshot.actions == ()
    assert keys.WARNED_AT not in rig.workload().annotations
    assert (rig.events(), rig.sink.sent) == ([], [])


def test_a_warning_whose_annotation_write_failed_is_not_announced_and_is_retried() -> None:
    rig = Rig()
    rig.actuator.failing = True

    failed = rig.cycle_at(due())

    (action,) = failed.actions
    assert (action.action, action.outcome.kind) == (Action.WARN, OutcomeKind.FAILED)
    assert (rig.events(), rig.sink.sent) == ([], [])
    rig.actuator.failing = False
    again = rig.cycle_at(due() + minutes(1))
    assert [(a.action, a.outcome.kind) for a in again.actions] == [(Action.WARN, OutcomeKind.DONE)]
    assert rig.sink.kinds() == [NoticeKind.WARNING]
    # the stop counts from the warning actually written, never from the failed one
    assert rig.workload().annotations[keys.STOP_PLANNED_AT] == time_text(T0 + due() + minutes(16))


def test_a_warning_that_applied_but_lost_its_answer_is_still_announced_and_told() -> None:
    rig = Rig()
    rig.actuator.losing_answers = True

    snapshot = rig.cycle_at(due())

    (action,) = snapshot.actions
    assert (action.action, action.outcome.kind) == (Action.WARN, OutcomeKind.DONE)
    stop_at = time_text(T0 + due() + minutes(15))
    assert rig.workload().owner_annotations[keys.STOP_PLANNED_AT] == stop_at
    assert rig.events() == ["IdleGPUStopPlanned"]
    assert rig.sink.kinds() == [NoticeKind.WARNING], "the stop it plans is not a surprise"


def failing_route(workload: WorkloadInfo, rule: Rule) -> tuple[str, ...]:
    raise KeyError("a bug in the routing")


def test_a_failing_route_loses_only_the_notification_the_warning_stands_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rig = Rig(route=failing_route)

    snapshot = rig.cycle_at(due())

    (action,) = snapshot.actions
    assert (action.action, action.outcome.kind) == (Action.WARN, OutcomeKind.DONE)
    assert rig.events() == ["IdleGPUStopPlanned"]
    assert rig.sink.sent == []
    assert f"notification of {rig.ref} not sent" in caplog.text


def test_the_delete_rung_warns_then_deletes_the_raycluster_it_deactivated() -> None:
    rig = Rig(policy=a_policy(action=RuleAction.DELETE, delete_after=timedelta(hours=2)))
    warned(rig)
    rig.cycle_at(due() + minutes(16))
    assert not rig.workload().active
    deactivated_at = T0 + due() + minutes(16)

    early = rig.cycle_at(due() + minutes(16) + timedelta(hours=1))
    assert early.actions == ()

    warning = rig.cycle_at(due() + minutes(16) + timedelta(hours=1, minutes=45))
    assert [a.action for a in warning.actions] == [Action.WARN_DELETE]
    delete_at = deactivated_at + timedelta(hours=2)
    assert rig.workload().annotations[keys.DELETE_PLANNED_AT] == time_text(delete_at)
    assert rig.workload().owner_annotations[keys.DELETE_PLANNED_AT] == time_text(delete_at)

    deleted = rig.cycle_at(due() + minutes(16) + timedelta(hours=2, minutes=1))
    assert [(a.action, a.outcome.kind) for a in deleted.actions] == [
        (Action.DELETE, OutcomeKind.DONE)
    ]
    assert rig.cluster.get_workload(rig.ref) is None  # the RayCluster and its Workload
    assert rig.sink.kinds() == [
        NoticeKind.WARNING,
        NoticeKind.DEACTIVATED,
        NoticeKind.DELETE_WARNING,
        NoticeKind.DELETED,
    ]
    assert rig.events()[-2:] == ["IdleGPUDeletePlanned", "IdleGPUDeleted"]


def test_without_a_delete_rule_a_deactivated_raycluster_is_never_deleted() -> None:
    rig = Rig(policy=a_policy(delete_after=timedelta(hours=2)))  # action deactivate
    warned(rig)
    rig.cycle_at(due() + minutes(16))

    later = rig.cycle_at(due() + timedelta(days=2))

    assert later.actions == ()
    assert rig.cluster.get_workload(rig.ref) is not None


def test_a_pause_set_during_the_cycle_holds_a_warning_and_a_deletion_too() -> None:
    rig = Rig(policy=a_policy(action=RuleAction.DELETE, delete_after=timedelta(hours=2)))
    rig.cluster.pauses_after_first_read = Pauses(everything=True)
    held = rig.cycle_at(due())
    assert [(a.action, a.outcome.kind) for a in held.actions] == [
        (Action.WARN, OutcomeKind.SKIPPED)
    ]
    assert "paused" in held.actions[0].outcome.detail
    assert keys.WARNED_AT not in rig.workload().annotations

    rig.cluster.pauses, rig.cluster.pauses_after_first_read = Pauses(), None
    warned(rig)
    rig.cycle_at(due() + minutes(16))  # deactivated
    rig.cycle_at(due() + minutes(16) + timedelta(hours=1, minutes=45))  # deletion warned
    rig.cluster.pauses_after_first_read = Pauses(namespaces=frozenset({NAMESPACE}))
    paused = rig.cycle_at(due() + minutes(16) + timedelta(hours=2, minutes=1))

    assert [(a.action, a.outcome.kind) for a in paused.actions] == [
        (Action.DELETE, OutcomeKind.SKIPPED)
    ]
    assert "deletion held: paused (namespace team-a)" in paused.actions[0].outcome.detail
    assert rig.cluster.get_workload(rig.ref) is not None
