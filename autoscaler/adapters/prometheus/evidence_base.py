"""What every evidence reader shares: the PromQL of each slot form, the shape of a reader,
and how their answers merge (ISSUE 16).

A reader sends its own queries through `Ask` (one per signal; the learned power baseline one
more) and returns its part of the cycle's `FleetEvidence`; the metric source merges the parts.
A reader whose query fails raises, and the source records that signal as failed (its
workloads unknown) while the other signals still count.

A device signal's per-slot expression is its `SlotForm`'s (its row in
`autoscaler.domain.usage.evidence.SIGNALS`), the live read's, the backtest's and the recorded
demo history's alike, in the units dcgm-exporter publishes (see the dcgm-exporter default
counters CSV):

- growth (framebuffer, DCGM_FI_DEV_FB_USED, MiB): the newest sample minus the newest one a
  slot earlier;
- mean (power, DCGM_FI_DEV_POWER_USAGE, W, compared with the model's baseline; PCIe / NVLink
  receive, DCGM_FI_PROF_PCIE_RX_BYTES, DCGM_FI_PROF_NVLINK_RX_BYTES, bytes/s): the slot's mean.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from autoscaler.adapters.prometheus.promql import QueryWindow, duration, with_ranges
from autoscaler.domain.usage.evidence import FleetEvidence, Sighting, Signal, SlotForm
from autoscaler.domain.usage.gpus import GpuKey

# "{selector}" is the metric with its matchers, "{slot}" the slot as a PromQL duration; the
# range `[{slot}]` holds the samples of (t - slot, t] on any server (`promql.with_ranges`).
SLOT_PROMQL: Mapping[SlotForm, str] = {
    SlotForm.GROWTH: "({selector} - {selector} offset {slot})",
    SlotForm.MEAN: "avg_over_time({selector}[{slot}])",
}


def slot_promql(
    signal: Signal, selector: str, *, slot: timedelta, closed_ranges: bool = False
) -> str:
    """The device signal's value in the slot ending at each step; `closed_ranges`: the
    server keeps a sample at a range's start (Prometheus 2.x)."""
    form = signal.row.form
    if form is None:
        raise ValueError(f"{signal} is not a device signal")
    template = with_ranges(SLOT_PROMQL[form], {"slot": slot}, closed=closed_ranges)
    return template.format(selector=selector, slot=duration(slot))


# Sends one instant query evaluated at the given time; returns `data.result`. Raises what the
# HTTP exchange raises (the source translates it).
Ask = Callable[[str, datetime], Sequence[Mapping[str, Any]]]


class EvidenceReader(Protocol):
    """One evidence signal (or Ray's), read fleet-wide."""

    signal: Signal

    def read(self, ask: Ask, *, span: QueryWindow, now: datetime) -> FleetEvidence:
        """This signal's part of the cycle's evidence over the read's reach (`span.recent`
        back from `now`, slot by slot); raises when a query fails."""
        ...


def merged(parts: Iterable[FleetEvidence]) -> FleetEvidence:
    """The parts of several readers as one; each reader speaks of its own signal only."""
    gpus: dict[GpuKey, tuple[Sighting, ...]] = {}
    pods: dict[tuple[str, str], tuple[Sighting, ...]] = {}
    notes: dict[tuple[str, str], tuple[str, ...]] = {}
    failures: dict[Signal, str] = {}
    baselines: dict[str, float] = {}
    for part in parts:
        for key, found in part.gpus.items():
            gpus[key] = gpus.get(key, ()) + found
        for pod, found in part.pods.items():
            pods[pod] = pods.get(pod, ()) + found
        for pod, said in part.notes.items():
            notes[pod] = notes.get(pod, ()) + said
        failures.update(part.failures)
        baselines.update(part.power_baselines)
    return FleetEvidence(gpus, pods, notes, failures, baselines)
