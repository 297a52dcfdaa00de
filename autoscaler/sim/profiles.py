"""Scripted GPU utilization for the demo: what a RayCluster's GPUs report at any minute.

A profile starts from a base level and is refined by later segments, the last matching one
winning, in minutes from the story's start (negative: before the demo began):

    Profile.busy(85).idle_from(20)                       # trains, then the job stops
    Profile.loading(until=45, pct=2).busy_from(45, 90)   # loads weights slowly, then trains
    Profile.bursty(every=25, busy_for=2).gap(30, 45)     # short bursts; no telemetry for 15 min

A level is a percentage, NaN (dcgm-exporter's "no value") or `NO_SAMPLE` (the series is not
scraped at all), or a `Burst` alternating busy and idle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NO_SAMPLE = None
_FOREVER = math.inf


@dataclass(frozen=True)
class Burst:
    """Busy for `busy_for` minutes at the start of every `every` minutes, idle in between."""

    every: float
    busy_for: float
    busy_pct: float = 95.0
    idle_pct: float = 0.0

    def at(self, minute: float) -> float:
        return self.busy_pct if minute % self.every < self.busy_for else self.idle_pct


Level = float | Burst | None


@dataclass(frozen=True)
class Segment:
    start: float  # minutes from the story's start, inclusive
    end: float  # exclusive
    level: Level

    def covers(self, minute: float) -> bool:
        return self.start <= minute < self.end


@dataclass(frozen=True)
class Profile:
    base: Level
    segments: tuple[Segment, ...] = ()
    summary: str = ""  # how the live view and the docs describe it

    @classmethod
    def busy(cls, pct: float = 85.0) -> Profile:
        return cls(base=pct, summary=f"busy at {pct:g}%")

    @classmethod
    def idle(cls, pct: float = 0.0) -> Profile:
        return cls(base=pct, summary="idle")

    @classmethod
    def bursty(cls, *, every: float, busy_for: float, pct: float = 95.0) -> Profile:
        return cls(
            base=Burst(every=every, busy_for=busy_for, busy_pct=pct),
            summary=f"bursts of {busy_for:g} min every {every:g} min",
        )

    @classmethod
    def loading(cls, *, until: float, pct: float = 2.0) -> Profile:
        """Reading weights from storage: the GPU barely moves until `until`."""
        return cls(base=pct, summary=f"loads weights at {pct:g}% until minute {until:g}")

    def described(self, summary: str) -> Profile:
        return Profile(base=self.base, segments=self.segments, summary=summary)

    def level(self, level: Level, *, start: float, end: float = _FOREVER) -> Profile:
        segment = Segment(start, end, level)
        return Profile(base=self.base, segments=(*self.segments, segment), summary=self.summary)

    def idle_from(self, minute: float, pct: float = 0.0) -> Profile:
        return self.level(pct, start=minute)

    def busy_from(self, minute: float, pct: float = 85.0) -> Profile:
        return self.level(pct, start=minute)

    def gap(self, start: float, end: float) -> Profile:
        """No samples in [start, end): the exporter or its scrape was down."""
        return self.level(NO_SAMPLE, start=start, end=end)

    def gaps(self, *, every: float, length: float, first: float, last: float) -> Profile:
        """A telemetry gap of `length` minutes every `every` minutes from `first` to `last`."""
        profile, start = self, first
        while start < last:
            profile = profile.gap(start, start + length)
            start += every
        return profile

    def nan(self, start: float, end: float) -> Profile:
        """NaN samples in [start, end): the exporter could not read the field."""
        return self.level(math.nan, start=start, end=end)

    def percent_at(self, minute: float) -> float | None:
        """Percent at `minute`; NaN for a NaN sample; None when there is no sample."""
        level = self.base
        for segment in reversed(self.segments):
            if segment.covers(minute):
                level = segment.level
                break
        return level.at(minute) if isinstance(level, Burst) else level
