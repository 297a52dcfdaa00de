"""The guards' pure rules: the hourly count, deferring, undone and contested workloads."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.audit.subjects import AFTER_KUEUE_PREEMPTION, Subject
from autoscaler.domain.guards.caps import defer
from autoscaler.domain.guards.screen import (
    Contest,
    ContestedRules,
    Deed,
    LoopRecord,
    leave_contested,
    newly_contested,
    newly_undone,
    settle_lost_answers,
    started_in_last_hour,
)
from autoscaler.domain.models import Action, Decision, State, WorkloadRef
from autoscaler.domain.outcomes import Outcome
from autoscaler.domain.policy.management import Manager
from tests.support.domain_builders import (
    A_DEFAULT_RULE,
    NOW,
    WorkloadBuilder,
    a_workload,
    minutes_ago,
)

RC = WorkloadRef("team-a", "rc")
LOST = Outcome.unknown("answer lost")
CONFIRMED = Outcome.done("confirmed")
REFUTED = Outcome.failed("refuted")
RULES = ContestedRules(undone_within=timedelta(minutes=10), times=3, span=timedelta(hours=24))


def deactivated(
    minutes: float, *, outcome: Outcome | None = None, ref: WorkloadRef = RC
) -> LoopRecord:
    return LoopRecord(minutes_ago(minutes), Deed.DEACTIVATE, ref, outcome=outcome)


def marked(minutes: float) -> LoopRecord:
    return LoopRecord(minutes_ago(minutes), Deed.MARK, RC)


def stopped_after_preemption(minutes: float) -> LoopRecord:
    subject = Subject(stopped_after=AFTER_KUEUE_PREEMPTION)
    return LoopRecord(minutes_ago(minutes), Deed.DEACTIVATE, RC, subject=subject)


def undone(minutes: float, ref: WorkloadRef = RC) -> LoopRecord:
    return LoopRecord(minutes_ago(minutes), Deed.UNDONE, ref)


def idle(name: str, *, idle_minutes: float, action: Action = Action.DEACTIVATE) -> Decision:
    return Decision(
        WorkloadRef("team-a", name),
        State.IDLE,
        action,
        "idle for the whole window",
        idle_since=minutes_ago(idle_minutes),
        rule=A_DEFAULT_RULE,
    )


@pytest.mark.parametrize(
    ("records", "count"),
    [
        pytest.param([], 0, id="nothing-recorded"),
        pytest.param([deactivated(5), deactivated(59)], 2, id="two-within-the-hour"),
        pytest.param([deactivated(60), deactivated(61)], 0, id="an-hour-ago-is-outside"),
        pytest.param(
            [deactivated(5), deactivated(5, outcome=Outcome.failed("503"))],
            1,
            id="a-failed-patch-still-counts-once",
        ),
        pytest.param(
            [deactivated(5), deactivated(5, outcome=LOST)], 1, id="a-lost-answer-counts-once"
        ),
        pytest.param([undone(5)], 0, id="other-deeds-do-not-count"),
        # docs/RECLAIM.md: the deactivation after Kueue's preemption of our mark is the stop
        # the mark stood for; only that one is exempt.
        pytest.param(
            [marked(30), stopped_after_preemption(5)], 1, id="the-stop-after-our-mark-once"
        ),
        pytest.param([marked(30), marked(5)], 2, id="a-re-mark-after-an-unmark-counts"),
        pytest.param(
            [marked(30), deactivated(5)], 2, id="an-ordinary-stop-after-an-old-mark-counts"
        ),
        pytest.param(
            [stopped_after_preemption(5)], 1, id="after-a-preemption-without-our-mark-counts"
        ),
    ],
)
def test_the_hourly_count_is_the_deactivations_begun_in_the_last_hour(
    records: list[LoopRecord], count: int
) -> None:
    assert started_in_last_hour(records, now=NOW) == count


def test_deferring_keeps_the_longest_idle_and_says_why_for_the_rest() -> None:
    decisions = [
        idle("recent", idle_minutes=61),
        idle("oldest", idle_minutes=300),
        idle("busy", idle_minutes=0, action=Action.NONE),
        idle("older", idle_minutes=120),
    ]
    kept = defer(decisions, keep=2, why="hourly cap")
    assert [d.action for d in kept] == [
        Action.DEFERRED,
        Action.DEACTIVATE,
        Action.NONE,
        Action.DEACTIVATE,
    ]
    assert kept[0].reason.endswith("; deferred: hourly cap")


@pytest.mark.parametrize("keep", [0, -3], ids=["zero", "negative"])
def test_deferring_with_nothing_left_defers_every_action(keep: int) -> None:
    decisions = [
        idle("a", idle_minutes=90),
        idle("b", idle_minutes=90, action=Action.WOULD_DEACTIVATE),
    ]
    assert {d.action for d in defer(decisions, keep=keep, why="breaker")} == {Action.DEFERRED}


def test_a_contested_workload_is_left_alone_whatever_was_decided() -> None:
    decisions = [idle("rc", idle_minutes=90), idle("other", idle_minutes=90)]
    marks = {RC: Contest(since=NOW, reason="undone 3 times")}
    left = leave_contested(decisions, marks)
    assert [d.action for d in left] == [Action.NONE, Action.DEACTIVATE]
    assert left[0].reason == "contested: undone 3 times"


@pytest.mark.parametrize(
    ("records", "active", "counted"),
    [
        pytest.param([deactivated(3)], True, True, id="active-again-three-minutes-after"),
        pytest.param([deactivated(3)], False, False, id="still-deactivated"),
        pytest.param([deactivated(11)], True, False, id="set-back-after-the-window"),
        pytest.param([undone(1), deactivated(3)], True, False, id="already-counted"),
        pytest.param(
            [undone(3), deactivated(3)],
            True,
            True,
            id="the-undo-seen-in-the-cycle-that-deactivated-again-was-the-one-before",
        ),
        pytest.param(
            [deactivated(3, outcome=Outcome.failed("503")), deactivated(3)],
            True,
            False,
            id="a-failed-patch-was-never-done",
        ),
        pytest.param(
            [deactivated(3, outcome=LOST), deactivated(3)],
            True,
            True,
            id="a-lost-answer-counts-until-refuted",
        ),
        pytest.param(
            [deactivated(3, outcome=REFUTED), deactivated(3, outcome=LOST), deactivated(3)],
            True,
            False,
            id="a-lost-answer-refuted-was-never-done",
        ),
        pytest.param(
            [deactivated(3, outcome=CONFIRMED), deactivated(3, outcome=LOST), deactivated(3)],
            True,
            True,
            id="a-lost-answer-confirmed-was-done",
        ),
        pytest.param([undone(50), deactivated(3)], True, True, id="an-earlier-undo-is-another"),
        pytest.param([], True, False, id="never-deactivated"),
    ],
)
def test_a_deactivation_seen_active_again_soon_is_counted_once_as_undone(
    records: list[LoopRecord], active: bool, counted: bool
) -> None:
    builder = a_workload("team-a", "rc").gpu_pod("w")
    workload = (builder if active else builder.inactive()).build()
    found = newly_undone([workload], records, rules=RULES, now=NOW)
    assert [(r.deed, r.workload) for r in found] == ([(Deed.UNDONE, RC)] if counted else [])


@pytest.mark.parametrize(
    ("records", "marked"),
    [
        pytest.param([undone(10), undone(100), undone(200)], True, id="three-undos-in-a-day"),
        pytest.param([undone(10), undone(100)], False, id="two-undos"),
        pytest.param([undone(10), undone(100), undone(25 * 60)], False, id="one-too-old"),
        pytest.param(
            [
                undone(10),
                undone(100),
                LoopRecord(minutes_ago(150), Deed.UNCONTESTED, RC),
                undone(200),
            ],
            False,
            id="a-clearance-starts-the-count-afresh",
        ),
    ],
)
def test_a_workload_undone_times_times_within_the_span_is_marked_contested(
    records: list[LoopRecord], marked: bool
) -> None:
    found = newly_contested(records, {}, rules=RULES, now=NOW)
    assert [(r.deed, r.workload) for r in found] == ([(Deed.CONTESTED, RC)] if marked else [])


def test_a_workload_already_marked_is_not_marked_again() -> None:
    records = [undone(10), undone(100), undone(200)]
    marks = {RC: Contest(since=NOW, reason="x")}
    assert newly_contested(records, marks, rules=RULES, now=NOW) == ()


LOST_AT = minutes_ago(3)  # whole seconds, as the annotation writes it


@pytest.mark.parametrize(
    ("workload", "records", "settled"),
    [
        pytest.param(
            a_workload("team-a", "rc").annotated(keys.DEACTIVATED_AT, time_text(LOST_AT)),
            [deactivated(3, outcome=LOST), deactivated(3)],
            "done",
            id="our-annotation-from-the-same-patch-confirms-it",
        ),
        pytest.param(
            a_workload("team-a", "rc").inactive().evicted("Deactivated"),
            [deactivated(3, outcome=LOST), deactivated(3)],
            "done",
            id="kueue-evicted-it-as-deactivated",
        ),
        pytest.param(
            a_workload("team-a", "rc").annotated(keys.DEACTIVATED_AT, time_text(minutes_ago(60))),
            [deactivated(3, outcome=LOST), deactivated(3)],
            "failed",
            id="an-older-deactivation-of-ours-refutes-it",
        ),
        pytest.param(
            a_workload("team-a", "rc").inactive(),
            [deactivated(3, outcome=LOST), deactivated(3)],
            "failed",
            id="inactive-without-our-annotation-or-kueues-condition-refutes-it",
        ),
        pytest.param(
            a_workload("team-a", "rc"),
            [deactivated(3, outcome=CONFIRMED), deactivated(3, outcome=LOST), deactivated(3)],
            None,
            id="already-settled",
        ),
        pytest.param(
            a_workload("team-a", "other"),
            [deactivated(3, outcome=LOST), deactivated(3)],
            None,
            id="not-seen-stays-unsettled",
        ),
    ],
)
def test_a_lost_answer_is_settled_from_the_workload_never_from_spec_active_alone(
    workload: WorkloadBuilder, records: list[LoopRecord], settled: str | None
) -> None:
    found = settle_lost_answers([workload.build()], records)
    assert [(r.deed, r.at, r.outcome.kind.value if r.outcome else None) for r in found] == (
        [(Deed.DEACTIVATE, LOST_AT, settled)] if settled else []
    )


@pytest.mark.parametrize(
    ("active", "settled"),
    [
        pytest.param(False, "done", id="annotations-and-spec-suspend-confirm-it"),
        pytest.param(True, "failed", id="annotations-without-spec-suspend-refute-it"),
    ],
)
def test_a_lost_suspend_is_confirmed_only_by_our_annotations_and_spec_suspend_together(
    active: bool, settled: str
) -> None:
    """A RayCluster's annotations go ahead of its suspend patch (ISSUE 17): they alone
    prove nothing about the suspend."""
    built = a_workload("team-a", "rc").annotated(keys.DEACTIVATED_AT, time_text(LOST_AT)).build()
    workload = replace(built, manager=Manager.KUBERAY, active=active)
    found = settle_lost_answers([workload], [deactivated(3, outcome=LOST), deactivated(3)])
    assert [r.outcome.kind.value if r.outcome else None for r in found] == [settled]
