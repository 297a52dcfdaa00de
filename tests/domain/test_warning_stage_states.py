"""The warning stage beyond the stop itself: activity clearing a warning, states that hold
it, idle-held work told once, a warn-only rule, and dry run (which writes nothing). Snoozes
in the stage: test_snoozes.py.

Unless a row says otherwise: `team-a/rc`, a RayCluster's Workload admitted a day ago with one
GPU pod as old, under the default rule with action `deactivate`, `reclaim: always` and a
15-minute lead; judged at `NOW`, dry run off.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from autoscaler.domain import annotations as ann
from autoscaler.domain.models import Action, Decision, State
from autoscaler.domain.notices.staging import stage
from autoscaler.domain.policy.rules import Rule, RuleAction
from tests.support.domain_builders import NOW, WorkloadBuilder, minutes_ago, rfc3339
from tests.support.notice_builders import (
    a_decision,
    a_gpu_workload,
    a_rule,
    idle_for_now,
    stop_due,
    warned,
)

MIN = timedelta(minutes=1)


def fresh() -> WorkloadBuilder:
    return a_gpu_workload()


def warned_lately() -> WorkloadBuilder:
    """Warned 20 minutes ago, the stop promised 5 minutes ago: overdue."""
    return warned(fresh(), at=minutes_ago(20), planned=minutes_ago(5))


def told_idle_held(at: datetime) -> WorkloadBuilder:
    return fresh().annotated(ann.IDLE_HELD_NOTIFIED_AT, rfc3339(at))


STATE_ROWS = [
    pytest.param(
        warned_lately(),
        a_decision(State.BUSY),
        a_rule(),
        False,
        Action.ALL_CLEAR,
        id="busy-after-a-warning-clears-it",
    ),
    pytest.param(
        warned_lately(),
        a_decision(State.LOADING),
        a_rule(),
        False,
        Action.ALL_CLEAR,
        id="loading-after-a-warning-clears-it",
    ),
    pytest.param(
        warned_lately(),
        a_decision(State.IDLE_HELD),
        a_rule(),
        False,
        Action.ALL_CLEAR,
        id="idle-held-has-busy-gpus-so-it-clears-a-warning-too",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(20), uid="uid-old-object"),
        a_decision(State.BUSY),
        a_rule(),
        False,
        Action.NONE,
        id="a-void-leftover-warning-alone-is-not-cleared-nobody-was-warned",
    ),
    pytest.param(
        warned_lately(),
        a_decision(State.UNKNOWN),
        a_rule(),
        False,
        Action.NONE,
        id="unknown-holds-the-warning-no-stop-and-no-clear",
    ),
    pytest.param(
        warned_lately(),
        a_decision(State.PAUSED),
        a_rule(),
        False,
        Action.NONE,
        id="paused-holds-the-warning",
    ),
    pytest.param(
        warned_lately(),
        a_decision(State.GRACE),
        a_rule(),
        False,
        Action.NONE,
        id="grace-holds-the-warning",
    ),
    pytest.param(
        warned_lately(),
        a_decision(State.EXEMPT),
        a_rule(),
        False,
        Action.NONE,
        id="exempt-holds-the-warning",
    ),
    pytest.param(
        fresh(),
        a_decision(State.IDLE_HELD),
        a_rule(),
        False,
        Action.NOTIFY_IDLE_HELD,
        id="idle-held-gpus-are-told-about",
    ),
    pytest.param(
        told_idle_held(minutes_ago(30)),
        a_decision(State.IDLE_HELD),
        a_rule(),
        False,
        Action.NONE,
        id="idle-held-gpus-are-told-about-once-per-admission",
    ),
    pytest.param(
        told_idle_held(minutes_ago(30)).admitted(at=minutes_ago(20)),
        a_decision(State.IDLE_HELD),
        a_rule(),
        False,
        Action.NOTIFY_IDLE_HELD,
        id="idle-held-gpus-are-told-again-after-a-new-admission",
    ),
    pytest.param(
        fresh(),
        a_decision(State.IDLE_HELD),
        a_rule(action=RuleAction.OBSERVE),
        False,
        Action.NONE,
        id="an-observe-rule-tells-nobody-about-idle-held-gpus",
    ),
    pytest.param(
        fresh(),
        a_decision(State.IDLE_HELD),
        a_rule(),
        True,
        Action.NONE,
        id="dry-run-tells-nobody-about-idle-held-gpus",
    ),
    pytest.param(
        fresh(),
        a_decision(State.IDLE, Action.WOULD_DEACTIVATE),
        a_rule(),
        True,
        Action.WOULD_DEACTIVATE,
        id="dry-run-reports-the-stop-and-gives-no-warning",
    ),
    pytest.param(
        fresh(),
        idle_for_now(5 * MIN),
        a_rule(),
        True,
        Action.NONE,
        id="dry-run-writes-no-warning-ahead-of-a-stop",
    ),
    pytest.param(
        fresh(),
        idle_for_now(timedelta(0)),
        a_rule(action=RuleAction.WARN),
        False,
        Action.WARN,
        id="a-warn-rule-warns-when-idle-the-whole-window",
    ),
    pytest.param(
        warned(fresh(), at=minutes_ago(60)),
        idle_for_now(timedelta(0)),
        a_rule(action=RuleAction.WARN),
        False,
        Action.NONE,
        id="a-warn-rule-warns-once-and-never-stops",
    ),
    pytest.param(
        fresh(),
        idle_for_now(10 * MIN),
        a_rule(action=RuleAction.WARN),
        False,
        Action.NONE,
        id="a-warn-rule-warns-only-once-the-window-is-complete",
    ),
    pytest.param(
        fresh(),
        idle_for_now(timedelta(0)),
        a_rule(action=RuleAction.WARN),
        True,
        Action.NONE,
        id="a-warn-rule-in-dry-run-writes-no-warning",
    ),
    pytest.param(
        warned_lately(),
        a_decision(State.BUSY),
        a_rule(action=RuleAction.WARN),
        False,
        Action.ALL_CLEAR,
        id="a-warn-rule-clears-its-warning-on-activity",
    ),
    pytest.param(
        fresh(),
        stop_due(),
        a_rule(action=RuleAction.OBSERVE),
        False,
        Action.DEACTIVATE,
        id="an-observe-rule-is-left-to-the-policy-the-stage-adds-nothing",
    ),
]


@pytest.mark.parametrize(("workload", "decision", "rule", "dry_run", "expected"), STATE_ROWS)
def test_activity_clears_a_warning_and_every_other_state_holds_it(
    workload: WorkloadBuilder, decision: Decision, rule: Rule, dry_run: bool, expected: Action
) -> None:
    staged = stage(decision, workload.build(), rule=rule, dry_run=dry_run, now=NOW)
    assert staged.action is expected


def test_a_held_warning_is_still_shown_with_its_stop() -> None:
    staged = stage(
        a_decision(State.UNKNOWN), warned_lately().build(), rule=a_rule(), dry_run=False, now=NOW
    )
    assert (staged.notice.warned_at, staged.notice.stop_at) == (minutes_ago(20), minutes_ago(5))


def test_a_warn_rule_promises_no_stop() -> None:
    rule = a_rule(action=RuleAction.WARN)
    staged = stage(idle_for_now(timedelta(0)), fresh().build(), rule=rule, dry_run=False, now=NOW)
    assert (staged.notice.warned_at, staged.notice.stop_at) == (NOW, None)


def test_dry_run_says_it_would_warn_first() -> None:
    decision = a_decision(State.IDLE, Action.WOULD_DEACTIVATE)
    staged = stage(decision, fresh().build(), rule=a_rule(), dry_run=True, now=NOW)
    assert staged.reason.endswith("; would warn 15m first")


def test_an_all_clear_says_the_warning_is_withdrawn_at_its_time_of_day() -> None:
    # a slow start the metrics cannot see is warned, then cleared: the warning working
    staged = stage(
        a_decision(State.BUSY), warned_lately().build(), rule=a_rule(), dry_run=False, now=NOW
    )

    assert staged.action is Action.ALL_CLEAR
    assert staged.reason.endswith("; busy after the warning of 11:40: warning withdrawn, no stop")
    assert "all clear" not in staged.reason, "the action says it; the reason says why"
