"""Slot series from Prometheus, one time chunk at a time, the next fetched while one is read.

One range query per chunk, whatever the fleet's size: the live peak template over one slot,
`max by (workload_namespace, workload_pod, UUID, GPU_I_ID) (max_over_time(metric[slot]) / scale)`
for every signal, so labels are mapped and a GPU split across exporter pods is merged in the
server exactly as in the live queries.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from autoscaler.adapters.prometheus_range import RangeReply
from autoscaler.adapters.promql import KEY_LABELS, duration, relabelled, selector
from autoscaler.backtest.timeline import Chunk, chunk_from
from autoscaler.config import SignalSettings


class RangeQueries(Protocol):
    def query_range(
        self, promql: str, *, start: datetime, end: datetime, step: timedelta
    ) -> RangeReply: ...


def slot_query(
    signals: Sequence[SignalSettings], *, slot: timedelta, extra_label: str | None = None
) -> str:
    """Each GPU's highest ratio in the slot ending at each step, NaN when all were NaN."""
    tagged = [
        f"label_replace({relabelled(f'max_over_time({selector(s)}[{duration(slot)}])')}"
        f' / {float(s.scale)!r}, "signal", "{s.metric}", "", "")'
        for s in signals
    ]
    labels = [*KEY_LABELS, *([extra_label] if extra_label else [])]
    return f"max by ({', '.join(labels)}) ({' or '.join(tagged)})"


@dataclass(frozen=True)
class ChunkPlan:
    start: int  # unix seconds, a multiple of the slot
    end: int  # inclusive
    slot: int
    steps_per_chunk: int

    def spans(self) -> Iterator[tuple[int, int]]:
        """(first step, number of steps) of each chunk."""
        first = self.start
        while first <= self.end:
            steps = min(self.steps_per_chunk, (self.end - first) // self.slot + 1)
            yield first, steps
            first += steps * self.slot


@dataclass
class Fetched:
    chunk: Chunk
    warnings: tuple[str, ...]


def chunks(source: RangeQueries, promql: str, plan: ChunkPlan) -> Iterator[Fetched]:
    """The chunks in time order; the next one's query runs while the caller reads this one."""
    spans = list(plan.spans())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="backtest-fetch") as pool:

        def fetch(span: tuple[int, int]) -> Future[RangeReply]:
            first, steps = span
            return pool.submit(
                source.query_range,
                promql,
                start=_utc(first),
                end=_utc(first + (steps - 1) * plan.slot),
                step=timedelta(seconds=plan.slot),
            )

        pending = [fetch(spans[0])] if spans else []
        for number, (first, steps) in enumerate(spans):
            reply = pending.pop().result()
            if number + 1 < len(spans):
                pending.append(fetch(spans[number + 1]))
            chunk = chunk_from(reply.series, start=first, slot=plan.slot, steps=steps)
            yield Fetched(chunk, reply.warnings)


def _utc(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
