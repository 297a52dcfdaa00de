"""Range-query chunks as per-GPU slot series, and what each GPU and workload carries over.

A chunk is `steps` slots from `start` (a multiple of the slot); a GPU's value at a slot is
`max_over_time(metric[slot])` there, NaN when the slot holds no real sample. Between chunks
a GPU keeps only the tail the longest window needs and the times of its last real and last
busy slots, so memory stays bounded by the chunk, not by the range.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, pairwise, repeat
from operator import ge, gt, itemgetter, truediv

from autoscaler.adapters.prometheus.promql import workload_gpu_key
from autoscaler.backtest.identity import WorkloadKey
from autoscaler.backtest.matrix import Series
from autoscaler.domain.usage.gpus import GpuKey

NAN = math.nan


@dataclass(frozen=True)
class Chunk:
    start: int  # unix seconds of slot 0
    slot: int  # seconds
    steps: int
    values: Mapping[GpuKey, list[float]]
    labels: Mapping[GpuKey, Mapping[str, str]]

    def time(self, index: int) -> int:
        return self.start + index * self.slot


@dataclass(frozen=True)
class Scaled:
    """One signal's series and the scale that makes its values 0..1 ratios."""

    series: Iterable[Series]
    scale: float = 1.0


def chunk_from(signals: Iterable[Scaled], *, start: int, slot: int, steps: int) -> Chunk:
    """Place every `[time, "value"]` pair at its slot, as a ratio. A GPU reported by several
    rows (signals, or exporter pods before and after a replacement) keeps the highest."""
    values: dict[GpuKey, list[float]] = {}
    labels: dict[GpuKey, Mapping[str, str]] = {}
    for signal in signals:
        for row in signal.series:
            key = workload_gpu_key(row.labels)
            if key is None:
                continue
            found = placed(row.values, start=start, slot=slot, steps=steps, scale=signal.scale)
            if key in values:
                found = [_max(a, b) for a, b in zip(values[key], found, strict=True)]
            values[key], labels[key] = found, row.labels
    return Chunk(start, slot, steps, values, labels)


def placed(
    pairs: Sequence[Sequence[object]], *, start: int, slot: int, steps: int, scale: float
) -> list[float]:
    if len(pairs) == steps and round(float(str(pairs[0][0]))) == start:
        # The usual case, no gaps: converted in C, a week of a thousand GPUs is 10 M values.
        values = map(float, map(itemgetter(1), pairs))
        return list(values) if scale == 1 else list(map(truediv, values, repeat(scale)))
    slots = [NAN] * steps
    for at, value in pairs:
        index = (round(float(str(at))) - start) // slot
        if 0 <= index < steps:
            slots[index] = float(str(value)) / scale
    return slots


def _where(test: Callable[[float, float], bool], values: list[float], bound: float) -> list[int]:
    """Indices of the values passing `test(value, bound)`, computed in C."""
    return list(compress(range(len(values)), map(test, values, repeat(bound))))


def _max(a: float, b: float) -> float:
    if math.isnan(a):
        return b
    return a if math.isnan(b) or a >= b else b


@dataclass
class GpuTrack:
    """One GPU seen by one pod; `values`, `real` and `loud` describe the current chunk."""

    key: GpuKey
    workload: WorkloadKey
    thresholds: tuple[float, ...]
    first_seen: int | None = None
    last_real: int | None = None  # before the current chunk
    last_loud: dict[float, int] = field(default_factory=dict)  # before the current chunk
    tail: list[float] = field(default_factory=list)  # the slots just before the chunk
    values: list[float] = field(default_factory=list)
    real: list[int] = field(default_factory=list)  # chunk indices with a real value
    loud: dict[float, list[int]] = field(default_factory=dict)  # ... above each threshold

    def load(self, chunk: Chunk) -> None:
        values = chunk.values.get(self.key)
        if values is None and not self.tail:  # gone for longer than any window: never read
            self.values, self.real, self.loud = [], [], {t: [] for t in self.thresholds}
            return
        self.values = values if values is not None else [NAN] * chunk.steps
        # `>= 0` as the live coverage query counts a real sample (NaN fails it)
        self.real = _where(ge, self.values, 0.0)
        self.loud = {t: _where(gt, self.values, t) for t in self.thresholds}
        if self.first_seen is None and self.real:
            self.first_seen = chunk.time(self.real[0])

    def last_real_at(self, chunk: Chunk, index: int) -> int | None:
        found = bisect_right(self.real, index)
        return chunk.time(self.real[found - 1]) if found else self.last_real

    def last_loud_at(self, chunk: Chunk, threshold: float, index: int) -> int | None:
        loud = self.loud[threshold]
        found = bisect_right(loud, index)
        return chunk.time(loud[found - 1]) if found else self.last_loud.get(threshold)

    def window(self, index: int, length: int) -> list[float]:
        """The `length` slot values ending at chunk index `index` (NaN before any data)."""
        first = index - length + 1
        if first >= 0:
            return self.values[first : index + 1]
        before = self.tail[max(0, len(self.tail) + first) :]
        padding = [NAN] * (-first - len(before))
        return padding + before + self.values[: index + 1]

    def finish(self, chunk: Chunk, *, keep: int) -> None:
        if self.real:
            self.last_real = chunk.time(self.real[-1])
        for threshold, loud in self.loud.items():
            if loud:
                self.last_loud[threshold] = chunk.time(loud[-1])
        recent = self.last_real is not None and self.last_real >= chunk.time(chunk.steps - keep)
        # Silent for longer than any window: an empty tail reads as NaN, nothing to keep.
        self.tail = (self.tail + self.values)[-keep:] if recent else []
        self.values, self.real, self.loud = [], [], {}


