"""The demo's clock: simulated time that runs faster than the wall clock.

`advance(span)` moves simulated time by `span` and sleeps `span / speed` wall seconds, so at
the default speed (60 simulated seconds per wall second) a 60-minute idle window passes in a
minute. Speed `None` ("max") jumps without sleeping: tests and the dry-run replay use it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

DEFAULT_SPEED = 60.0  # simulated seconds per wall second: one simulated minute per second
MAX_SPEED = "max"


def parse_speed(text: str) -> float | None:
    """`max` (None: never sleep) or a positive number of simulated seconds per wall second."""
    if text.strip().lower() == MAX_SPEED:
        return None
    try:
        speed = float(text)
    except ValueError:
        raise ValueError(
            f"speed must be a positive number or {MAX_SPEED!r}, got {text!r}"
        ) from None
    if not speed > 0:  # also refuses NaN
        raise ValueError(f"speed must be a positive number or {MAX_SPEED!r}, got {text!r}")
    return speed


class SimulatedClock:
    """The `Clock` port over simulated time; safe to read from the API's threads."""

    def __init__(
        self,
        *,
        start: datetime,
        speed: float | None = DEFAULT_SPEED,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if start.tzinfo is None:
            raise ValueError("the simulated clock starts at a timezone-aware time")
        self._now = start
        self._speed = speed
        self._sleep = sleep
        self._lock = threading.Lock()

    @property
    def speed(self) -> float | None:
        return self._speed

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def wall_seconds(self, span: timedelta) -> float:
        """How long `span` of simulated time takes on the wall clock (0 at max speed)."""
        return 0.0 if self._speed is None else span.total_seconds() / self._speed

    def advance(self, span: timedelta) -> datetime:
        """Sleep as long as `span` takes at this speed, then move simulated time by `span`."""
        if span < timedelta(0):
            raise ValueError("simulated time never runs backwards")
        pause = self.wall_seconds(span)
        if pause > 0:
            self._sleep(pause)
        with self._lock:
            self._now += span
            return self._now
