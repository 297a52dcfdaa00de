"""What the evidence signals saw, as the live read would have handed it over at each decision.

Each chunk's evidence answers are reduced to their active slots (those reaching the signal's
bar, `signals.py`), kept per GPU and signal as the slot ends' times, and only as far back as
the reach of a decision in the next chunk: the longest window and one coarse step, as the live
read's `QueryWindow.recent`. At a decision time `now` a GPU's sighting of a signal spans its
active slots in (now - reach, now]: `first_at` the earliest, `last_at` the latest slot end.

A query that failed for a chunk makes its signal failed for every decision whose reach touches
that chunk: the workloads it covers are unknown there, never idle.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import compress, repeat
from operator import ge

from autoscaler.adapters.prometheus.promql import QueryWindow, workload_gpu_key
from autoscaler.backtest.baselines import learned_baselines
from autoscaler.backtest.matrix import RangeAnswer
from autoscaler.backtest.signals import EvidenceAnswer, EvidenceQuery, PowerBar, power_bar
from autoscaler.backtest.timeline import Chunk, placed
from autoscaler.domain.policy.decisions import Policy
from autoscaler.domain.usage.evidence import FleetEvidence, Sighting, Signal, replayed_detail
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.tree import Settings

Row = tuple[GpuKey, str, list[float]]  # a GPU, its modelName ("" unknown), its slot values


@dataclass
class _Seen:
    """One GPU's active slots of one signal: slot ends (ascending) and their values."""

    times: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class _Failure:
    first: int  # the failed chunk's first and last slot ends
    last: int
    signal: Signal
    why: str


