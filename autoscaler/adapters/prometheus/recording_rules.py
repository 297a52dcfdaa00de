"""The recording rules of docs/RECORDING-RULES.md: generated from the settings, and their
recorded slots read back. The rules written here are the one source of truth for the CLI's
rules file (`idle-gpu-autoscaler recording-rules`), the copies in config/recording-rules/, and
the chart's PrometheusRule (a test keeps the chart's template equal to this).

Per utilization signal one rule, evaluated once per slot (the group's interval is
`policy.slot`): per GPU, the peak of the last whole slot as a ratio, NaN when the slot held
only NaN, no sample when it held none. The slot is the raw read's own, whenever the ruler
evaluates: a subquery's steps sit on multiples of its step, so `last_over_time((X)[slot:slot])`
at an evaluation time e is X at the slot end at or before e, i.e. the raw SLOTS query's point
there, and the ruler's hash-based offset within the interval only delays it
(which also lets that slot's last scrapes land first). X is the raw SLOTS query's value at one
step (`promql.SLOTS`, or the configured `prometheus.queries.slots`); the result is relabelled
to our labels (`promql.relabelled`, both label styles) and merged per GPU with `max by`,
which keeps a real value over NaN like the raw read's merge in Python: the split series of a
replaced exporter pod become one. The signal's metric name is kept in the label `signal`.

X holds the samples of (t - slot, t] on any server: the ruler is Prometheus itself, which no
probe of ours reaches, so where X has a slot range the rule holds X twice, once as written
for a left-closed server (ranges one millisecond shorter) and once for a left-open one,
each kept only where the server's own answer to the probe says it is that server
(`either_server`, `range_semantics.SELF_PROBE`). On a server that answers neither, the rule
records nothing, and the reader falls back to the raw read (`ABSENT`).

Coverage needs no rule of its own: a slot counts when its peak is a real value, as in the raw
read; a sample count per slot would double the recorded series for nothing the read uses.

Reading them back: the recorded slots turned into the raw SLOTS answer's shape, and where
they cannot be trusted. Pure: slot_reader.py sends the queries and decides.

The recorded matrix is the rule's own samples over the slots' reach (a range selector, no
subquery). A sample evaluated at time e holds the raw slot ending at e rounded down to a whole
slot (above), so it is put at that slot end: the very point the raw SLOTS query
has there.

A recording is used only when it is trustworthy, else the raw query is (missing data is never
idle): every signal must have recorded series (else `ABSENT`), its newest evaluation no older
than `maxAge` (else `STALE`); the slots after the newest evaluation are read raw (the tail);
and a GPU whose recorded slots have a hole between its first one in the reach and the
signal's newest recorded slot (a missed evaluation can hide a burst), or that has raw tail slots
but no recorded ones, is read raw as a whole (`holey`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import yaml

from autoscaler.adapters.prometheus.promql import (
    KEY_LABELS,
    SLOTS,
    Columns,
    QueryWindow,
    duration,
    fill,
    relabelled,
    workload_gpu_key,
)
from autoscaler.adapters.prometheus.range_semantics import (
    LEFT_CLOSED_COUNT,
    LEFT_OPEN_COUNT,
    SELF_PROBE,
)
from autoscaler.adapters.prometheus.views import span_ms, unix_ms
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.tree import SignalSettings

SLOT_PEAK = "gpu:idle_gpu_autoscaler_slot_peak:ratio"
SIGNAL_LABEL = "signal"
GROUP = "idle-gpu-autoscaler-slots"
# Thanos Ruler only: a rule evaluated on partial data (a store down) must fail, not be
# recorded as a clean slot that may hide a burst. Prometheus' rule files reject the key.
THANOS_STRATEGY = {"partial_response_strategy": "abort"}


def slot_peak_rule(
    signal: SignalSettings, *, slot: timedelta, template: str = SLOTS
) -> dict[str, Any]:
    """The rule recording `signal`'s per-GPU slot peaks."""
    step = duration(slot)
    last_slot = f"last_over_time(({either_server(template, signal, slot=slot)})[{step}:{step}])"
    peak = f"max by ({', '.join(KEY_LABELS)}) ({relabelled(last_slot)})"
    expr = peak if signal.scale == 1 else f"{peak} / {_number(signal.scale)}"
    return {"record": SLOT_PEAK, "expr": expr, "labels": {SIGNAL_LABEL: signal.metric}}


