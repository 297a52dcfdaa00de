"""The demo's clock: simulated time at a chosen speed, or jumping at `max`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.sim.clock import SimulatedClock, parse_speed

START = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("max", None, id="max-never-sleeps"),
        pytest.param("MAX", None, id="max-in-any-case"),
        pytest.param("60", 60.0, id="a-number-is-simulated-seconds-per-second"),
        pytest.param("0.5", 0.5, id="slower-than-real-time-is-allowed"),
    ],
)
def test_a_speed_is_max_or_a_positive_number(text: str, expected: float | None) -> None:
    assert parse_speed(text) == expected


@pytest.mark.parametrize("text", ["0", "-3", "fast", "nan"])
def test_anything_else_is_refused_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError, match="positive number or 'max'"):
        parse_speed(text)


def test_a_simulated_minute_takes_a_wall_second_at_the_default_speed() -> None:
    slept: list[float] = []
    clock = SimulatedClock(start=START, sleep=slept.append)

    clock.advance(timedelta(minutes=1))

    assert slept == [1.0]
    assert clock.now() == START + timedelta(minutes=1)


def test_at_max_speed_the_clock_jumps_without_sleeping() -> None:
    slept: list[float] = []
    clock = SimulatedClock(start=START, speed=None, sleep=slept.append)

    clock.advance(timedelta(hours=3))

    assert slept == []
    assert clock.now() == START + timedelta(hours=3)


def test_simulated_time_never_runs_backwards() -> None:
    clock = SimulatedClock(start=START, speed=None)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(timedelta(seconds=-1))


def test_a_naive_start_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        SimulatedClock(start=datetime(2026, 3, 2, 10, 0))
