"""The evidence signals' range queries, one per enabled device signal and chunk (ISSUE 16).

Each query is the live read's own per-slot expression (`SLOT_EXPRESSIONS` of the Prometheus
adapter), evaluated at every slot of the chunk, so the backtest sees the slots the live service
would have seen: framebuffer growth over the slot, and the slot's mean power and receive rates.
A slot counts as activity when it reaches the signal's bar, as in the live read:
- framebuffer: grew by at least `minRiseMib`;
- PCIe / NVLink receive: averaged at least `minBytesPerSecond`;
- power: drew at least the model's idle baseline plus `marginWatts`. The baseline is the one
  set in `baselines`, else the one learned from the chunk itself (see `baselines.py`): no
  query beyond the signal's own, so each enabled signal adds exactly one query per chunk.

Ray's metrics are read per pod by the live service only (the backtest follows GPU series).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from autoscaler.adapters.prometheus.evidence_base import DEVICE_LEVEL, SLOT_EXPRESSIONS
from autoscaler.adapters.prometheus.promql import duration
from autoscaler.backtest.matrix import RangeAnswer
from autoscaler.domain.usage.evidence import Signal
from autoscaler.settings.evidence import EvidenceSettings

MIB = 1.0
GIB = 1024.0  # MiB


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
        return self.signal in DEVICE_LEVEL


@dataclass(frozen=True)
class EvidenceAnswer:
    """One evidence query's answer over one chunk, or why it failed (its workloads are then
    unknown wherever the chunk lies in their reach)."""

    query: EvidenceQuery
    reply: RangeAnswer | None
    failure: str | None = None


def evidence_queries(settings: EvidenceSettings, *, slot: timedelta) -> tuple[EvidenceQuery, ...]:
    """The enabled device signals' queries, in a fixed order (framebuffer, PCIe, NVLink,
    power)."""
    every = duration(slot)
    framebuffer, pcie, nvlink, power = (
        settings.framebuffer,
        settings.pcie,
        settings.nvlink,
        settings.power,
    )
    wanted = (
        (Signal.FRAMEBUFFER, framebuffer.enabled, framebuffer.metric, framebuffer.min_rise_mib),
        (Signal.PCIE, pcie.enabled, pcie.metric, pcie.min_bytes_per_second),
        (Signal.NVLINK, nvlink.enabled, nvlink.metric, nvlink.min_bytes_per_second),
        (Signal.POWER, power.enabled, power.metric, power.margin_watts),
    )
    return tuple(
        EvidenceQuery(signal, SLOT_EXPRESSIONS[signal].format(selector=metric, slot=every), bar)
        for signal, enabled, metric, bar in wanted
        if enabled
    )


def power_bar(settings: EvidenceSettings) -> PowerBar:
    power = settings.power
    return PowerBar(
        margin_watts=power.margin_watts,
        baselines=dict(power.baselines),
        learn=power.learn_baseline,
        quantile=power.baseline_quantile,
    )


def detail(signal: Signal, values: list[float], *, baseline: float | None = None) -> str:
    """One line for people about the active slots' values in the reach."""
    if signal is Signal.FRAMEBUFFER:
        return f"framebuffer rose {sum(values) / GIB:.1f} GiB"
    if signal is Signal.POWER:
        return f"power {max(values):.0f} W > baseline {baseline or 0.0:.0f} W"
    name = "PCIe" if signal is Signal.PCIE else "NVLink"
    return f"{name} receive {max(values) / 1e6:.0f} MB/s"
