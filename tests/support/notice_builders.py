"""Builders for the warning stage's tables (ISSUE 15): rules with a lead time, decisions as
the policy leaves them, and the annotations the service writes (a warning, a snooze, a
deactivation), so each row states only what matters to it.

    workload = warned(a_workload("team-a", "rc").gpu_pod("w-0"), at=minutes_ago(20)).build()
    stage(stop_due(), workload, rule=a_rule(), dry_run=False, now=NOW)

Times are fixed instants around `NOW`, never the clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta

from autoscaler.domain import annotations as ann
from autoscaler.domain.models import Action, Decision, State, WorkloadInfo, WorkloadRef
from autoscaler.domain.notices.notice import NoticeRules, SnoozeBounds
from autoscaler.domain.policy.rules import Reclaim, Rule, RuleAction
from tests.support.domain_builders import (
    A_DEFAULT_RULE,
    WorkloadBuilder,
    a_policy,
    a_workload,
    minutes_ago,
    rfc3339,
)

LEAD = timedelta(minutes=15)
NS, NAME = "team-a", "rc"


def a_rule(
    *,
    action: RuleAction = RuleAction.DEACTIVATE,
    warn_before: timedelta = LEAD,
    reclaim: Reclaim = Reclaim.ALWAYS,
    delete_after: timedelta | None = None,
    snooze: SnoozeBounds | None = None,
) -> Rule:
    """The default rule of the shipped policy, with a notice (15 minutes unless told)."""
    notice = NoticeRules(
        warn_before=warn_before, snooze=snooze or SnoozeBounds(), delete_after=delete_after
    )
    base = a_policy().default_rule
    return Rule(
        name="default",
        usage=base.usage,
        grace_period=base.grace_period,
        reclaim=reclaim,
        action=action,
        notice=notice,
    )


def a_decision(
    state: State = State.IDLE,
    action: Action = Action.NONE,
    *,
    time_left: timedelta | None = None,
    reason: str = "idle",
) -> Decision:
    """A decision as the policy leaves it, for `team-a/rc`."""
    left = time_left if time_left is not None or state is not State.IDLE else timedelta(0)
    return Decision(
        workload=WorkloadRef(NS, NAME),
        state=state,
        action=action,
        reason=reason,
        gpus=1,
        time_left=left,
        idle_since=minutes_ago(120) if state is State.IDLE else None,
        rule=A_DEFAULT_RULE,
    )


def stop_due() -> Decision:
    """Idle the whole window under a rule that stops: the policy wants the stop."""
    return a_decision(State.IDLE, Action.DEACTIVATE, time_left=timedelta(0))


def idle_for_now(time_left: timedelta) -> Decision:
    """Idle, the window completes in `time_left`."""
    return a_decision(State.IDLE, Action.NONE, time_left=time_left)


def a_gpu_workload() -> WorkloadBuilder:
    """A RayCluster's Workload, admitted a day ago, one GPU pod as old."""
    return a_workload(NS, NAME).gpu_pod("w-0")


def uid_of(builder: WorkloadBuilder) -> str:
    return f"uid-{builder.namespace}-{builder.name}"  # as WorkloadBuilder.build names it


def warned(
    builder: WorkloadBuilder,
    *,
    at: datetime,
    planned: datetime | None = None,
    uid: str | None = None,
) -> WorkloadBuilder:
    """The warning the service writes: when, for which object, and the promised stop."""
    builder.annotated(ann.WARNED_AT, rfc3339(at))
    builder.annotated(ann.WARNED_UID, uid if uid is not None else uid_of(builder))
    if planned is not None:
        builder.annotated(ann.STOP_PLANNED_AT, rfc3339(planned))
    return builder


def snoozed(
    builder: WorkloadBuilder,
    *,
    until: datetime,
    by: str = "alice",
    granted: bool = True,
    grants: Iterable[datetime] = (),
) -> WorkloadBuilder:
    """A snooze as the service grants it (`granted`), or written by hand (no SNOOZE_GRANTED)."""
    builder.annotated(ann.SNOOZED_UNTIL, rfc3339(until)).annotated(ann.SNOOZED_BY, by)
    if granted:
        builder.annotated(ann.SNOOZE_GRANTED, rfc3339(until))
    times = list(grants)
    if times:
        builder.annotated(ann.SNOOZES, ",".join(rfc3339(t) for t in times))
    return builder


def deactivated_by_us(builder: WorkloadBuilder, *, at: datetime) -> WorkloadBuilder:
    """Our deactivation, Kueue's eviction done: inactive, not admitted, pods gone."""
    builder.pods.clear()
    return builder.annotated(ann.DEACTIVATED_AT, rfc3339(at)).inactive().not_admitted()


def as_written(workload: WorkloadInfo, decision: Decision) -> WorkloadInfo:
    """The Workload after the engine wrote a WARN decision's annotations: what a restarted
    service reads back (the stage keeps nothing in memory)."""
    notice = decision.notice
    assert decision.action is Action.WARN and notice.warned_at is not None
    written = dict(workload.annotations)
    written[ann.WARNED_AT] = ann.time_text(notice.warned_at)
    written[ann.WARNED_UID] = workload.uid
    if notice.stop_at is not None:
        written[ann.STOP_PLANNED_AT] = ann.time_text(notice.stop_at)
    return replace(workload, annotations=written)
