"""Every usage view of one fleet read, judged in Python from the read's three answers.

The SLOTS matrix is evaluated at `now` rounded up to a whole slot (`slots_end`), so its last
slot holds the newest samples; its points are the slot ends t (multiples of the slot), each
with the highest ratio in (t - slot, t] (on Prometheus 2.x too: its ranges are written one
millisecond shorter there, `range_semantics.py`). For a view (window W, threshold T), with E
that end:

- peak: the highest real point with E - W < t <= E, i.e. the samples of (E - W, E]. This is
  the window slot-aligned: at a `now` on a slot boundary it is exactly (now - W, now]; in
  between it starts up to one slot later, and the samples of that first partial slot still
  reach `last_busy_at` (the end of their slot is inside the window).
- coverage: the points with E - W <= t <= E holding a real value (NaN is never coverage; a
  missing point is a hole), over W / slot, capped at 1: both window ends count. The step at
  E - W is in every server's answer, the subquery reaching a coarse step further back.
- last_busy_at: the latest t above T with E - W - coarse < t <= E (slot precision, never
  after `now`), else the latest coarse step above T in the BUSY matrix (rounded up to a
  coarse step, so before the window). E - W - coarse is where the SLOTS subquery begins: a
  Prometheus 2.x answer has a step there, a Prometheus 3 answer (left-open ranges) has none,
  so that step is never read and both answers give the same last busy time.

Prometheus 3 and 2.x answer the same steps inside the window: the subquery reaches a coarse
step further back than any view's window, so the step at E - W is in both answers; and each
step holds the same samples, a sample exactly on a slot boundary belonging to the slot it
ends on both (docs/ROLLOUT.md).

A view uses only its own span of the shared answer, so each view reads the same usage as a
read of that view alone. A GPU belongs to a view when it has a point in the view's window,
a last busy time, or a newest sample, as with one query per measure before.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import filterfalse

from autoscaler.adapters.prometheus.promql import (
    Columns,
    QueryWindow,
    Row,
    host_of,
    workload_gpu_key,
)
from autoscaler.domain.models import GpuUsage, UsageView
from autoscaler.domain.usage.gpus import GpuKey

Newest = tuple[datetime | None, str | None, str | None]  # sample time, host, model


@dataclass(frozen=True)
class Steps:
    """One GPU's points of a matrix: step ends (unix seconds as the server wrote them,
    ascending; often one list shared by many GPUs: never mutate it) and values."""

    ends: Sequence[float] = field(default_factory=list)
    values: Sequence[float] = field(default_factory=list)

    def last_above(self, threshold: float, *, after: float = 0) -> float | None:
        """The latest end after `after` whose value is above `threshold`."""
        for index in range(len(self.ends) - 1, bisect_right(self.ends, after) - 1, -1):
            if self.values[index] > threshold:
                return self.ends[index]
        return None


@dataclass(frozen=True)
class FleetAnswers:
    """The three answers of one fleet read, per GPU."""

    slots: Mapping[GpuKey, Steps]
    busy: Mapping[GpuKey, Steps]
    newest: Mapping[GpuKey, Newest]


def slots_end(now: datetime, slot: timedelta) -> datetime:
    """`now` rounded up to a whole slot: where the SLOTS matrix is evaluated."""
    step = span_ms(slot)
    return _time(-(-unix_ms(now) // step) * step / 1000)


def usage_of_view(
    answers: FleetAnswers, view: UsageView, *, span: QueryWindow, now: datetime
) -> dict[tuple[str, str], tuple[GpuUsage, ...]]:
    """The view's GPUs grouped by (namespace, pod), judged on its own window and threshold."""
    frame = _Frame.of(view, span=span, now=now)
    grouped: dict[tuple[str, str], list[GpuUsage]] = {}
    for key in sorted(answers.slots.keys() | answers.busy.keys() | answers.newest.keys()):
        usage = frame.judge(
            key, answers.slots.get(key), answers.busy.get(key), answers.newest.get(key)
        )
        if usage is not None:
            grouped.setdefault((key.namespace, key.pod), []).append(usage)
    return {pod: tuple(gpus) for pod, gpus in grouped.items()}


