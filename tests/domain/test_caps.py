"""The caps: the longest idle first, and a waiter's set of deactivations all or nothing."""

from __future__ import annotations

from dataclasses import replace

from autoscaler.domain.guards.caps import NOTHING_AT_ALL, WARNINGS, defer, hold, release_broken_sets
from autoscaler.domain.models import Action, Decision, State, WorkloadRef
from autoscaler.domain.notices.notice import Notice
from tests.support.domain_builders import A_DEFAULT_RULE, minutes_ago

WAITER = WorkloadRef("team-a", "waiter")


def idle(name: str, *, minutes: float, beneficiary: WorkloadRef | None = None) -> Decision:
    return Decision(
        workload=WorkloadRef("team-b", name),
        state=State.IDLE,
        action=Action.DEACTIVATE,
        reason="idle",
        idle_since=minutes_ago(minutes),
        beneficiary=beneficiary,
        rule=A_DEFAULT_RULE,
    )


def acting(decisions: tuple[Decision, ...]) -> set[str]:
    return {d.workload.name for d in decisions if d.action is Action.DEACTIVATE}


def test_the_longest_idle_go_first_and_the_rest_are_deferred_with_the_reason() -> None:
    capped = defer([idle("new", minutes=70), idle("old", minutes=300)], keep=1, why="cap of 1")
    assert acting(capped) == {"old"}
    (deferred,) = [d for d in capped if d.action is Action.DEFERRED]
    assert deferred.reason == "idle; deferred: cap of 1"


def test_a_waiters_set_that_does_not_fit_the_room_is_deferred_whole() -> None:
    pair = [idle("a", minutes=300, beneficiary=WAITER), idle("b", minutes=80, beneficiary=WAITER)]
    capped = defer([*pair, idle("alone", minutes=90)], keep=1, why="cap")
    assert acting(capped) == {"alone"}, "half of the pair would let nobody in"


def test_a_waiters_set_that_fits_goes_ahead_together() -> None:
    pair = [idle("a", minutes=300, beneficiary=WAITER), idle("b", minutes=80, beneficiary=WAITER)]
    capped = defer([*pair, idle("alone", minutes=90)], keep=2, why="cap")
    assert acting(capped) == {"a", "b"}


def test_a_negative_room_defers_everything() -> None:
    assert acting(defer([idle("a", minutes=90)], keep=-3, why="cap")) == set()


def test_when_one_member_of_a_set_is_held_back_the_others_are_left_running() -> None:
    held = Decision(
        workload=WorkloadRef("team-b", "held"),
        state=State.IDLE,
        action=Action.NONE,
        reason="contested",
        beneficiary=WAITER,
        rule=A_DEFAULT_RULE,
    )
    released = release_broken_sets([held, idle("a", minutes=90, beneficiary=WAITER)])
    assert acting(released) == set()
    assert "does not go ahead" in released[1].reason


def test_sets_whose_members_all_act_and_lone_decisions_are_untouched() -> None:
    decisions = (idle("a", minutes=90, beneficiary=WAITER), idle("alone", minutes=90))
    assert release_broken_sets(decisions) == decisions


def test_a_held_warning_is_not_given_and_its_notice_shows_none() -> None:
    planned = Notice(warned_at=minutes_ago(0), stop_at=minutes_ago(-15))
    warning = replace(idle("warned", minutes=90), action=Action.WARN, notice=planned)
    stop = idle("stopped", minutes=90)

    held = hold((warning, stop), actions=WARNINGS, why="warning held: breaker open")

    assert [d.action for d in held] == [Action.NONE, Action.DEACTIVATE]
    assert held[0].reason.endswith("; warning held: breaker open")
    assert held[0].notice == Notice()


def test_a_guard_that_cannot_look_holds_warnings_and_the_delete_rung_too() -> None:
    found = [
        replace(idle(action.value, minutes=90), action=action)
        for action in (Action.WARN, Action.WARN_DELETE, Action.DELETE, Action.ALL_CLEAR)
    ]

    held = hold(found, actions=NOTHING_AT_ALL, why="guard state unreadable")

    assert [d.action for d in held] == [Action.NONE, Action.NONE, Action.NONE, Action.ALL_CLEAR]