@dataclass
class WorkloadTrack:
    key: WorkloadKey
    gpus: list[GpuTrack] = field(default_factory=list)
    pods: dict[str, int] = field(default_factory=dict)  # pod -> first slot with a sample
    _real: list[int] = field(default_factory=list)  # this chunk's, any GPU
    _loud: dict[float, list[int]] = field(default_factory=dict)

    def load(self, thresholds: Iterable[float]) -> None:
        """Merge the GPUs' chunk indices once, for every variant to read."""
        self._real = _union(g.real for g in self.gpus)
        self._loud = {t: _union(g.loud[t] for g in self.gpus) for t in thresholds}

    def real(self) -> list[int]:
        return self._real

    def loud(self, threshold: float) -> list[int]:
        return self._loud[threshold]

    def last_real(self) -> int | None:
        return max((g.last_real for g in self.gpus if g.last_real is not None), default=None)

    def last_loud(self, threshold: float) -> int | None:
        times = (g.last_loud.get(threshold) for g in self.gpus)
        return max((t for t in times if t is not None), default=None)


def _union(lists: Iterable[list[int]]) -> list[int]:
    found = [indices for indices in lists if indices]
    if not found:
        return []
    if all(indices == found[0] for indices in found):  # a workload's GPUs usually move together
        return found[0]
    return sorted(set(chain.from_iterable(found)))


def covered(
    indices: Sequence[int], *, carry: int | None, span: int, steps: int
) -> list[tuple[int, int]]:
    """Chunk indices i in [0, steps) with some x of `indices` (or `carry`, an index before the
    chunk) in (i - span, i], as merged half-open intervals."""
    found: list[tuple[int, int]] = []
    if carry is not None and carry + span > 0:
        found.append((0, min(steps, carry + span)))
    for first, last in runs(indices):
        begin, end = first, min(steps, last + span)
        if found and begin <= found[-1][1]:
            found[-1] = (found[-1][0], max(found[-1][1], end))
        else:
            found.append((begin, end))
    return found


def silence(
    indices: Sequence[int], *, carry: int | None, after: int, span: int, steps: int
) -> int | None:
    """The last index (of `indices`, or `carry` before the chunk) at or after the one in force
    at `after` that is followed by `span` steps without any index; None if there is none yet."""
    start = bisect_right(indices, after)
    previous = indices[start - 1] if start else carry
    later = indices[start:]
    points = ([previous] if previous is not None else []) + list(later)
    gap = next((a for a, b in pairwise(points) if b - a > span), None)
    if gap is not None:
        return gap
    if points and steps - 1 - points[-1] >= span:
        return points[-1]
    return None


def runs(indices: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive stretches of sorted indices as (first, last)."""
    if not indices:
        return []
    if indices[-1] - indices[0] == len(indices) - 1:
        return [(indices[0], indices[-1])]  # one unbroken stretch: the busy GPU's usual case
    breaks = [j for j in range(1, len(indices)) if indices[j] - indices[j - 1] != 1]
    starts = [0, *breaks]
    ends = [*breaks, len(indices)]
    return [(indices[s], indices[e - 1]) for s, e in zip(starts, ends, strict=True)]


def minus(
    keep: Sequence[tuple[int, int]], drop: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """`keep` without `drop` (both sorted, merged, half-open)."""
    result: list[tuple[int, int]] = []
    cut = 0
    for begin, end in keep:
        start = begin
        while cut < len(drop) and drop[cut][1] <= start:
            cut += 1
        probe = cut
        while probe < len(drop) and drop[probe][0] < end:
            if drop[probe][0] > start:
                result.append((start, drop[probe][0]))
            start = max(start, drop[probe][1])
            probe += 1
        if start < end:
            result.append((start, end))
    return result


def union(
    one: Sequence[tuple[int, int]], other: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Both sets of sorted, merged, half-open intervals as one; touching ones merge."""
    merged: list[tuple[int, int]] = []
    for begin, end in sorted([*one, *other]):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((begin, end))
    return merged