def either_server(template: str, signal: SignalSettings, *, slot: timedelta) -> str:
    """`template` filled so that its slot ranges hold (t - slot, t] on a left-closed and on a
    left-open server alike: each form kept where the server says it is that one."""
    spans = [
        QueryWindow(window=slot, slot=slot, lookback=slot, threshold=0.0, closed_ranges=closed)
        for closed in (True, False)
    ]
    closed, opened = (fill(template, signal, span=span) for span in spans)
    if closed == opened:
        return opened
    return (
        f"(({closed}) and on () ({SELF_PROBE} == {LEFT_CLOSED_COUNT}))"
        f" or (({opened}) and on () ({SELF_PROBE} == {LEFT_OPEN_COUNT}))"
    )


def _number(value: float) -> str:
    """As the chart's template writes it (Go's %v): 100, not 100.0."""
    text = repr(float(value))
    return text.removesuffix(".0")


def rule_group(
    signals: Sequence[SignalSettings], *, slot: timedelta, template: str = SLOTS, thanos: bool
) -> dict[str, Any]:
    """The one group, evaluated once per slot; with the abort strategy for a Thanos Ruler."""
    rules = [slot_peak_rule(signal, slot=slot, template=template) for signal in signals]
    strategy = THANOS_STRATEGY if thanos else {}
    return {"name": GROUP, "interval": duration(slot), **strategy, "rules": rules}


def rules_file(
    signals: Sequence[SignalSettings], *, slot: timedelta, template: str = SLOTS, thanos: bool
) -> str:
    """A rules file for Prometheus (`rule_files`) or, with `thanos`, for a Thanos Ruler."""
    group = rule_group(signals, slot=slot, template=template, thanos=thanos)
    header = "# Generated by `idle-gpu-autoscaler recording-rules`; docs/RECORDING-RULES.md.\n"
    return header + yaml.safe_dump({"groups": [group]}, sort_keys=False, width=1000)


ABSENT, STALE, HOLES = "absent", "stale", "holes"


def recorded_query(span: QueryWindow) -> str:
    """Every recorded slot over the reach, and one slot more: the first slot end's
    evaluation comes up to a slot after it."""
    return f"{SLOT_PEAK}[{duration(span.recent + span.slot)}]"


Tail = Mapping[GpuKey, tuple[list[float], list[float]]]  # per GPU: slot ends (s), peaks


@dataclass(frozen=True)
class Series:
    """One GPU's recorded slots for one signal: slot ends in ms (holes) and in seconds (the
    views' columns). Series evaluated alike share the lists: never mutate them."""

    key: GpuKey
    at_ms: list[int]
    at_s: list[float]
    values: Sequence[float]


