"""The raw SLOTS read as per-series summaries (ISSUE 18): one value per raw series instead of
one per slot, merged per GPU in Python; the GPUs they cannot judge exactly are listed for
the per-slot read (`slot_reader.py`).

For each usage view (window W, threshold T) and signal, evaluated at E (`slots_end`), with
the built-in SLOTS expression `max_over_time(sel[slot])` (a custom template keeps the
per-slot read):

- PEAK: `max_over_time(sel[n·slot])`, n = ceil(W / slot): the samples of the slots ending in
  (E - W, E], as `views.py` reads the peak; grouped with `max by` the raw labels that name a
  GPU, since the highest value is what the merge keeps anyway (a real value over NaN, as
  Prometheus' `max` does too).
- HELD: per raw series, `count_over_time` of the per-slot peaks over `[W:slot]`: the slots
  ending in [E - W, E] that hold a sample. A series' count is the GPU's coverage only when
  it is conclusive: the GPU has one series, or one series reaches W / slot (coverage caps
  at 1). Otherwise (holes in every series of a GPU: an exporter gap, a replaced exporter's
  split series with holes) the GPU is read per slot. Per series rows would carry every
  label (twice the bytes of the others), so the counts are capped at c = ceil(W / slot)
  (which changes no coverage) and summed `by` the GPU labels with `SERIES` added per
  series: a group's n series and their sum s come back as one number. A group is conclusive
  when n = 1 (its count is s) or s = n·c (every series reaches the cap); otherwise the
  counts of its series are unknown and it counts as holes.
- LAST: the latest slot end in [E - W - coarse, E] whose peak is busy, per raw series and
  then `max by` the GPU labels (the latest is what the merge keeps):
  `max_over_time(timestamp(max_over_time(sel[slot]) >= floor)[W + coarse:slot])`, where
  `floor` is the smallest float whose division by the signal's scale is above T, so the
  server's comparison is Python's `value / scale > T` to the last bit. `timestamp()` of a
  computed vector is its step time (tests/adapters/test_summary_queries.py pins it).
- NAN: per signal, once for the longest window, `sum by` the GPU labels of `sum_over_time`
  over the samples HELD counts: NaN whenever one of them is NaN. HELD counts a slot that
  held only NaN, which is never coverage, so such a GPU is read per slot.

Every operation inside a subquery runs once per series per step, so the subqueries hold only
what they must (a comparison costs as much as the slot peak itself; measured in
benchmarks/README.md); the GPU labels, the scale and the merge stay outside or in Python.
The number of queries is 3 per view and signal plus 1 per signal: it depends on the views
configured, never on the fleet.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from autoscaler.adapters.prometheus.evidence_base import Ask
from autoscaler.adapters.prometheus.promql import (
    RAW_STYLES,
    duration,
    parse_vector,
    selector,
    workload_gpu_key,
)
from autoscaler.adapters.prometheus.views import Summary
from autoscaler.domain.gpus import GpuKey
from autoscaler.domain.models import UsageView
from autoscaler.settings.tree import SignalSettings

# Every raw label that names a GPU, in either style: `by` these keeps the series of
# different GPUs apart and the merge in Python maps each group to its GPU.
GPU_LABELS = ", ".join(dict.fromkeys(label for labels, _ in RAW_STYLES for label in labels))
Values = list[tuple[GpuKey, float]]  # per row of an answer: its GPU and value
ViewRows = tuple[Values, Values, Values]  # one signal's PEAK (ratios), HELD and LAST rows
SERIES = 2**20  # per series in a HELD sum, above any capped count of slots (exact in floats)


@dataclass(frozen=True)
class Summaries:
    """Per view, the summary of each GPU judged from them; the GPUs to read per slot."""

    views: Mapping[UsageView, Mapping[GpuKey, Summary]]
    detail: frozenset[GpuKey]


def busy_floor(threshold: float, *, scale: float) -> float:
    """The smallest float v with `v / scale > threshold`: division by a positive scale is
    monotone, so `v >= floor` holds exactly when Python's comparison does."""
    floor = threshold * scale
    while floor / scale > threshold:
        floor = math.nextafter(floor, -math.inf)
    while not floor / scale > threshold:
        floor = math.nextafter(floor, math.inf)
    return floor


