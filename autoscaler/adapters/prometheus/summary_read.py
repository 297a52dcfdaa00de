"""The queries of the recorded summaries (recorded_summary.py says what they mean), sent in
turn: the marker's evaluations (is every slot of the reach recorded exactly once, and fresh?),
then COUNT, PEAK per usage window, BUSY and NEWEST BUSY, all evaluated at the newest recorded
slot's last moment. None when the summaries cannot serve this read (the per-slot recorded
read then decides, as before: absent, stale, holes)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from autoscaler.adapters.prometheus.evidence_base import Ask
from autoscaler.adapters.prometheus.promql import QueryWindow, parse_vector
from autoscaler.adapters.prometheus.recorded_summary import (
    Counts,
    Reach,
    Summary,
    above_query,
    by_gpu,
    count_query,
    evaluated_once,
    marker_query,
    peak_query,
    peak_start,
    summaries,
)
from autoscaler.adapters.prometheus.slot_columns import slot_columns
from autoscaler.adapters.prometheus.views import span_ms, unix_ms
from autoscaler.domain.gpus import GpuKey
from autoscaler.settings.tree import SignalSettings


@dataclass(frozen=True)
class Summarised:
    """The summaries of the GPUs they cover, the reach they cover, every GPU COUNT saw."""

    reach: Reach
    summaries: dict[GpuKey, Summary]
    seen: frozenset[GpuKey]


def read_summaries(
    ask: Ask,
    *,
    signals: Sequence[SignalSettings],
    span: QueryWindow,
    windows: Collection[timedelta],
    at: datetime,
    now: datetime,
    max_age: timedelta,
) -> Summarised | None:
    """The summaries over the reach back from `at` (`now`'s slot end), or None."""
    slot, end = span_ms(span.slot), unix_ms(at)
    marker = slot_columns(ask(marker_query(span.recent + span.slot), at))
    reach = evaluated_once(marker, reach_from=end - span_ms(span.recent), slot=slot)
    if reach is None or unix_ms(now) - round(marker[0][1][-1] * 1000) > span_ms(max_age):
        return None  # stale: the per-slot read says so
    when = _moment(reach.at)
    counts = Counts.of(parse_vector(ask(count_query(reach), when)), slots=reach.slots)
    if not {signal.metric for signal in signals} <= counts.fresh:
        return None
    starts = {window: peak_start(reach, window, end=end) for window in windows}
    peaks = {
        window: by_gpu(parse_vector(ask(peak_query(reach, first=start), when)))
        for window, start in starts.items()
        if start <= reach.newest
    }

    def above(first: int) -> dict[GpuKey, float]:
        query = above_query(reach, first=first, threshold=span.threshold)
        return by_gpu(parse_vector(ask(query, when)))

    newest_busy, busy = above(reach.newest), above(reach.first)
    found = summaries(counts.full, reach=reach, peaks=peaks, newest_busy=newest_busy, busy=busy)
    return Summarised(reach, found, counts.seen)


def _moment(ms: int) -> datetime:
    """A moment in whole milliseconds, exactly (no float on the way)."""
    return datetime.fromtimestamp(ms // 1000, UTC) + timedelta(milliseconds=ms % 1000)
