"""Slot series from Prometheus, one time chunk at a time, the next fetched while one is read.

One range query per signal and chunk, whatever the fleet's size: `max_over_time(metric[slot])`
(MIG instances skipped for signals that read 0 on them), exactly the per-slot expression inside
the live coverage and last-busy queries. Label mapping (exported_* over the plain labels), the
division by the signal's scale and the merge of a GPU's series (signals, replaced exporter
pods) happen while reading, in `timeline.chunk_from`, with the live queries' own rules: the
server then only selects, which keeps a week of a thousand GPUs within a minute.

Beside them, one range query per enabled evidence signal and chunk (`signals.py`): the live
read's per-slot expression. A failed evidence query does not stop the backtest: its answer
carries the failure, and the workloads it covers are unknown wherever it reaches (ISSUE 16).

And, with `owners`, one range query per kube-state-metrics owner series and chunk
(`owners.py`): a failed one is kept too, its pods' owners unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from autoscaler.adapters.prometheus.promql import range_duration, selector
from autoscaler.backtest.matrix import RangeAnswer
from autoscaler.backtest.owners import OwnerAnswers, read_owner_series
from autoscaler.backtest.signals import EvidenceAnswer, EvidenceQuery
from autoscaler.backtest.timeline import Chunk, Scaled, chunk_from
from autoscaler.core.errors import MetricsUnavailable
from autoscaler.settings.tree import SignalSettings


class RangeQueries(Protocol):
    """Range queries: `PrometheusRange` (a Prometheus or Thanos Querier) or, for `--demo`,
    `autoscaler.sim.history.RecordedHistory`."""

    def query_range(
        self, promql: str, *, start: datetime, end: datetime, step: timedelta
    ) -> RangeAnswer: ...

    def closed_ranges(self, *, at: datetime) -> bool:
        """Whether the server keeps a sample at a range's start (Prometheus 2.x), so each
        slot's range is written one millisecond shorter (`promql.range_duration`); raises
        MetricsUnavailable when it cannot tell."""
        ...


@dataclass(frozen=True)
class SlotQuery:
    promql: str
    scale: float  # divide by this for a 0..1 ratio


def slot_queries(
    signals: Sequence[SignalSettings], *, slot: timedelta, closed_ranges: bool = False
) -> tuple[SlotQuery, ...]:
    """Each signal's highest value in the slot (t - slot, t] ending at each step, NaN when all
    were NaN."""
    slot_range = range_duration(slot, closed=closed_ranges)
    return tuple(
        SlotQuery(f"max_over_time({selector(s)}[{slot_range}])", float(s.scale)) for s in signals
    )


@dataclass(frozen=True)
class ChunkPlan:
    start: int  # unix seconds, a multiple of the slot
    end: int  # inclusive
    slot: int
    steps_per_chunk: int
    closed_ranges: bool = False  # the server keeps a sample at a range's start (2.x)

    @property
    def slot_range(self) -> str:
        """A slot's range selector duration, holding the samples of (t - slot, t]."""
        return range_duration(timedelta(seconds=self.slot), closed=self.closed_ranges)

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
    evidence: tuple[EvidenceAnswer, ...] = ()
    owners: OwnerAnswers | None = None


@dataclass(frozen=True)
class _Answers:
    slots: list[tuple[RangeAnswer, float]]
    evidence: tuple[EvidenceAnswer, ...]
    owners: OwnerAnswers | None


def chunks(
    source: RangeQueries,
    queries: Sequence[SlotQuery],
    plan: ChunkPlan,
    *,
    evidence: Sequence[EvidenceQuery] = (),
    owners: bool = False,
) -> Iterator[Fetched]:
    """The chunks in time order; the next one's queries run while the caller reads this one."""
    spans = list(plan.spans())

    def replies(first: int, steps: int) -> _Answers:
        def ask(promql: str) -> RangeAnswer:
            return source.query_range(
                promql,
                start=_utc(first),
                end=_utc(first + (steps - 1) * plan.slot),
                step=timedelta(seconds=plan.slot),
            )

        slots = [(ask(query.promql), query.scale) for query in queries]
        owned = read_owner_series(ask, slot_range=plan.slot_range) if owners else None
        return _Answers(slots, tuple(_evidence(ask, query) for query in evidence), owned)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="backtest-fetch") as pool:

        def fetch(span: tuple[int, int]) -> Future[_Answers]:
            return pool.submit(replies, *span)

        pending = [fetch(spans[0])] if spans else []
        for number, (first, steps) in enumerate(spans):
            answered = pending.pop().result()
            if number + 1 < len(spans):
                pending.append(fetch(spans[number + 1]))
            scaled = [Scaled(reply.series, scale) for reply, scale in answered.slots]
            chunk = chunk_from(scaled, start=first, slot=plan.slot, steps=steps)
            replied = [reply for reply, _ in answered.slots] + [
                e.reply for e in answered.evidence if e.reply is not None
            ]
            if answered.owners is not None:
                replied += answered.owners.replies.values()
            warnings = tuple(w for reply in replied for w in reply.warnings)
            yield Fetched(chunk, warnings, answered.evidence, answered.owners)


def _evidence(ask: Callable[[str], RangeAnswer], query: EvidenceQuery) -> EvidenceAnswer:
    """An evidence query's answer; its failure recorded, not raised (the slot queries' do)."""
    try:
        return EvidenceAnswer(query, ask(query.promql))
    except MetricsUnavailable as exc:
        return EvidenceAnswer(query, None, str(exc))


def _utc(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