def view_queries(
    signal: SignalSettings, view: UsageView, *, slot: timedelta, coarse: timedelta
) -> tuple[str, str, str]:
    """PEAK, HELD and LAST of one signal for one view."""
    sel, step = selector(signal), duration(slot)
    slot_peak = f"max_over_time({sel}[{step}])"
    floor = repr(busy_floor(view.threshold, scale=signal.scale))
    peak_reach = -(-view.window // slot) * slot  # the slots ending in (E - W, E]
    return (
        f"max by ({GPU_LABELS}) (max_over_time({sel}[{duration(peak_reach)}]))",
        f"sum by ({GPU_LABELS}) (clamp_max(count_over_time(({slot_peak})"
        f"[{duration(view.window)}:{step}]), {_cap(view, slot)}) + {SERIES})",
        f"max by ({GPU_LABELS}) (max_over_time(timestamp({slot_peak} >= {floor})"
        f"[{duration(view.window + coarse)}:{step}]))",
    )


def nan_query(signal: SignalSettings, *, window: timedelta, slot: timedelta) -> str:
    """NaN for a GPU with a NaN sample in the slots HELD counts over `window`."""
    held_reach = (window // slot + 1) * slot
    return f"sum by ({GPU_LABELS}) (sum_over_time({selector(signal)}[{duration(held_reach)}]))"


def read_summaries(
    ask: Ask,
    *,
    signals: Sequence[SignalSettings],
    views: Sequence[UsageView],
    slot: timedelta,
    coarse: timedelta,
    at: datetime,
) -> Summaries:
    """Every view's summaries, from the queries above evaluated at `at` (a slot end)."""
    longest = max(view.window for view in views)
    nan = [_rows(ask(nan_query(signal, window=longest, slot=slot), at)) for signal in signals]
    rows = {
        view: _view_rows(ask, view, signals=signals, slot=slot, coarse=coarse, at=at)
        for view in views
    }
    return summarised(nan=nan, views=rows, slot=slot)


def summarised(
    *, nan: Sequence[Values], views: Mapping[UsageView, Sequence[ViewRows]], slot: timedelta
) -> Summaries:
    """The answers merged per GPU; the GPUs they cannot judge exactly listed apart: a NaN
    sample, several series with holes in a view, or a count or a time that is not a number
    (no answer Prometheus gives; a proxy's, say)."""
    found = {view: _merged(parts, cap=_cap(view, slot)) for view, parts in views.items()}
    odd = {
        key
        for parts in views.values()
        for _, held, last in parts
        for key, value in (*held, *last)
        if not math.isfinite(value)
    }
    with_nan = {key for rows in nan for key, value in rows if math.isnan(value)}
    inconclusive = (_inconclusive(one, view, slot) for view, one in found.items())
    detail = frozenset(with_nan | odd).union(*inconclusive)
    kept = {view: {k: s for k, s in one.items() if k not in detail} for view, one in found.items()}
    return Summaries(kept, detail)


def _view_rows(
    ask: Ask,
    view: UsageView,
    *,
    signals: Sequence[SignalSettings],
    slot: timedelta,
    coarse: timedelta,
    at: datetime,
) -> list[ViewRows]:
    """Per signal, the rows of its PEAK (as ratios), HELD and LAST for `view`."""
    found = []
    for signal in signals:
        peak, held, last = view_queries(signal, view, slot=slot, coarse=coarse)
        peaks = _rows(ask(peak, at), scale=signal.scale)
        found.append((peaks, _rows(ask(held, at)), _rows(ask(last, at))))
    return found


def _rows(result: Sequence[Mapping[str, Any]], *, scale: float = 1.0) -> Values:
    """Each row's GPU and value (divided by `scale`, as the per-slot read does)."""
    return [
        (key, value / scale if scale != 1 else value)
        for labels, value in parse_vector(result)
        if (key := workload_gpu_key(labels)) is not None
    ]


def _merged(parts: Sequence[ViewRows], *, cap: int) -> dict[GpuKey, Summary]:
    """Per GPU over every signal: the highest peak (a real value over NaN), the most slots
    one series surely holds and how many series hold any, the latest busy slot end."""
    peak: dict[GpuKey, float] = {}
    held: dict[GpuKey, tuple[int, int]] = {}
    last: dict[GpuKey, float] = {}
    for peaks, counts, busy in parts:
        for key, value in peaks:
            known = peak.get(key)
            if known is None or known != known or value > known:  # noqa: PLR0124 - NaN check
                peak[key] = value
        for key, value in counts:
            most, series = held.get(key, (0, 0))
            surely, more = _held(value, cap=cap) if math.isfinite(value) else (0, 1)
            held[key] = (max(most, surely), series + more)
        for key, at in busy:
            if math.isfinite(at):
                last[key] = max(last.get(key, at), at)
    return {
        key: Summary(
            peak=peak.get(key),
            held=held.get(key, (0, 0))[0],
            series=held.get(key, (0, 0))[1],
            last_busy=last.get(key),
        )
        for key in peak.keys() | held.keys() | last.keys()
    }


def _held(value: float, *, cap: int) -> tuple[int, int]:
    """A HELD row as (the slots one of its series surely holds, 0 when unknown; its series)."""
    series, total = divmod(int(value), SERIES)
    if series == 1:
        return total, 1
    return (cap if total == series * cap else 0), series


def _cap(view: UsageView, slot: timedelta) -> int:
    """The fewest held slots that make a view's coverage 1."""
    return -(-view.window // slot)


def _inconclusive(
    summaries: Mapping[GpuKey, Summary], view: UsageView, slot: timedelta
) -> set[GpuKey]:
    """GPUs whose several series all have holes: their union is not the counts' maximum."""
    slots = view.window / slot
    return {key for key, one in summaries.items() if one.series > 1 and one.held < slots}
