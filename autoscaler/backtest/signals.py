"""The evidence signals' range queries, one per enabled device signal and chunk (ISSUE 16).

Each query is the live read's own per-slot expression (`slot_promql` of the Prometheus
adapter, by the signal's `SlotForm`), evaluated at every slot of the chunk, so the backtest
sees the slots the live service would have seen: framebuffer growth over the slot, and the
slot's mean power and receive rates. A slot counts as activity when it reaches the signal's
bar (the settings field its row in `SIGNALS` names), as in the live read:
- framebuffer: grew by at least `minRiseMib`;
- PCIe / NVLink receive: averaged at least `minBytesPerSecond`;
- power (over a baseline): drew at least the model's idle baseline plus `marginWatts`. The
  baseline is the one set in `baselines`, else the one learned from the chunk itself (see
  `baselines.py`): no query beyond the signal's own, so each enabled signal adds exactly one
  query per chunk.

Ray's metrics are read per pod by the live service only (the backtest follows GPU series).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from autoscaler.adapters.prometheus.evidence_base import slot_promql
from autoscaler.backtest.matrix import RangeAnswer
from autoscaler.domain.usage.evidence import DEVICE_SIGNALS, Signal
from autoscaler.settings.evidence import EvidenceSettings


@dataclass(frozen=True)
class PowerBar:
    """How power is judged: over the model's baseline by a margin; baselines set or learned."""

    margin_watts: float
    baselines: Mapping[str, float] = field(default_factory=dict)  # set: win over learned ones
    learn: bool = True
    quantile: float = 0.1


@dataclass(frozen=True)
class EvidenceQuery:
    signal: Signal
    promql: str
    bar: float  # framebuffer: MiB risen in the slot; rates: bytes/s; power: the margin, W

    @property
    def device_level(self) -> bool:
        return self.signal.device_level


@dataclass(frozen=True)
class EvidenceAnswer:
    """One evidence query's answer over one chunk, or why it failed (its workloads are then
    unknown wherever the chunk lies in their reach)."""

    query: EvidenceQuery
    reply: RangeAnswer | None
    failure: str | None = None


def evidence_queries(
    settings: EvidenceSettings, *, slot: timedelta, closed_ranges: bool = False
) -> tuple[EvidenceQuery, ...]:
    """The enabled device signals' queries, in the table's order with the signals over a
    baseline last (framebuffer, PCIe, NVLink, power), the order the backtest has always
    sent them in."""
    ordered = sorted(DEVICE_SIGNALS, key=lambda signal: signal.row.over_baseline)
    return tuple(
        EvidenceQuery(
            signal,
            slot_promql(
                signal, settings.device(signal).metric, slot=slot, closed_ranges=closed_ranges
            ),
            bar=settings.bar(signal),
        )
        for signal in ordered
        if settings.reads(signal)
    )


def power_bar(settings: EvidenceSettings) -> PowerBar:
    power = settings.power
    return PowerBar(
        margin_watts=power.margin_watts,
        baselines=dict(power.baselines),
        learn=power.learn_baseline,
        quantile=power.baseline_quantile,
    )
