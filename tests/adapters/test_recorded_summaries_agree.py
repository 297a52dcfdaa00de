"""The recorded summaries judge every GPU as the per-slot recorded read does (ISSUE 18), on
generated recordings.

Each case is a few GPUs, each with recorded series per signal (none, one, or two: split) whose
slots hold real values (some at a view's threshold to the last bit), NaN or nothing (a hole),
a raw tail after them in either label style, and several views. A fake server answers the
summary queries from those slots as Prometheus evaluates them (recorded_summary.py says how;
the PromQL itself runs against a real Prometheus in test_recorded_slots.py); the GPUs the
summaries leave to the per-slot read get their slots. Every view's usage must equal the
per-slot read's, which merges every recorded slot and the tail per GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.adapters.prometheus.promql import Columns, QueryWindow, Row, workload_gpu_key
from autoscaler.adapters.prometheus.recorded_summary import (
    Counts,
    Reach,
    evaluated_once,
    peak_start,
    summaries,
)
from autoscaler.adapters.prometheus.views import (
    FleetAnswers,
    merged_steps,
    newest_of,
    undecided,
    usage_of_view,
)
from autoscaler.domain.gpus import GpuKey
from autoscaler.domain.models import UsageView

SLOT = timedelta(minutes=1)
END = 1_800_000_000  # E, a slot end (unix seconds)
SIGNALS = ("a", "b")
WINDOWS = (timedelta(minutes=2), timedelta(seconds=150), timedelta(minutes=5))
THRESHOLDS = (0.0, 0.05, 0.5)


@dataclass(frozen=True)
class Recorded:
    """One recorded series: its GPU, signal, and per slot end (s) its value (None: a hole)."""

    gpu: int
    signal: str
    slots: dict[int, float | None]

    def points(self, first: int, last: int) -> list[float]:
        return [v for at, v in sorted(self.slots.items()) if first <= at <= last and v is not None]

    def columns(self) -> Columns:
        ends = [at for at, v in sorted(self.slots.items()) if v is not None]
        return (
            recorded_labels(self.gpu, self.signal),
            [float(at) for at in ends],
            [v for at, v in sorted(self.slots.items()) if v is not None],
        )


def recorded_labels(gpu: int, signal: str) -> dict[str, str]:
    return {"workload_namespace": f"ns-{gpu}", "workload_pod": "w-0", "UUID": f"GPU-{gpu % 2}"}


def raw_labels(gpu: int, *, style: str) -> dict[str, str]:
    if style == "exported":
        return {"exported_namespace": f"ns-{gpu}", "exported_pod": "w-0", "UUID": f"GPU-{gpu % 2}",
                "namespace": "gpu-operator", "pod": "exporter-1"}  # fmt: skip
    return {"namespace": f"ns-{gpu}", "pod": "w-0", "UUID": f"GPU-{gpu % 2}"}


def real(views: list[UsageView]) -> st.SearchStrategy[float]:
    """Idle or busy, some at a view's threshold or just either side of it."""
    edges = [t for view in views for t in (view.threshold, math.nextafter(view.threshold, 2))]
    below = [math.nextafter(view.threshold, -1) for view in views if view.threshold > 0]
    return st.sampled_from([0.0, 0.01, 0.6, *edges, *below])


