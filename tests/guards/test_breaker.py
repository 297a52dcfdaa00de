"""The mass-idle circuit breaker's state machine: when it opens, how it closes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoscaler.domain.guards.breaker import (
    CLOSED,
    BreakerRules,
    BreakerState,
    Turnover,
    step,
    trips,
)
from tests.support.domain_builders import NOW

RULES = BreakerRules(min_workloads=3, share=0.2, close_after=3)
OPEN = BreakerState(open=True, since=NOW - timedelta(minutes=5), reason="mass idle")


def turned(count: int, *, busy_before: int) -> Turnover:
    return Turnover(busy_before=busy_before, turned=tuple(f"ns/w{i}" for i in range(count)))


@pytest.mark.parametrize(
    ("count", "busy_before", "expected"),
    [
        pytest.param(3, 5, False, id="three-of-five-is-not-more-than-the-minimum-of-three"),
        pytest.param(4, 5, True, id="four-of-five-is-more-than-three"),
        pytest.param(20, 100, False, id="twenty-of-a-hundred-is-exactly-the-share"),
        pytest.param(21, 100, True, id="twenty-one-of-a-hundred-is-more-than-the-share"),
        pytest.param(4, 10, True, id="four-of-ten-is-more-than-the-minimum"),
        pytest.param(0, 0, False, id="an-empty-fleet-never-trips"),
    ],
)
def test_it_trips_when_more_than_the_larger_of_the_minimum_and_the_share_turn(
    count: int, busy_before: int, expected: bool
) -> None:
    assert trips(turned(count, busy_before=busy_before), RULES) is expected


@pytest.mark.parametrize(
    ("before", "seen", "after"),
    [
        pytest.param(CLOSED, turned(1, busy_before=10), CLOSED, id="closed-stays-closed"),
        pytest.param(
            CLOSED,
            turned(5, busy_before=10),
            BreakerState(open=True, since=NOW, reason="(any)"),
            id="closed-opens-on-a-mass-idle",
        ),
        pytest.param(
            OPEN,
            turned(0, busy_before=10),
            BreakerState(open=True, since=OPEN.since, reason="mass idle", normal_cycles=1),
            id="open-counts-a-normal-cycle",
        ),
        pytest.param(
            BreakerState(open=True, since=OPEN.since, reason="mass idle", normal_cycles=2),
            turned(0, busy_before=10),
            CLOSED,
            id="open-closes-after-three-normal-cycles",
        ),
        pytest.param(
            BreakerState(open=True, since=OPEN.since, reason="mass idle", normal_cycles=2),
            turned(5, busy_before=10),
            BreakerState(open=True, since=OPEN.since, reason="mass idle", normal_cycles=0),
            id="open-starts-counting-again-on-another-mass-idle",
        ),
        pytest.param(
            BreakerState(open=True, since=OPEN.since, reason="mass idle", normal_cycles=2),
            Turnover(busy_before=0, observed=False),
            BreakerState(open=True, since=OPEN.since, reason="mass idle", normal_cycles=2),
            id="a-cycle-without-data-changes-nothing",
        ),
    ],
)
def test_each_cycle_moves_the_breaker_by_its_observation(
    before: BreakerState, seen: Turnover, after: BreakerState
) -> None:
    result = step(before, seen, rules=RULES, now=NOW)
    if after.reason == "(any)":
        assert (result.open, result.since, result.normal_cycles) == (True, NOW, 0)
    else:
        assert result == after


def test_the_reason_names_the_counts_and_a_few_workloads() -> None:
    opened = step(CLOSED, turned(5, busy_before=10), rules=RULES, now=NOW)
    assert opened.reason.startswith("5 of 10 workloads busy last cycle turned idle or unknown")
    assert "ns/w0, ns/w1, ns/w2 and 2 more" in opened.reason


def test_the_summary_is_the_reason_without_any_workloads_name() -> None:
    opened = step(CLOSED, turned(5, busy_before=10), rules=RULES, now=NOW)
    assert opened.summary == (
        "5 of 10 workloads busy last cycle turned idle or unknown at once (more than 3)"
    )
    assert opened.reason == f"{opened.summary}: ns/w0, ns/w1, ns/w2 and 2 more"


observations = st.builds(
    lambda count, extra, observed: Turnover(
        busy_before=count + extra,
        turned=tuple(f"ns/w{i}" for i in range(count)),
        observed=observed,
    ),
    st.integers(0, 40),
    st.integers(0, 200),
    st.booleans(),
)


@given(st.lists(observations, max_size=30))
def test_it_closes_only_after_close_after_normal_observed_cycles_in_a_row(
    seen: list[Turnover],
) -> None:
    state, normal_run = CLOSED, 0
    for turnover in seen:
        was_open = state.open
        state = step(state, turnover, rules=RULES, now=NOW)
        if not turnover.observed:
            continue
        normal_run = 0 if trips(turnover, RULES) else normal_run + 1
        if was_open and not state.open:
            assert normal_run >= RULES.close_after
        if trips(turnover, RULES):
            assert state.open
