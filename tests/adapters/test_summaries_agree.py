"""The summary read judges every GPU as the per-slot read does (ISSUE 18), on generated series.

Each case is a few GPUs, each with raw series per slot (holes, NaN, values at a view's
threshold to the last bit), in either label style, split like a replaced exporter's, over
two signals (scales 1 and 100), and several views. A fake server answers the summary queries
from those slots as Prometheus evaluates them (summaries.py says how; the PromQL itself is
checked against a real Prometheus in test_summary_queries.py); the GPUs the summaries leave
to the per-slot read get their slots. Every view's usage must equal the per-slot read's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.adapters.prometheus.promql import Columns, QueryWindow, Row, workload_gpu_key
from autoscaler.adapters.prometheus.summaries import (
    GPU_LABELS,
    SERIES,
    ViewRows,
    busy_floor,
    summarised,
)
from autoscaler.adapters.prometheus.views import FleetAnswers, usage_of_view
from autoscaler.domain.gpus import GpuKey
from autoscaler.domain.models import UsageView

SLOT = timedelta(minutes=1)
END = 1_800_000_000  # a slot end, unix seconds
SCALES = (1.0, 100.0)  # the two signals
WINDOWS = (timedelta(minutes=2), timedelta(seconds=150), timedelta(minutes=5), timedelta(minutes=9))
THRESHOLDS = (0.0, 0.05, 0.5)


@dataclass(frozen=True)
class Series:
    """One raw series: its labels, its signal's scale, and per slot end its peak in the
    signal's unit (None: a hole)."""

    labels: dict[str, str]
    scale: float
    peaks: dict[int, float | None]

    def columns(self) -> Columns:
        ends = sorted(at for at, value in self.peaks.items() if value is not None)
        values = [self.peaks[at] / self.scale for at in ends]  # type: ignore[operator]
        return self.labels, [float(at) for at in ends], values

    def points(self, since: float) -> list[tuple[int, float]]:
        return [(at, v) for at, v in sorted(self.peaks.items()) if v is not None and at >= since]


def labels_of(gpu: int, *, style: str, exporter: int) -> dict[str, str]:
    workload = {"UUID": f"GPU-{gpu % 2}", "modelName": "A100"}  # two GPUs share a UUID
    if style == "exported":
        return workload | {
            "exported_namespace": f"ns-{gpu}",
            "exported_pod": "worker-0",
            "namespace": "gpu-operator",
            "pod": f"exporter-{exporter}",
        }
    return workload | {
        "namespace": f"ns-{gpu}",
        "pod": "worker-0",
        "instance": f"10.0.0.{exporter}",
    }


def slot_values(views: list[UsageView], scale: float) -> st.SearchStrategy[float | None]:
    """Mostly real values, some exactly at a view's threshold (either side of it to the last
    bit), some NaN, some holes."""
    edges = [busy_floor(view.threshold, scale=scale) for view in views]
    below = [math.nextafter(edge, -math.inf) for edge in edges]
    at = [view.threshold * scale for view in views]
    return st.one_of(
        st.sampled_from([0.0, 0.01 * scale, 0.6 * scale, *edges, *below, *at]),
        st.just(math.nan),
        st.none(),
    )


@st.composite
def fleets(draw: st.DrawFn) -> tuple[list[UsageView], list[Series], float]:
    views = draw(
        st.lists(
            st.builds(UsageView, st.sampled_from(WINDOWS), st.sampled_from(THRESHOLDS)),
            min_size=1,
            max_size=3,
            unique=True,
        )
    )
    span = QueryWindow.for_views(views, slot=SLOT, lookback=timedelta(hours=1))
    ends = [END - k * 60 for k in range(int(span.recent / SLOT) + 1)]
    found = []
    for gpu in range(draw(st.integers(1, 3))):
        style = draw(st.sampled_from(["exported", "plain"]))
        for scale in SCALES:
            for exporter in range(draw(st.integers(0, 2))):  # 0: the signal is missing, 2: split
                peaks = {
                    at: draw(slot_values(views, scale))
                    if draw(st.booleans())
                    else draw(st.sampled_from([0.0, 0.6 * scale]))
                    for at in ends
                }
                found.append(Series(labels_of(gpu, style=style, exporter=exporter), scale, peaks))
    return views, found, draw(st.sampled_from([0.0, 20.0, 59.0]))


def answer(series: list[Series], view: UsageView, span: QueryWindow) -> list[ViewRows]:
    """PEAK, HELD and LAST per signal, as Prometheus answers them from these slots."""
    window = END - view.window.total_seconds()
    found = []
    for scale in SCALES:
        peaks, held, last = [], [], []
        held_in: dict[tuple[str, ...], tuple[GpuKey, list[int]]] = {}  # `sum by` the labels
        floor = busy_floor(view.threshold, scale=scale)
        for one in (s for s in series if s.scale == scale):
            key = workload_gpu_key(one.labels)
            assert key is not None
            in_window = one.points(window)
            after = [value for at, value in in_window if at > window]
            if after:
                real = [value for value in after if not math.isnan(value)]
                peaks.append((key, max(real) / scale if real else math.nan))
            if in_window:
                group = tuple(one.labels.get(name, "") for name in GPU_LABELS.split(", "))
                held_in[group] = (key, [*held_in.get(group, (key, []))[1], len(in_window)])
            recent = window - span.coarse.total_seconds()
            busy = [at for at, value in one.points(recent) if value >= floor]
            if busy:
                last.append((key, float(max(busy))))
        cap = -(-view.window // SLOT)
        for key, counts in held_in.values():
            held.append((key, float(sum(min(c, cap) for c in counts) + SERIES * len(counts))))
        found.append((peaks, held, last))
    return found


def nan_answer(series: list[Series], span: QueryWindow) -> list[list[tuple[object, float]]]:
    since = END - span.window.total_seconds()
    return [
        [
            (
                workload_gpu_key(one.labels),
                math.nan if any(math.isnan(v) for _, v in one.points(since)) else 1.0,
            )
            for one in series
            if one.scale == scale and one.points(since)
        ]
        for scale in SCALES
    ]


@settings(max_examples=150, deadline=None)
@given(fleets())
def test_the_summaries_and_the_per_slot_read_judge_every_gpu_alike(
    case: tuple[list[UsageView], list[Series], float],
) -> None:
    views, series, before_end = case
    span = QueryWindow.for_views(views, slot=SLOT, lookback=timedelta(hours=1))
    now = datetime.fromtimestamp(END - before_end, UTC)
    newest: list[Row] = [(one.labels, END - 10.0) for one in series[:1]]
    every_slot = FleetAnswers.of(slots=[one.columns() for one in series], busy=[], newest=newest)
    found = summarised(
        nan=nan_answer(series, span),  # type: ignore[arg-type]
        views={view: answer(series, view, span) for view in views},
        slot=SLOT,
    )
    detail = [one.columns() for one in series if workload_gpu_key(one.labels) in found.detail]
    summaries = FleetAnswers.of(slots=detail, busy=[], newest=newest, summaries=found.views)
    for view in views:
        expected = usage_of_view(every_slot, view, span=span, now=now)
        assert usage_of_view(summaries, view, span=span, now=now) == expected
