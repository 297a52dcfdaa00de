"""The per-series summary formulation of the raw fleet read, measured in `fleet_read.py` beside
the read (issue 18; benchmarks/README.md, "Summaries instead of the slot matrix"). It was
built as the read on branch summary-read (commit 0fb6e96 and after, then reverted: on this
machine it cost the server more than the slot matrix costs the client); these are its
queries, for one view (window W, threshold T) and signal, evaluated at a slot end E:

- NaN check: `sum by` the GPU labels of `sum_over_time` over the slots HELD counts (NaN
  when any sample is: a slot of only NaN is never coverage);
- PEAK: `max by` the GPU labels of `max_over_time(sel[ceil(W / slot)·slot])`;
- HELD: per series the slots holding a sample over `[W:slot]`, capped at full coverage and
  summed by the GPU labels with 2^20 per series (how many series, and whether each is full);
- LAST: the latest slot end whose peak is at least the smallest float v with v / scale > T
  (so the comparison is Python's to the last bit), `max by` the GPU labels.
"""

from __future__ import annotations

import math
from datetime import timedelta

from autoscaler.adapters.prometheus.promql import RAW_STYLES, duration, selector
from autoscaler.domain.models import UsageView
from autoscaler.settings.tree import SignalSettings

GPU_LABELS = ", ".join(dict.fromkeys(label for labels, _ in RAW_STYLES for label in labels))
SERIES = 2**20  # per series in a HELD sum, above any capped count of slots


def busy_floor(threshold: float, *, scale: float) -> float:
    """The smallest float v with `v / scale > threshold` (division by a positive scale is
    monotone, so `v >= floor` holds exactly when Python's comparison does)."""
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
    cap = -(-view.window // slot)
    return (
        f"max by ({GPU_LABELS}) (max_over_time({sel}[{duration(cap * slot)}]))",
        f"sum by ({GPU_LABELS}) (clamp_max(count_over_time(({slot_peak})"
        f"[{duration(view.window)}:{step}]), {cap}) + {SERIES})",
        f"max by ({GPU_LABELS}) (max_over_time(timestamp({slot_peak} >= {floor})"
        f"[{duration(view.window + coarse)}:{step}]))",
    )


def nan_query(signal: SignalSettings, *, window: timedelta, slot: timedelta) -> str:
    """NaN for a GPU with a NaN sample in the slots HELD counts over `window`."""
    held_reach = (window // slot + 1) * slot
    return f"sum by ({GPU_LABELS}) (sum_over_time({selector(signal)}[{duration(held_reach)}]))"