@dataclass(frozen=True)
class RecordedSlots:
    """The recorded answer, parsed: per signal, its series put at slot ends."""

    series: Mapping[str, list[Series]]
    evaluated: Mapping[str, int]  # per signal, its newest evaluation (ms)
    slot_ms: int

    @classmethod
    def of(cls, result: Iterable[Columns], *, slot: timedelta) -> RecordedSlots:
        slot_ms = span_ms(slot)
        found: dict[str, list[Series]] = {}
        evaluated: dict[str, int] = {}
        seen: tuple[Sequence[float], list[int], list[float], list[int]] | None = None
        for labels, ends, values in result:
            key, signal = workload_gpu_key(labels), labels.get(SIGNAL_LABEL)
            if key is None or not signal or not ends:
                continue
            if seen is None or ends != seen[0]:  # the rules are evaluated alike: map once
                seen = (ends, *_slot_ends(ends, slot_ms))
            at_ms, at_s, kept = seen[1], seen[2], seen[3]
            kept_values = values if len(kept) == len(values) else [values[i] for i in kept]
            found.setdefault(signal, []).append(Series(key, at_ms, at_s, kept_values))
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
            age = unix_ms(now) - evaluated
            if age > span_ms(max_age):
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
            one.key
            for signal, series in self.series.items()
            for one in series
            if has_holes(one.at_ms, first=reach_from, last=newest[signal], slot_ms=self.slot_ms)
        }
        recorded = {one.key for series in self.series.values() for one in series}
        return frozenset(found | (set(tail) - recorded))

    def columns(
        self, *, reach_from: int, leaving: frozenset[GpuKey], tails: Mapping[str, Tail]
    ) -> list[Columns]:
        """The recorded slots from `reach_from` on, each followed by its signal's raw tail
        (so a GPU's columns keep one list of slot ends), as raw SLOTS columns, for the GPUs
        not in `leaving`."""
        found: list[Columns] = []
        shared: dict[tuple[float, ...], list[float]] = {}  # equal slot ends, one list
        for signal, series in self.series.items():
            tail = dict(tails.get(signal, {}))
            for one in series:
                if one.key in leaving:
                    continue
                first = bisect_left(one.at_ms, reach_from)
                ends, values = one.at_s[first:], array("d", one.values[first:])
                more_ends, more_values = tail.pop(one.key, ([], []))
                after = bisect_right(more_ends, ends[-1]) if ends else 0
                ends += more_ends[after:]
                values.extend(more_values[after:])
                found.append((_labels(one.key), shared.setdefault(tuple(ends), ends), values))
            found += [(_labels(key), *points) for key, points in tail.items() if key not in leaving]
        return found


def merged_tail(columns: Iterable[Columns]) -> dict[GpuKey, tuple[list[float], list[float]]]:
    """A signal's raw tail per GPU, its series merged per slot end (a real value over NaN)."""
    found: dict[GpuKey, dict[float, float]] = {}
    for labels, ends, values in columns:
        key = workload_gpu_key(labels)
        if key is None:
            continue
        points = found.setdefault(key, {})
        for end, value in zip(ends, values, strict=True):
            held = points.get(end)
            if held is None or held != held or value > held:  # noqa: PLR0124 - NaN check
                points[end] = value
    return {key: (sorted(p), [p[end] for end in sorted(p)]) for key, p in found.items()}


def has_holes(ends: Sequence[int], *, first: int, last: int, slot_ms: int) -> bool:
    """Whether slot ends (ascending, distinct, ms) miss one between the later of `first` and
    the series' own first end, and `last`: a series that stops before `last` has holes too."""
    low, high = bisect_left(ends, first), bisect_right(ends, last)
    if low == high:
        return bool(ends) and ends[-1] < last
    return high - low < (last - ends[low]) // slot_ms + 1


def _slot_ends(ends: Sequence[float], slot_ms: int) -> tuple[list[int], list[float], list[int]]:
    """Evaluation times as slot ends in ms and in seconds, and which points to keep: after a
    ruler restart two evaluations can record the same slot; the later one stays."""
    at = [round(end * 1000) // slot_ms * slot_ms for end in ends]
    kept = [i for i in range(len(at)) if i + 1 == len(at) or at[i + 1] != at[i]]
    if len(kept) != len(at):
        at = [at[i] for i in kept]
    return at, [end / 1000 for end in at], kept


def _labels(key: GpuKey) -> dict[str, str]:
    labels = {"workload_namespace": key.namespace, "workload_pod": key.pod, "UUID": key.uuid}
    return labels | ({"GPU_I_ID": key.mig_instance} if key.mig_instance else {})
