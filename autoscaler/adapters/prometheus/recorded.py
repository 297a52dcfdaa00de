"""The recorded slots (recording_rules.py) turned into the raw SLOTS answer's shape, and where
they cannot be trusted. Pure: slot_reader.py sends the queries and decides.

The recorded matrix is the rule's own samples over the slots' reach (a range selector, no
subquery). A sample evaluated at time e holds the raw slot ending at e rounded down to a whole
slot (recording_rules.py), so it is put at that slot end: the very point the raw SLOTS query
has there.

A recording is used only when it is trustworthy, else the raw query is (missing data is never
idle): every signal must have recorded series (else `ABSENT`), its newest evaluation no older
than `maxAge` (else `STALE`); the slots after the newest evaluation are read raw (the tail);
and a GPU whose recorded slots have a hole between its first one in the reach and the
signal's newest recorded slot (a missed evaluation can hide a burst), or that has raw tail slots
but no recorded ones, is read raw as a whole (`holey`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from autoscaler.adapters.prometheus.promql import Columns, QueryWindow, duration, workload_gpu_key
from autoscaler.adapters.prometheus.recording_rules import SIGNAL_LABEL, SLOT_PEAK
from autoscaler.domain.gpus import GpuKey
from autoscaler.settings.tree import SignalSettings

ABSENT, STALE, HOLES = "absent", "stale", "holes"


def recorded_query(span: QueryWindow) -> str:
    """Every recorded slot over the reach, and one slot more: the first slot end's
    evaluation comes up to a slot after it."""
    return f"{SLOT_PEAK}[{duration(span.recent + span.slot)}]"


@dataclass(frozen=True)
class RecordedSlots:
    """The recorded answer, parsed: per signal, its series put at slot ends (milliseconds)."""

    series: Mapping[str, list[tuple[GpuKey, list[int], list[float]]]]
    evaluated: Mapping[str, int]  # per signal, its newest evaluation (ms)
    slot_ms: int

    @classmethod
    def of(cls, result: Sequence[Columns], *, slot: timedelta) -> RecordedSlots:
        slot_ms = _ms(slot)
        found: dict[str, list[tuple[GpuKey, list[int], list[float]]]] = {}
        evaluated: dict[str, int] = {}
        for labels, ends, values in result:
            key, signal = workload_gpu_key(labels), labels.get(SIGNAL_LABEL)
            if key is None or not signal or not ends:
                continue
            at = [round(end * 1000) // slot_ms * slot_ms for end in ends]
            found.setdefault(signal, []).append((key, at, values))
            evaluated[signal] = max(evaluated.get(signal, 0), round(ends[-1] * 1000))
        return cls(found, evaluated, slot_ms)

    def unusable(
        self, signals: Sequence[SignalSettings], *, now: datetime, max_age: timedelta
    ) -> str | None:
        """Why the recordings cannot serve this read (absent, stale), or None."""
        for signal in signals:
            evaluated = self.evaluated.get(signal.metric)
            if evaluated is None:
                return (
                    f"{ABSENT}: no recorded series {SLOT_PEAK}{{signal={signal.metric!r}}} "
                    "(install the recording rules, or set prometheus.recordedSeries.mode: off)"
                )
            age = _ms_at(now) - evaluated
            if age > _ms(max_age):
                return f"{STALE}: {signal.metric}'s newest recorded slot is {age / 1000:.0f}s old"
        return None

    def newest_end(self, signal: str) -> int | None:
        """The slot `signal`'s newest evaluation recorded."""
        evaluated = self.evaluated.get(signal)
        return None if evaluated is None else evaluated // self.slot_ms * self.slot_ms

    def tail_from(self, signals: Sequence[SignalSettings]) -> int:
        """The first slot end the raw tail must cover: the one after the oldest of the
        signals' newest recorded slots."""
        return min(self.newest_end(signal.metric) or 0 for signal in signals) + self.slot_ms

    def holey(self, *, reach_from: int, tail: Iterable[GpuKey]) -> frozenset[GpuKey]:
        """GPUs to read raw: a hole in a signal's slots, or tail slots but no recorded ones."""
        newest = {signal: self.newest_end(signal) or 0 for signal in self.series}
        found = {
            key
            for signal, series in self.series.items()
            for key, at, _ in series
            if has_holes(at, first=reach_from, last=newest[signal], slot_ms=self.slot_ms)
        }
        recorded = {key for series in self.series.values() for key, _, _ in series}
        return frozenset(found | (set(tail) - recorded))

    def columns(self, *, reach_from: int, leaving: frozenset[GpuKey]) -> list[Columns]:
        """The recorded slots from `reach_from` on, as raw SLOTS columns (slot ends in
        seconds), for the GPUs not in `leaving`."""
        found: list[Columns] = []
        for series in self.series.values():
            for key, at, values in series:
                if key in leaving:
                    continue
                first = next((i for i, end in enumerate(at) if end >= reach_from), len(at))
                found.append((_labels(key), [end / 1000 for end in at[first:]], values[first:]))
        return found


def has_holes(ends: Sequence[int], *, first: int, last: int, slot_ms: int) -> bool:
    """Whether slot ends (ascending, ms) miss one between the later of `first` and the series'
    own first end, and `last`: a series that stops before `last` has holes too."""
    inside = [end for end in ends if first <= end <= last]
    if not inside:
        return bool(ends) and ends[-1] < last
    expected = (last - inside[0]) // slot_ms + 1
    return len(set(inside)) < expected


def _labels(key: GpuKey) -> dict[str, str]:
    labels = {"workload_namespace": key.namespace, "workload_pod": key.pod, "UUID": key.uuid}
    return labels | ({"GPU_I_ID": key.mig_instance} if key.mig_instance else {})


def _ms(span: timedelta) -> int:
    return round(span.total_seconds() * 1000)


def _ms_at(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)