class EvidenceTrack:
    """The evidence of the chunks fed so far, within the reach of the next decisions."""

    def __init__(self, *, reach: int, power: PowerBar, threshold: float, span: int) -> None:
        self._reach = reach  # seconds
        self._power = power
        self._threshold, self._span = threshold, span  # compute idle: for learned baselines
        self._seen: dict[GpuKey, dict[Signal, _Seen]] = {}
        self._failed: list[_Failure] = []
        self._models: dict[GpuKey, str] = {}
        self._slot = 0  # seconds, the chunks'
        self.learned: dict[str, float] = {}  # the latest chunk's baselines that learned one

    @classmethod
    def for_policy(
        cls, *, settings: Settings, policy: Policy, windows: Iterable[timedelta] = ()
    ) -> EvidenceTrack:
        """Within the live read's reach over the policy's rules and these other windows: the
        longest window (or maxLoading) and one coarse step."""
        longest = max([*windows, *(rule.usage.window for rule in policy.rules)])
        rules = policy.default_rule.usage
        loading = policy.longest_loading
        span = QueryWindow(
            longest, rules.slot, settings.policy.idle_since_lookback, rules.threshold, loading
        )
        return cls(
            reach=int(span.evidence_reach.total_seconds()),
            power=power_bar(settings.prometheus.evidence),
            threshold=rules.threshold,
            span=int(rules.window / rules.slot),
        )

    @property
    def baselines(self) -> dict[str, float]:
        """Idle power per modelName: the configured ones win over the learned ones."""
        return {**self.learned, **self._power.baselines}

    def feed(self, chunk: Chunk, answers: Sequence[EvidenceAnswer]) -> list[str]:
        """Take in a chunk's answers; returns a warning per failed query."""
        self._forget(up_to=chunk.start - self._reach)
        self._slot = chunk.slot
        warnings = []
        last = chunk.time(chunk.steps - 1)
        for answer in answers:
            signal = answer.query.signal
            if answer.reply is None:
                why = answer.failure or "no answer"
                self._failed.append(_Failure(chunk.start, last, signal, why))
                warnings.append(
                    f"{signal} evidence unread from {_stamp(chunk.start)} to "
                    f"{_stamp(last)} (its workloads unknown there): {why}"
                )
                continue
            rows = _rows(answer.reply, chunk)
            if signal.row.over_baseline and self._power.learn:
                self.learned.update(self._learn(rows, chunk))
            for key, model, slots in rows:
                self._add(key, answer.query, slots, chunk=chunk, model=model)
        return warnings

    def at(self, now: int, keys: Iterable[GpuKey]) -> FleetEvidence:
        """The evidence a live read at `now` would have returned, for these GPUs."""
        gpus: dict[GpuKey, tuple[Sighting, ...]] = {}
        for key in keys:
            found = tuple(
                sighting
                for signal, seen in self._seen.get(key, {}).items()
                if (sighting := self._sighting(key, signal, seen, now=now)) is not None
            )
            if found:
                gpus[key] = found
        failures = {
            f.signal: f"{f.signal} query failed: {f.why}"
            for f in self._failed
            if f.first <= now and f.last > now - self._reach
        }
        return FleetEvidence(gpus=gpus, failures=failures, power_baselines=self.baselines)

    def _sighting(self, key: GpuKey, signal: Signal, seen: _Seen, *, now: int) -> Sighting | None:
        first = bisect_right(seen.times, now - self._reach)
        after = bisect_right(seen.times, now)
        if first >= after:
            return None
        baseline = self.baselines.get(self._models.get(key, ""))
        values = seen.values[first:after]
        over = timedelta(seconds=self._slot * len(values))  # as the live read's words count
        said = replayed_detail(signal, values, over=over, baseline=baseline)
        return Sighting(signal, _utc(seen.times[after - 1]), _utc(seen.times[first]), said)

    def _add(
        self, key: GpuKey, query: EvidenceQuery, slots: list[float], *, chunk: Chunk, model: str
    ) -> None:
        bar = query.bar
        if query.signal.row.over_baseline:
            baseline = self.baselines.get(model)
            if baseline is None:
                return  # no baseline for this model: no power evidence
            bar += baseline
            self._models[key] = model
        active = list(compress(range(len(slots)), map(ge, slots, repeat(bar))))  # NaN fails
        if active:
            seen = self._seen.setdefault(key, {}).setdefault(query.signal, _Seen())
            seen.times.extend(chunk.time(i) for i in active)
            seen.values.extend(slots[i] for i in active)

    def _learn(self, rows: Sequence[Row], chunk: Chunk) -> dict[str, float]:
        return learned_baselines(
            ((key, model, slots) for key, model, slots in rows if model),
            chunk.values,
            threshold=self._threshold,
            span=self._span,
            quantile=self._power.quantile,
        )

    def _forget(self, *, up_to: int) -> None:
        """Drop what no later decision can reach: slot ends at or before `up_to`."""
        for key in list(self._seen):
            signals = self._seen[key]
            for signal in list(signals):
                seen = signals[signal]
                cut = bisect_right(seen.times, up_to)
                del seen.times[:cut], seen.values[:cut]
                if not seen.times:
                    del signals[signal]
            if not signals:
                del self._seen[key]
        self._failed = [f for f in self._failed if f.last > up_to]


def _rows(reply: RangeAnswer, chunk: Chunk) -> list[Row]:
    """Each GPU's slot values; a GPU under several series (a replaced exporter pod) keeps the
    higher of each slot."""
    found: dict[GpuKey, Row] = {}
    for series in reply.series:
        key = workload_gpu_key(series.labels)
        if key is None:
            continue
        slots = placed(
            series.values, start=chunk.start, slot=chunk.slot, steps=chunk.steps, scale=1.0
        )
        if key in found:
            slots = [_higher(a, b) for a, b in zip(found[key][2], slots, strict=True)]
        found[key] = (key, series.labels.get("modelName", ""), slots)
    return list(found.values())


def _higher(a: float, b: float) -> float:
    if math.isnan(a):
        return b
    return a if math.isnan(b) or a >= b else b


def _stamp(seconds: int) -> str:
    return _utc(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


def _utc(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
