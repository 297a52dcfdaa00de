"""GPUs held, and held idle, over the replayed range: the time axis of the chart.

Counted from the same slot series the replay reads, chunk by chunk, for the GPUs of the
workloads it follows: a GPU is held in a slot with a real sample, and held idle when that
sample is at or below the policy's threshold (NaN and missing slots are neither). Slots are
summed across GPUs in C (`map`) and averaged per bucket, a few hundred buckets whatever the
range, so a week of a thousand GPUs adds about a second and the chart stays light.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import repeat
from operator import add, ge, le

from autoscaler.backtest.deactivation import Deactivation
from autoscaler.backtest.timeline import Chunk
from autoscaler.domain.usage.gpus import GpuKey

POINTS = 360  # buckets on the time axis at most


@dataclass(frozen=True)
class Occupancy:
    """Average GPUs per bucket, from `start`, `bucket` seconds each."""

    start: int  # unix seconds, where the first slot begins
    end: int  # unix seconds, the last slot's time: the last bucket may be shorter
    bucket: int  # seconds
    held: tuple[float, ...]
    idle: tuple[float, ...]  # held, at or below the threshold

    def at(self, index: int) -> datetime:
        return datetime.fromtimestamp(self.start + index * self.bucket, UTC)

    def reclaimed(self, deactivations: Sequence[Deactivation]) -> tuple[float, ...]:
        """Average GPUs a variant's would-be deactivations held back, per bucket."""
        found = [0.0] * len(self.held)
        for item in deactivations:
            begin, end = item.at.timestamp(), item.until.timestamp()
            first = max(0, int((begin - self.start) // self.bucket))
            last = min(len(found) - 1, int((end - self.start) // self.bucket))
            for index in range(first, last + 1):
                low = self.start + index * self.bucket
                high = min(low + self.bucket, self.end)
                overlap = min(end, high) - max(begin, low)
                found[index] += item.gpus * max(0.0, overlap) / (high - low)
        return tuple(found)


class OccupancyCounter:
    def __init__(self, *, start: datetime, end: datetime, slot: int, threshold: float) -> None:
        self._slot, self._threshold = slot, threshold
        self._first = math.ceil(start.timestamp() / slot) * slot  # the first slot in range
        slots = max(1, (int(end.timestamp()) - self._first) // slot + 1)
        self._per_bucket = max(1, math.ceil(slots / POINTS))
        buckets = math.ceil(slots / self._per_bucket)
        self._slots = slots
        self._held = [0.0] * buckets
        self._idle = [0.0] * buckets

    def add(self, chunk: Chunk, *, follows: Callable[[GpuKey], bool]) -> None:
        """Count one chunk's slots that fall in the range, for the GPUs `follows` accepts."""
        held, idle = [0] * chunk.steps, [0] * chunk.steps
        for key, values in chunk.values.items():
            if follows(key):
                held = list(map(add, held, map(ge, values, repeat(0.0))))
                idle = list(map(add, idle, map(le, values, repeat(self._threshold))))
        offset = (chunk.start - self._first) // self._slot  # the chunk's slot 0 in the range
        for index in range(max(0, -offset), min(chunk.steps, self._slots - offset)):
            bucket = (offset + index) // self._per_bucket
            self._held[bucket] += held[index]
            self._idle[bucket] += idle[index]

    def result(self) -> Occupancy:
        counts = [  # slots per bucket: the last one may be short
            min(self._per_bucket, self._slots - b * self._per_bucket)
            for b in range(len(self._held))
        ]
        return Occupancy(  # a slot's value at time t covers (t - slot, t]
            start=self._first - self._slot,
            end=self._first + (self._slots - 1) * self._slot,
            bucket=self._per_bucket * self._slot,
            held=tuple(v / n for v, n in zip(self._held, counts, strict=True)),
            idle=tuple(v / n for v, n in zip(self._idle, counts, strict=True)),
        )