@dataclass(frozen=True)
class _Frame:
    """One view's span of the shared answer, in unix seconds: whole milliseconds divided
    by 1,000 give the very floats the server's step times parse to."""

    window_start: float  # E - W: coverage counts it, the peak starts after it
    # E - W - coarse, the subquery's start: last busy at slot precision after it
    recent_start: float
    slots: float  # W / slot, the denominator of coverage
    threshold: float
    now: float

    @classmethod
    def of(cls, view: UsageView, *, span: QueryWindow, now: datetime) -> _Frame:
        end = unix_ms(slots_end(now, span.slot))
        return cls(
            window_start=(end - span_ms(view.window)) / 1000,
            recent_start=(end - span_ms(view.window) - span_ms(span.coarse)) / 1000,
            slots=view.window / span.slot,
            threshold=view.threshold,
            now=unix_ms(now) / 1000,
        )

    def judge(
        self, key: GpuKey, slots: Steps | None, busy: Steps | None, newest: Newest | None
    ) -> GpuUsage | None:
        steps = slots or Steps()
        first = bisect_left(steps.ends, self.window_start)
        window = steps.values[first:]
        last_busy = steps.last_above(self.threshold, after=self.recent_start)
        if last_busy is None and busy is not None:
            last_busy = busy.last_above(self.threshold)
        if not window and last_busy is None and newest is None:
            return None
        sample_at, host, model = newest or (None, None, None)
        after_start = bisect_right(steps.ends, self.window_start) - first
        peaks = list(filterfalse(math.isnan, window[after_start:]))
        held = len(peaks) + sum(1 for value in window[:after_start] if not math.isnan(value))
        return GpuUsage(
            key=key,
            peak=max(peaks) if peaks else None,
            coverage=min(1.0, held / self.slots),
            last_sample_at=sample_at,
            last_busy_at=None if last_busy is None else _time(min(last_busy, self.now)),
            hostname=host,
            model=model,
        )


def merged_steps(
    series: Iterable[Columns], *, into: dict[GpuKey, Steps] | None = None
) -> dict[GpuKey, Steps]:
    """Points per GPU; the several series of one GPU (one per signal, both label styles, the
    series of a replaced exporter pod) merged per step with max, a real value over a NaN.
    `into`: the steps merged so far, added to (so a signal's columns can go before the next
    signal is read)."""
    found: dict[GpuKey, Steps] = {} if into is None else into
    for labels, ends, values in series:
        key = workload_gpu_key(labels)
        if key is None:
            continue
        steps = Steps(ends, values)
        found[key] = _merged(found[key], steps) if key in found else steps
    return found


def _merged(one: Steps, other: Steps) -> Steps:
    """The two merged, values in an array (8 bytes a point: 40,000 GPUs at 10,000 workloads)."""
    if one.ends is other.ends or one.ends == other.ends:  # the usual case: merged pairwise
        # `b > a` is False when either is NaN, and `a != a` only when a is NaN: inline,
        # since a call per point costs a tenth of a second per 1,000 workloads.
        pairs = zip(one.values, other.values, strict=True)
        merged = [b if a != a or b > a else a for a, b in pairs]  # noqa: PLR0124
        return Steps(one.ends, array("d", merged))
    values = dict(zip(one.ends, one.values, strict=True))
    for at, value in zip(other.ends, other.values, strict=True):
        values[at] = max(values.get(at, value), value, key=_nan_lowest)
    ends = sorted(values)
    return Steps(ends, array("d", [values[at] for at in ends]))


def newest_of(rows: Iterable[Row]) -> dict[GpuKey, Newest]:
    """Newest sample time per GPU (over its signals and series), with the host and model of
    the series that had it."""
    best: dict[GpuKey, tuple[float, str | None, str | None]] = {}
    for labels, value in rows:
        key = workload_gpu_key(labels)
        if key is not None and math.isfinite(value) and value >= best.get(key, (-1.0,))[0]:
            best[key] = (value, host_of(labels), labels.get("modelName") or None)
    return {
        key: (_time(round(at * 1000) / 1000), host, model)
        for key, (at, host, model) in best.items()
    }


def _nan_lowest(value: float) -> float:
    return -math.inf if math.isnan(value) else value


def span_ms(span: timedelta) -> int:
    """A span in whole milliseconds, as slot ends are compared here and in the recorded read."""
    return round(span.total_seconds() * 1000)


def unix_ms(moment: datetime) -> int:
    """A moment in whole unix milliseconds."""
    return round(moment.timestamp() * 1000)


def _time(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