def values(views: list[UsageView]) -> st.SearchStrategy[float | None]:
    """Real, NaN, or a hole (None)."""
    return st.one_of(real(views), st.just(math.nan), st.none())


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[UsageView], list[Recorded], list[Columns], int, float]:
    views = draw(
        st.lists(
            st.builds(UsageView, st.sampled_from(WINDOWS), st.sampled_from(THRESHOLDS)),
            min_size=1, max_size=3, unique=True,
        )
    )  # fmt: skip
    span = QueryWindow.for_views(views, slot=SLOT, lookback=timedelta(hours=1))
    tail = draw(st.integers(1, 2))  # slots after the newest recorded one
    newest = END - tail * 60
    first = -(-(END - int(span.recent.total_seconds())) // 60) * 60
    recorded, tails = [], []
    for gpu in range(draw(st.integers(1, 3))):
        for signal in SIGNALS:
            for _ in range(draw(st.sampled_from([1, 1, 1, 0, 2]))):  # 0: missing, 2: split
                kind = draw(st.sampled_from(["idle", "real", "real", "any"]))  # mostly real
                slot_values = {"idle": st.sampled_from([0.0, 0.01]), "real": real(views)}
                slots = {
                    at: draw(slot_values.get(kind, values(views)))
                    for at in range(first, newest + 1, 60)
                }
                recorded.append(Recorded(gpu, signal, slots))
            if draw(st.booleans()):
                style = draw(st.sampled_from(["exported", "plain"]))
                ends = [float(at) for at in range(newest + 60, END + 1, 60)]
                tail_values = [draw(values(views)) for _ in ends]
                kept = [(at, v) for at, v in zip(ends, tail_values, strict=True) if v is not None]
                labels = raw_labels(gpu, style=style)
                tails.append((labels, [at for at, _ in kept], [v for _, v in kept]))
    return views, recorded, tails, newest, draw(st.sampled_from([0.0, 20.0, 59.0]))


def served(recorded: list[Recorded], views: list[UsageView], reach: Reach, threshold: float):
    """COUNT, PEAK per window, NEWEST BUSY and BUSY as Prometheus answers them."""
    first, newest = reach.first // 1000, reach.newest // 1000
    count: list[Row] = []
    for one in recorded:
        points = one.points(first, newest)
        if points:
            value = float(len(points)) if not any(map(math.isnan, points)) else math.nan
            count.append((recorded_labels(one.gpu, one.signal) | {"signal": one.signal}, value))

    def highest(since: int) -> dict[GpuKey, float]:
        found: dict[GpuKey, float] = {}
        for one in recorded:
            points = one.points(since, newest)
            real = [v for v in points if not math.isnan(v)]
            if not points:
                continue
            key = workload_gpu_key(recorded_labels(one.gpu, one.signal))
            assert key is not None
            value = max(real) if real else math.nan
            held = found.get(key)
            if held is None or math.isnan(held) or value > held:
                found[key] = value
        return {key: v for key, v in found.items() if not math.isnan(v)}

    end = END * 1000
    peaks = {}
    for window in {view.window for view in views}:
        start = peak_start(reach, window, end=end)
        if start <= reach.newest:
            peaks[window] = highest(start // 1000)
    above = {
        part: {k: v for k, v in highest(since).items() if v > threshold}
        for part, since in (("newest", newest), ("busy", first))
    }
    return count, peaks, above


@settings(max_examples=200, deadline=None)
@given(cases())
def test_the_recorded_summaries_and_the_per_slot_read_judge_every_gpu_alike(
    case: tuple[list[UsageView], list[Recorded], list[Columns], int, float],
) -> None:
    views, recorded, tails, newest, before_end = case
    span = QueryWindow.for_views(views, slot=SLOT, lookback=timedelta(hours=1))
    now = datetime.fromtimestamp(END - before_end, UTC)
    reach_from = (END - int(span.recent.total_seconds())) * 1000
    first = -(-reach_from // 60_000) * 60
    marker = [({}, [float(at) + 41.5 for at in range(first, newest + 1, 60)], [])]
    reach = evaluated_once(marker, reach_from=reach_from, slot=60_000)  # type: ignore[arg-type]
    assert reach is not None and reach.newest == newest * 1000
    count, peaks, above = served(recorded, views, reach, span.threshold)
    counts = Counts.of(count, slots=reach.slots)
    if not set(SIGNALS) <= counts.fresh:
        return  # the per-slot read decides (absent, stale)
    found = summaries(
        counts.full, reach=reach, peaks=peaks, newest_busy=above["newest"], busy=above["busy"]
    )
    tail_steps = merged_steps(tails)
    detail = undecided(views, span=span, now=now, tails=tail_steps, summaries=found)
    detail |= (counts.seen | tail_steps.keys()) - found.keys()
    every = [one.columns() for one in recorded]
    newest_rows: list[Row] = [(tails[0][0], END - 10.0)] if tails else []
    per_slot = merged_steps([*every, *tails])
    mixed = {key: steps for key, steps in per_slot.items() if key in detail}
    mixed |= {key: steps for key, steps in tail_steps.items() if key not in detail}
    kept = {key: one for key, one in found.items() if key not in detail}
    reference = FleetAnswers(per_slot, {}, newest_of(newest_rows))
    summarised = FleetAnswers(mixed, {}, newest_of(newest_rows), kept)
    for view in views:
        expected = usage_of_view(reference, view, span=span, now=now)
        assert usage_of_view(summarised, view, span=span, now=now) == expected


def test_a_doubled_or_missed_evaluation_leaves_no_reach_for_the_summaries() -> None:
    ends = [float(at) + 30 for at in range(END - 600, END + 1, 60)]
    first = (END - 600) * 1000
    assert evaluated_once([({}, ends, [])], reach_from=first, slot=60_000) == Reach(
        first, END * 1000, 60_000
    )
    doubled = sorted([*ends, ends[3] + 20])
    missed = ends[:3] + ends[4:]
    for marker in (doubled, missed):
        assert evaluated_once([({}, marker, [])], reach_from=first, slot=60_000) is None
