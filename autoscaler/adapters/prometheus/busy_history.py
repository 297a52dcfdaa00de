"""The BUSY answers of earlier reads, kept where they can no longer change (ISSUE 18).

BUSY reads every sample of `policy.idleSinceLookback` (a day by default) to find the last
busy coarse step of each GPU beyond the slots, and all but its newest steps are what the
read before found. Its steps are aligned to multiples of the coarse step, the one at t
holding the samples of (t - coarse, t] on any server (`range_semantics.py`). A step at
least one coarse step behind `now` is settled: it is kept here, and the next read asks
Prometheus only for the steps after the newest settled one, then adds the kept ones still
inside the lookback. The answer is the one a read of the whole lookback gives, as long as
Prometheus does not change samples older than a coarse step.

The whole lookback is read again (nothing kept) after a start, when the lowest threshold,
the lookback, the coarse step or the signals change, when `now` goes back, and after a read
that failed or answered with warnings (partial data is never kept as clean).
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from autoscaler.adapters.prometheus.promql import Columns, QueryWindow
from autoscaler.settings.tree import SignalSettings

# Per signal, the BUSY answer's columns for a query reaching back the given span.
AskBusy = Callable[[timedelta], list[list[Columns]]]
# A raw series' labels, sorted, as name, value, name, value...: one tuple, not one per label.
_Labels = tuple[str, ...]
# Per raw series: step ends and values, as arrays: at 10,000 workloads the settled steps of a
# day of busy GPUs are millions of floats, 8 bytes each here instead of 32 as Python floats.
_Series = dict[_Labels, tuple["array[float]", "array[float]"]]


@dataclass(frozen=True)
class _Kept:
    """Settled steps, per signal and raw series: (step ends in unix seconds, values)."""

    reads: tuple[object, ...]  # what the steps were read for: threshold, spans, signals
    settled: int  # unix seconds: every step at or before it is kept
    at: datetime  # `now` of the read that kept them
    series: tuple[_Series, ...]  # per signal


class BusyHistory:
    """One source's kept BUSY steps; used by one cycle at a time (the loop never overlaps)."""

    def __init__(self) -> None:
        self._kept: _Kept | None = None

    def forget(self) -> None:
        """The next read asks for the whole lookback."""
        self._kept = None

    def read(
        self,
        ask: AskBusy,
        *,
        signals: Sequence[SignalSettings],
        span: QueryWindow,
        now: datetime,
    ) -> list[Columns]:
        """Every signal's BUSY answer over the whole lookback; keeps its settled steps."""
        reads = (span.threshold, span.lookback, span.coarse, tuple(signals))
        kept = self._kept if self._usable(reads, now) else None
        self._kept = None  # kept again only once this read has succeeded
        reach = span.lookback if kept is None else min(span.lookback, now - _time(kept.settled))
        fresh = ask(reach)
        first = _seconds(now - span.lookback)  # a whole lookback's steps are after it
        settled = _floor(_seconds(now - span.coarse), _seconds(span.coarse))
        merged = [
            _merged(columns, kept.series[index], after=kept.settled) if kept else _merged(columns)
            for index, columns in enumerate(fresh)
        ]
        self._kept = _Kept(reads, settled, now, tuple(_settled(m, settled) for m in merged))
        columns = [
            _column(labels, ends, values, first)
            for series in merged
            for labels, (ends, values) in series.items()
        ]
        return [column for column in columns if column[1]]

    def _usable(self, reads: tuple[object, ...], now: datetime) -> bool:
        kept = self._kept
        return kept is not None and kept.reads == reads and now >= kept.at


def _merged(fresh: list[Columns], kept: _Series | None = None, *, after: float = 0) -> _Series:
    """Kept steps, then the fresh ones after them, per raw series."""
    merged = {
        key: (array("d", ends), array("d", values)) for key, (ends, values) in (kept or {}).items()
    }
    for labels, ends, values in fresh:
        old_ends, old_values = merged.setdefault(_key(labels), (array("d"), array("d")))
        for end, value in zip(ends, values, strict=True):
            if end > after:
                old_ends.append(end)
                old_values.append(value)
    return merged


def _settled(merged: _Series, settled: int) -> _Series:
    kept = {}
    for labels, (ends, values) in merged.items():
        count = sum(1 for end in ends if end <= settled)
        if count:
            kept[labels] = (ends[:count], values[:count])
    return kept


def _key(labels: Mapping[str, str]) -> _Labels:
    """Interned: most label values (namespace, node, model, job...) repeat across series."""
    return tuple(sys.intern(part) for label in sorted(labels.items()) for part in label)


def _column(
    labels: _Labels, ends: Sequence[float], values: Sequence[float], first: float
) -> Columns:
    """One series' steps inside the lookback, after `first` (its start): a step exactly there
    is in a Prometheus 2.x answer only (Prometheus 3's ranges are left-open), so it is left
    out and both answers read alike (`promql.reach_start`)."""
    skip = sum(1 for end in ends if end <= first)
    return dict(zip(labels[::2], labels[1::2], strict=True)), list(ends[skip:]), list(values[skip:])


def _seconds(span: timedelta | datetime) -> float:
    return span.timestamp() if isinstance(span, datetime) else span.total_seconds()


def _floor(value: float, step: float) -> int:
    return int(value // step * step)


def _time(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
