"""Utilization histories: what one GPU was doing at any unix time.

A `Profile` starts from a base level and is refined by time windows, later windows winning:

    Profile.busy(85).idle_from(now - 1800).gap(now - 900, now - 600)

A level is a percentage (0-100), NaN (dcgm-exporter's "no value"), `NO_SAMPLE` (the exporter did not
expose the series, so Prometheus has no sample at all) or a `Burst` that alternates busy and idle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NO_SAMPLE = None
INF = math.inf


@dataclass(frozen=True)
class Burst:
    """Busy for `busy_s` at the start of every `period_s` (counted from `epoch`), idle after."""

    period_s: float
    busy_s: float
    busy_pct: float = 95.0
    idle_pct: float = 0.0
    epoch: float = 0.0

    def at(self, t: float) -> float:
        into_period = (t - self.epoch) % self.period_s
        return self.busy_pct if into_period < self.busy_s else self.idle_pct


Level = float | Burst | None


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    level: Level

    def covers(self, t: float) -> bool:
        return self.start <= t < self.end


@dataclass(frozen=True)
class Profile:
    base: Level
    windows: tuple[Window, ...] = ()

    @classmethod
    def busy(cls, pct: float = 90.0) -> Profile:
        return cls(base=pct)

    @classmethod
    def idle(cls, pct: float = 0.0) -> Profile:
        return cls(base=pct)

    @classmethod
    def bursty(cls, *, period_s: float, busy_s: float, busy_pct: float = 95.0) -> Profile:
        return cls(base=Burst(period_s=period_s, busy_s=busy_s, busy_pct=busy_pct))

    @classmethod
    def absent(cls) -> Profile:
        """No samples at all (e.g. a GPU that dcgm-exporter never saw)."""
        return cls(base=NO_SAMPLE)

    def level(self, level: Level, *, start: float = -INF, end: float = INF) -> Profile:
        return Profile(base=self.base, windows=(*self.windows, Window(start, end, level)))

    def idle_from(self, t: float, pct: float = 0.0) -> Profile:
        return self.level(pct, start=t)

    def busy_from(self, t: float, pct: float = 90.0) -> Profile:
        return self.level(pct, start=t)

    def bursty_from(self, t: float, burst: Burst) -> Profile:
        return self.level(burst, start=t)

    def gap(self, start: float, end: float) -> Profile:
        """No samples in [start, end): the exporter or the scrape was down."""
        return self.level(NO_SAMPLE, start=start, end=end)

    def nan(self, start: float, end: float) -> Profile:
        """NaN samples in [start, end): dcgm-exporter exposes a field it could not read."""
        return self.level(math.nan, start=start, end=end)

    def utilization(self, t: float) -> float | None:
        """Percent at unix time `t`; NaN for a NaN sample; None when there is no sample."""
        level = self.base
        for window in reversed(self.windows):
            if window.covers(t):
                level = window.level
                break
        return level.at(t) if isinstance(level, Burst) else level
