"""The warning stage under a rule that stops: no stop without a warning that counts, given at
least `warnBefore` earlier, read back from the Workload's annotations only.

Unless a row says otherwise: `team-a/rc`, a RayCluster's Workload admitted a day ago with one
GPU pod as old, under the default rule with action `deactivate`, `reclaim: always` and a
15-minute lead; judged at `NOW`, dry run off.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from autoscaler.domain import annotations as ann
from autoscaler.domain.models import Action, Decision, Pauses, State
from autoscaler.domain.notices.staging import stage
from autoscaler.domain.policy.decisions import decide
from autoscaler.domain.policy.rules import Reclaim, Rule, RuleAction
from tests.support.domain_builders import (
    NOW,
    WorkloadBuilder,
    a_policy,
    minutes_ago,
    usage,
    with_default,
)
from tests.support.notice_builders import (
    LEAD,
    a_decision,
    a_gpu_workload,
    a_rule,
    as_written,
    idle_for_now,
    stop_due,
    warned,
)

MIN = timedelta(minutes=1)


def fresh() -> WorkloadBuilder:
    return a_gpu_workload()


STOP_ROWS = [
    pytest.param(
        fresh(),
        stop_due(),
        a_rule(),
        (Action.WARN, State.IDLE, NOW + LEAD),
        id="a-due-stop-without-a-warning-is-warned-first-and-not-stopped",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(20), planned=minutes_ago(5)),
        stop_due(),
        a_rule(),
        (Action.DEACTIVATE, State.IDLE, minutes_ago(5)),
        id="a-warning-older-than-the-lead-time-lets-the-stop-go-ahead",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(10), planned=NOW + 5 * MIN),
        stop_due(),
        a_rule(),
        (Action.NONE, State.IDLE, NOW + 5 * MIN),
        id="a-warning-younger-than-the-lead-time-waits-for-its-promised-time",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(20), planned=minutes_ago(5)),
        stop_due(),
        a_rule(warn_before=30 * MIN),
        (Action.NONE, State.IDLE, NOW + 10 * MIN),
        id="a-raised-warn-before-pushes-the-stop-past-the-promise",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(20), planned=NOW + 20 * MIN),
        stop_due(),
        a_rule(warn_before=5 * MIN),
        (Action.NONE, State.IDLE, NOW + 20 * MIN),
        id="a-lowered-warn-before-never-brings-the-promised-stop-forward",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(20)),
        stop_due(),
        a_rule(),
        (Action.DEACTIVATE, State.IDLE, minutes_ago(5)),
        id="a-warning-without-its-promise-counts-from-its-own-time-plus-the-lead",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(20), planned=minutes_ago(5), uid="uid-old-object"),
        stop_due(),
        a_rule(),
        (Action.WARN, State.IDLE, NOW + LEAD),
        id="a-warning-given-to-another-object-with-this-name-is-void-and-a-fresh-one-given",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(20), planned=minutes_ago(5)).reactivated(at=minutes_ago(10)),
        stop_due(),
        a_rule(),
        (Action.WARN, State.IDLE, NOW + LEAD),
        id="a-warning-from-before-a-reactivation-is-void-and-a-fresh-one-given",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(40), planned=minutes_ago(25)).admitted(at=minutes_ago(30)),
        stop_due(),
        a_rule(),
        (Action.WARN, State.IDLE, NOW + LEAD),
        id="a-warning-from-before-the-latest-admission-is-void",
    ),
    pytest.param(
        warned(a_gpu_workload().gpu_pod("w-1", created=minutes_ago(10)), at=minutes_ago(20)),
        stop_due(),
        a_rule(),
        (Action.WARN, State.IDLE, NOW + LEAD),
        id="a-warning-from-before-a-gpu-pod-started-is-void",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(20)).annotated(
            ann.EXEMPT_SET_AT, ann.time_text(minutes_ago(10)), on_owner=True
        ),
        stop_due(),
        a_rule(),
        (Action.WARN, State.IDLE, NOW + LEAD),
        id="an-exemption-made-after-the-warning-answered-it-so-a-fresh-one-is-given",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(20), planned=minutes_ago(5)).exempt_until(
            minutes_ago(2), on_owner=True
        ),
        stop_due(),
        a_rule(),
        (Action.WARN, State.IDLE, NOW + LEAD),
        id="a-hand-set-exemption-that-ran-out-after-the-warning-answered-it-too",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(20), planned=minutes_ago(5)).exempt_until(minutes_ago(30)),
        stop_due(),
        a_rule(),
        (Action.DEACTIVATE, State.IDLE, minutes_ago(5)),
        id="an-exemption-that-ran-out-before-the-warning-leaves-it-standing",
    ),
    pytest.param(
        fresh(),
        a_decision(State.IDLE, Action.DEFERRED),
        a_rule(),
        (Action.WARN, State.IDLE, NOW + LEAD),
        id="a-stop-the-cap-deferred-is-warned-so-its-notice-starts",
    ),
    pytest.param(
        fresh(),
        stop_due(),
        a_rule(action=RuleAction.DELETE),
        (Action.WARN, State.IDLE, NOW + LEAD),
        id="a-delete-rule-warns-before-its-deactivation-too",
    ),
    pytest.param(
        fresh(),
        stop_due(),
        a_rule(warn_before=timedelta(0)),
        (Action.DEACTIVATE, State.IDLE, None),
        id="without-a-lead-time-the-stop-goes-ahead-as-before",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(5), planned=NOW + 10 * MIN),
        stop_due(),
        a_rule(warn_before=timedelta(0)),
        (Action.NONE, State.IDLE, NOW + 10 * MIN),
        id="a-warning-given-keeps-its-promise-after-warn-before-is-set-to-zero",
    ),
]

IDLE_ROWS = [
    pytest.param(
        fresh(),
        idle_for_now(30 * MIN),
        a_rule(),
        (Action.NONE, State.IDLE, None),
        id="idle-with-the-stop-further-off-than-the-lead-time-is-not-warned-yet",
    ),
    pytest.param(
        fresh(),
        idle_for_now(10 * MIN),
        a_rule(),
        (Action.WARN, State.IDLE, NOW + LEAD),
        id="idle-with-the-stop-within-the-lead-time-is-warned-with-the-full-lead",
    ),
    pytest.param(
        fresh(),
        idle_for_now(10 * MIN),
        a_rule(warn_before=5 * MIN),
        (Action.NONE, State.IDLE, None),
        id="idle-ten-minutes-from-its-stop-under-a-five-minute-lead-waits",
    ),
    pytest.param(
        fresh(),
        idle_for_now(10 * MIN),
        a_rule(reclaim=Reclaim.WHEN_CONTENDED),
        (Action.NONE, State.IDLE, None),
        id="when-contended-idle-is-warned-only-once-picked-for-a-waiter",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(5), planned=NOW + 10 * MIN),
        idle_for_now(8 * MIN),
        a_rule(),
        (Action.NONE, State.IDLE, NOW + 10 * MIN),
        id="idle-and-warned-shows-its-planned-stop-and-is-not-warned-twice",
    ),
]


@pytest.mark.parametrize(("workload", "decision", "rule", "expected"), STOP_ROWS)
def test_a_stop_is_warned_first_and_goes_ahead_only_after_the_notice(
    workload: WorkloadBuilder,
    decision: Decision,
    rule: Rule,
    expected: tuple[Action, State, datetime | None],
) -> None:
    staged = stage(decision, workload.build(), rule=rule, dry_run=False, now=NOW)
    assert (staged.action, staged.state, staged.notice.stop_at) == expected


@pytest.mark.parametrize(("workload", "decision", "rule", "expected"), IDLE_ROWS)
def test_idle_work_is_warned_when_its_stop_comes_within_the_lead_time(
    workload: WorkloadBuilder,
    decision: Decision,
    rule: Rule,
    expected: tuple[Action, State, datetime | None],
) -> None:
    staged = stage(decision, workload.build(), rule=rule, dry_run=False, now=NOW)
    assert (staged.action, staged.state, staged.notice.stop_at) == expected


def test_the_warning_survives_a_restart_because_only_the_annotations_hold_it() -> None:
    workload, rule = a_gpu_workload().build(), a_rule()
    warning = stage(stop_due(), workload, rule=rule, dry_run=False, now=NOW)
    after_restart = as_written(workload, warning)  # nothing else is carried over
    early = stage(stop_due(), after_restart, rule=rule, dry_run=False, now=NOW + 14 * MIN)
    served = stage(stop_due(), after_restart, rule=rule, dry_run=False, now=NOW + LEAD)
    assert warning.action is Action.WARN
    assert (early.action, early.notice.warned_at) == (Action.NONE, NOW)
    assert (served.action, served.notice.stop_at) == (Action.DEACTIVATE, NOW + LEAD)


def test_annotations_kept_to_the_second_never_bring_the_stop_forward() -> None:
    """A warning written at 12:00:00.7 with a 15-minute lead promises 12:15:01, not 12:15:00:
    the annotation drops the fraction, so the promise is rounded up before it is written."""
    workload, rule = a_gpu_workload().build(), a_rule()
    written_at = NOW + timedelta(milliseconds=700)
    warning = stage(stop_due(), workload, rule=rule, dry_run=False, now=written_at)
    after_restart = as_written(workload, warning)
    promised = warning.notice.stop_at
    assert promised == NOW + LEAD + timedelta(seconds=1)
    just_short = stage(stop_due(), after_restart, rule=rule, dry_run=False, now=written_at + LEAD)
    assert just_short.action is Action.NONE
    on_time = stage(stop_due(), after_restart, rule=rule, dry_run=False, now=promised)
    assert on_time.action is Action.DEACTIVATE


def test_a_missed_cycle_never_shortens_the_notice() -> None:
    """The first cycle that sees the stop due, however late, warns; it never stops."""
    rule = a_rule()
    late = stage(stop_due(), a_gpu_workload().build(), rule=rule, dry_run=False, now=NOW)
    assert (late.action, late.notice.stop_at) == (Action.WARN, NOW + LEAD)


def test_a_contended_stop_keeps_its_beneficiary_when_it_is_warned() -> None:
    waiter = replace(stop_due().workload, name="waiter")
    decision = replace(stop_due(), beneficiary=waiter)
    staged = stage(decision, a_gpu_workload().build(), rule=a_rule(), dry_run=False, now=NOW)
    assert (staged.action, staged.beneficiary) == (Action.WARN, waiter)


def test_the_warning_reason_says_when_the_stop_is_planned() -> None:
    staged = stage(stop_due(), a_gpu_workload().build(), rule=a_rule(), dry_run=False, now=NOW)
    assert "stop planned at 2025-03-03T12:15:00Z (15m notice)" in staged.reason


def test_policy_then_stage_warns_an_idle_workload_instead_of_stopping_it() -> None:
    policy = with_default(a_policy(), notice=a_rule().notice)
    workload = a_gpu_workload().build()
    fleet = usage().gpu("team-a", "w-0", peak=0.01, last_busy=minutes_ago(300)).build()
    decided = decide(workload, fleet, policy=policy, pauses=Pauses(), now=NOW)
    staged = stage(decided, workload, rule=policy.default_rule, dry_run=False, now=NOW)
    assert decided.action is Action.DEACTIVATE
    assert (staged.action, staged.notice.stop_at) == (Action.WARN, NOW + LEAD)


def decided_under(action: RuleAction) -> Decision:
    policy = with_default(a_policy(), action=action, notice=a_rule().notice)
    workload = a_gpu_workload().build()
    fleet = usage().gpu("team-a", "w-0", peak=0.01, last_busy=minutes_ago(300)).build()
    return decide(workload, fleet, policy=policy, pauses=Pauses(), now=NOW)


def test_a_warn_rules_policy_decision_names_the_rule_and_stops_nothing() -> None:
    decided = decided_under(RuleAction.WARN)
    assert decided.action is Action.NONE
    assert decided.reason.endswith("; warn only (rule default's action is warn)")


def test_a_delete_rule_deactivates_as_a_deactivate_rule_does() -> None:
    assert decided_under(RuleAction.DELETE).action is Action.DEACTIVATE
