"""Device signals read against one fixed bar (framebuffer growth, PCIe / NVLink receive, and
any device signal of `SIGNALS` without a reader of its own): one fleet-wide query per signal.

Each query is an instant query holding a subquery over the read's reach (`span.evidence_reach` at
`span.slot`, evaluated at `slots_end`, like the SLOTS query), of the signal's per-slot
expression kept only where it reaches its bar. An idle fleet answers with almost nothing,
and a GPU whose series are missing answers nothing at all: no evidence either way.

Series shapes, from dcgm-exporter's own counter lists:

- DCGM_FI_DEV_FB_USED is a gauge of framebuffer used in MiB (dcgm-exporter
  etc/default-counters.csv). On a MIG board it is exported per GPU instance, each series
  carrying GPU_I_ID (dcgm-exporter issue #317 prints the FB gauges once per GPU_I_ID with the
  instance's own value), so it is read and keyed per instance, never device-level. Some
  drivers do not export it for MIG instances at all (dcgm-exporter issue #512): absence is no
  evidence.
- DCGM_FI_PROF_PCIE_RX_BYTES / DCGM_FI_PROF_NVLINK_RX_BYTES are gauges of the receive rate in
  bytes per second (dcgm-exporter etc/dcp-metrics-included.csv). They are one value for the
  board, hence device-level (their rows' `device_level`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

from autoscaler.adapters.prometheus.evidence_base import Ask, slot_promql
from autoscaler.adapters.prometheus.promql import (
    RAW_STYLES,
    Points,
    QueryWindow,
    after_reach_start,
    duration,
    parse_matrix,
    reach_start,
    workload_gpu_key,
)
from autoscaler.adapters.prometheus.views import slots_end
from autoscaler.domain.usage.evidence import FleetEvidence, Sighting, Signal, detail
from autoscaler.domain.usage.gpus import GpuKey

# Builds the signal's filtered per-slot expression for a selector with these matchers.
Filtered = Callable[[tuple[str, ...]], str]
# The idle baseline a series' sighting is worded with (power: its model's), None without one.
BaselineOf = Callable[[Mapping[str, str]], float | None]


@runtime_checkable
class FreshProbe(Protocol):
    """A device signal the fresh check also asks about, in its one query."""

    signal: Signal

    def fresh_expression(
        self, matchers: tuple[str, ...], *, slot: timedelta, closed_ranges: bool = False
    ) -> str | None:
        """The signal over the slot ending now, kept where it reaches its bar; None when
        there is nothing to ask (power without a baseline)."""
        ...

    def fresh_detail(self, value: float, *, slot: timedelta, labels: Mapping[str, str]) -> str:
        """The detail of one such value."""
        ...


@dataclass  # not frozen: `EvidenceReader.signal` is a plain attribute
class DeviceEvidenceReader:
    """One device signal read against one fixed bar (framebuffer rise, receive rate)."""

    signal: Signal
    metric: str
    bar: float  # in the per-slot expression's unit: MiB per slot, bytes per second

    def read(self, ask: Ask, *, span: QueryWindow, now: datetime) -> FleetEvidence:
        filtered = self.filtered(slot=span.slot, closed_ranges=span.closed_ranges)
        query = device_matrix(filtered, span=span)
        series = reach_matrix(ask, query, span=span, now=now)
        return FleetEvidence(gpus=sightings(series, self.signal, slot=span.slot))

    def filtered(self, *, slot: timedelta, closed_ranges: bool = False) -> Filtered:
        def expression(matchers: tuple[str, ...]) -> str:
            slotted = slot_expression(
                self.signal, self.metric, matchers, slot=slot, closed_ranges=closed_ranges
            )
            return above(slotted, self.bar)

        return expression

    def fresh_expression(
        self, matchers: tuple[str, ...], *, slot: timedelta, closed_ranges: bool = False
    ) -> str | None:
        return self.filtered(slot=slot, closed_ranges=closed_ranges)(matchers)

    def fresh_detail(self, value: float, *, slot: timedelta, labels: Mapping[str, str]) -> str:
        return detail(self.signal, [value], over=slot)


def slot_expression(
    signal: Signal,
    metric: str,
    matchers: tuple[str, ...],
    *,
    slot: timedelta,
    closed_ranges: bool = False,
) -> str:
    selector = f"{metric}{{{','.join(matchers)}}}" if matchers else metric
    return slot_promql(signal, selector, slot=slot, closed_ranges=closed_ranges)


def above(expression: str, bar: float) -> str:
    """Kept where it reaches `bar` (a NaN never does)."""
    return f"({expression}) >= {float(bar)!r}"


def device_matrix(filtered: Filtered, *, span: QueryWindow, extra: tuple[str, ...] = ()) -> str:
    """Both label styles merged per GPU at every slot of the reach, each by its own raw
    labels (as the SLOTS query does: a label_replace inside a subquery is slow)."""
    styles = [
        f"max by ({', '.join((*labels, *extra))}) ({filtered((matcher,))})"
        for labels, matcher in RAW_STYLES
    ]
    return f"({' or '.join(styles)})[{duration(span.evidence_reach)}:{duration(span.slot)}]"


def reach_matrix(
    ask: Ask, query: str, *, span: QueryWindow, now: datetime
) -> list[tuple[Mapping[str, str], Points]]:
    """The `device_matrix` answer, evaluated where the slots end, its steps after the reach's
    start only (a step there is in a Prometheus 2.x answer only: `promql.reach_start`)."""
    at = slots_end(now, span.slot)
    start = reach_start(at, span.evidence_reach)
    return [
        (labels, after_reach_start(points, start))
        for labels, points in parse_matrix(ask(query, at))
    ]


def sightings(
    series: Sequence[tuple[Mapping[str, str], Points]],
    signal: Signal,
    *,
    slot: timedelta,
    baseline_of: BaselineOf = lambda _: None,
) -> dict[GpuKey, tuple[Sighting, ...]]:
    """One sighting per GPU: its points of both label styles merged per slot end."""
    points: dict[GpuKey, dict[float, float]] = {}
    labels_of: dict[GpuKey, Mapping[str, str]] = {}
    for labels, found in series:
        key = workload_gpu_key(labels)
        if key is None:
            continue  # a GPU no pod holds: evidence for nobody
        merged = points.setdefault(key, {})
        for at, value in found:
            if math.isfinite(value):
                merged[at] = max(merged.get(at, value), value)
        labels_of[key] = labels
    found_for: dict[GpuKey, tuple[Sighting, ...]] = {}
    for key, by_time in points.items():
        if by_time:
            ends = sorted(by_time)
            values = [by_time[at] for at in ends]
            baseline = baseline_of(labels_of[key])
            said = detail(signal, values, over=slot * len(values), baseline=baseline)
            found_for[key] = (Sighting(signal, _time(ends[-1]), _time(ends[0]), said),)
    return found_for


def _time(unix_seconds: float) -> datetime:
    return datetime.fromtimestamp(unix_seconds, UTC)
