"""The recorded slots summarised per GPU by instant queries, with no subquery (ISSUE 18): one
value per recorded series instead of one per slot. Pure: summary_read.py sends the queries.

The recorded read (recorded.py) fetches every recorded slot over the reach: as many points as
the raw slot matrix. Here the server answers, for the recorded slots [first, newest] (slot
ends; `first` the reach's first, `newest` the newest evaluated one, every query evaluated at
`newest + slot - 1ms`, so a range `[t - first]` holds exactly the samples evaluated for those
slots: a slot's sample is stored at its end plus the ruler's phase, under one slot, and
Prometheus 2.x range selectors include both ends):

- COUNT, per recorded series: `count_over_time + 0 * sum_over_time` over [first, newest]: the
  samples it holds, NaN when one of them is NaN (NaN propagates through addition).
- PEAK, per usage window: `max by` the GPU of `max_over_time` over the window's recorded
  slots (those ending after E - W): the highest real value, as the per-slot read's merge keeps.
- BUSY and NEWEST BUSY: `max by` the GPU of `max_over_time` over [first, newest] and over the
  newest slot alone, `> the lowest threshold`: only GPUs above it answer.

A GPU is summarised only where that is exact: the marker rule (recording_rules.py) shows that
the group evaluated every slot of [first, newest] exactly once, and one of the GPU's signals
has one series holding that many samples, none NaN. A series gets at most one sample per
evaluation, so that series holds every slot, each real: the GPU's coverage is every slot,
its peaks are PEAK's, and its last busy slot is the newest when NEWEST BUSY says so, none
when BUSY says none is above the threshold. Any other GPU (a hole, a NaN, a young or split
series, a busy slot that is not the newest, which only its slots can place) is read per slot
as before (recorded.py, holes read raw).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from autoscaler.adapters.prometheus.promql import (
    KEY_LABELS,
    Columns,
    Row,
    duration,
    workload_gpu_key,
)
from autoscaler.adapters.prometheus.recording_rules import SIGNAL_LABEL, SLOT_EVALUATION, SLOT_PEAK
from autoscaler.domain.gpus import GpuKey

_BY_GPU = ", ".join(KEY_LABELS)


@dataclass(frozen=True)
class Summary:
    """One GPU's recorded slots [first, newest] (slot ends, ms), every one held and real."""

    first: int
    newest: int
    slot: int
    peaks: Mapping[timedelta, float]  # per usage window: the peak of its recorded slots
    newest_busy: float | None  # the newest slot's value, when above the lowest threshold
    busy: float | None  # the highest slot's value, when above the lowest threshold

    def held_from(self, start: int) -> int:
        """The slots from `start` (ms) on: every one holds a real value."""
        first = max(self.first, -(-start // self.slot) * self.slot)
        return max(0, (self.newest - first) // self.slot + 1)

    def last_busy(self, threshold: float, *, since: int) -> int | None:
        """The newest slot end when it is above `threshold` (and at or after `since`), else
        None when no slot is; `Undecided` when a slot before the newest may be."""
        if self.newest_busy is not None and self.newest_busy > threshold and self.newest >= since:
            return self.newest
        if self.busy is None or not self.busy > threshold:
            return None
        raise Undecided(threshold)


class Undecided(LookupError):
    """Only the slots tell where a GPU's last busy slot is (summary_read.py reads them)."""


@dataclass(frozen=True)
class Reach:
    """The recorded slots a summary covers: [first, newest] slot ends in ms."""

    first: int
    newest: int
    slot: int

    @property
    def at(self) -> int:
        """Where every summary query is evaluated (ms): the newest slot's last moment."""
        return self.newest + self.slot - 1

    @property
    def slots(self) -> int:
        return (self.newest - self.first) // self.slot + 1

    def over(self, first: int) -> str:
        """A range holding the samples evaluated for the slots from `first` on."""
        return duration(timedelta(milliseconds=self.at - first))


def marker_query(over: timedelta) -> str:
    return f"{SLOT_EVALUATION}[{duration(over)}]"


def count_query(reach: Reach) -> str:
    over = reach.over(reach.first)
    return f"count_over_time({SLOT_PEAK}[{over}]) + 0 * sum_over_time({SLOT_PEAK}[{over}])"


def peak_query(reach: Reach, *, first: int) -> str:
    return f"max by ({_BY_GPU}) (max_over_time({SLOT_PEAK}[{reach.over(first)}]))"


def above_query(reach: Reach, *, first: int, threshold: float) -> str:
    return f"{peak_query(reach, first=first)} > {float(threshold)!r}"


def peak_start(reach: Reach, window: timedelta, *, end: int) -> int:
    """The first slot end after `end - window`: a window's peak starts after its start."""
    start = end - round(window.total_seconds() * 1000)
    return max(reach.first, start // reach.slot * reach.slot + reach.slot)


def evaluated_once(marker: Sequence[Columns], *, reach_from: int, slot: int) -> Reach | None:
    """The slots [reach_from, newest] when the marker's one series shows each evaluated
    exactly once (newest: its newest evaluation's slot), else None."""
    if len(marker) != 1:
        return None
    first = -(-reach_from // slot) * slot  # the reach's first slot end
    ends = [round(at * 1000) // slot * slot for at in marker[0][1]]
    kept = [end for end in ends if end >= first]
    if not kept:
        return None
    expected = list(range(first, kept[-1] + 1, slot))
    return Reach(first, kept[-1], slot) if kept == expected else None


@dataclass(frozen=True)
class Counts:
    """COUNT's answer: the GPUs each of whose signals has one series holding every slot, real;
    every GPU seen; the signals with such a series (so recorded up to the newest slot)."""

    full: frozenset[GpuKey]
    seen: frozenset[GpuKey]
    fresh: frozenset[str]

    @classmethod
    def of(cls, rows: Iterable[Row], *, slots: int) -> Counts:
        """Every signal of a GPU must be full: the per-slot read reads a GPU raw when one of
        its series has a hole, and the raw slot there may be higher."""
        series: dict[tuple[GpuKey, str], list[float]] = {}
        for labels, value in rows:
            key = workload_gpu_key(labels)
            if key is not None:
                series.setdefault((key, labels.get(SIGNAL_LABEL, "")), []).append(value)
        seen = frozenset(key for key, _ in series)
        full = {pair for pair, values in series.items() if values == [float(slots)]}
        short = {key for key, _ in series.keys() - full}
        return cls(seen - short, seen, frozenset(signal for _, signal in full))


def by_gpu(rows: Iterable[Row]) -> dict[GpuKey, float]:
    """Rows grouped by the GPU labels: one per GPU."""
    found = {}
    for labels, value in rows:
        key = workload_gpu_key(labels)
        if key is not None and not math.isnan(value):
            found[key] = value
    return found


def summaries(
    full: Iterable[GpuKey],
    *,
    reach: Reach,
    peaks: Mapping[timedelta, Mapping[GpuKey, float]],
    newest_busy: Mapping[GpuKey, float],
    busy: Mapping[GpuKey, float],
) -> dict[GpuKey, Summary]:
    return {
        key: Summary(
            reach.first,
            reach.newest,
            reach.slot,
            {window: found[key] for window, found in peaks.items() if key in found},
            newest_busy.get(key),
            busy.get(key),
        )
        for key in full
    }
