"""The demo's evidence signals: what the live evidence read gives, from the simulated samples.

Re-stated from the Prometheus adapter (the simulation never imports it), slot by slot over
the read's reach (the longest window and one coarse step, at multiples of the slot, both
ends included, as a `[reach:slot]` subquery evaluates), in dcgm-exporter's units:

- framebuffer (MiB): the newest sample at the slot's end minus the newest a slot earlier
  (`M - M offset slot`, each within the 5-minute lookback delta); a rise of at least
  `minRiseMib` is activity;
- PCIe / NVLink receive (bytes/s): the slot's mean (`avg_over_time(M[slot])`) at or above
  `minBytesPerSecond`;
- power (W): the slot's mean at or above the model's baseline plus `marginWatts`. The
  baseline is the configured one, else (when learned) the `baselineQuantile` quantile, per
  model, of the window's mean draw of the GPUs whose utilization stayed at or below the
  lowest threshold the whole window; a model with neither gives no power evidence.

A NaN in a slot makes its mean NaN, which reaches no bar. Each GPU with activity gets one
sighting per signal: from its earliest to its latest active slot. Power, PCIe and NVLink are
device-level. The fresh check asks the slot ending now, power against the last read's
baselines. Ray is not simulated: the demo's clusters export no Ray metrics.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from autoscaler.domain.usage.evidence import (
    FleetEvidence,
    Sighting,
    Signal,
    framebuffer_growth,
    power_draw,
    quantile,
    receiving,
)
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.evidence import EvidenceSettings
from autoscaler.sim.holdings import GpuHolding

COARSE_STEP = 15 * 60  # seconds: the live read's reach is the window and one coarse step
DEVICE_SIGNALS = (Signal.FRAMEBUFFER, Signal.POWER, Signal.PCIE, Signal.NVLINK)
DEVICE_LEVEL = frozenset({Signal.POWER, Signal.PCIE, Signal.NVLINK})


class FieldSamples(Protocol):
    """The exporter's samples, as Prometheus would hold them."""

    def field_values(self, holding: GpuHolding, signal: Signal, low: int, high: int) -> list[float]:
        """The field's samples at scrape times in [low, high], NaN kept."""
        ...

    def field_newest(self, holding: GpuHolding, signal: Signal, at: int) -> float | None:
        """The field's newest sample within the lookback delta before `at`, NaN kept."""
        ...

    def compute_peak(self, holding: GpuHolding, low: int, high: int) -> float | None:
        """The highest real utilization ratio in [low, high]; None without one."""
        ...


@dataclass(frozen=True)
class Reach:
    """One read: its end, the longest window, the lowest threshold, the slot (seconds)."""

    at: int
    window: int
    threshold: float
    slot: int
    loading: int = 0  # the longest maxLoading: the reach covers it too

    @property
    def steps(self) -> range:
        low = self.at - max(self.window, self.loading) - max(self.slot, COARSE_STEP)
        first = -(-low // self.slot) * self.slot
        return range(first, self.at + 1, self.slot)


class SimulatedEvidence:
    """The fleet's evidence from the exporter's samples, with the bars of the settings."""

    def __init__(self, samples: FieldSamples, *, settings: EvidenceSettings, model: str) -> None:
        self._samples = samples
        self._settings = settings
        self._model = model  # every simulated GPU is of this dcgm-exporter modelName
        self.baselines: dict[str, float] = {}  # the last read's, for the fresh check

    def read(self, holdings: Sequence[GpuHolding], *, reach: Reach) -> FleetEvidence:
        self.baselines = self._learned(holdings, reach) | dict(self._settings.power.baselines)
        gpus: dict[GpuKey, tuple[Sighting, ...]] = {}
        for signal in self._enabled():
            for holding in holdings:
                found = self._sighting(holding, signal, steps=reach.steps, slot=reach.slot)
                if found is not None:
                    gpus[holding.key] = (*gpus.get(holding.key, ()), found)
        return FleetEvidence(gpus=gpus, power_baselines=dict(self.baselines))

    def latest(self, holdings: Sequence[GpuHolding], *, at: int, slot: int) -> FleetEvidence:
        """The slot ending `at` only: the fresh check's newest evidence."""
        gpus: dict[GpuKey, tuple[Sighting, ...]] = {}
        for signal in self._enabled():
            for holding in holdings:
                found = self._sighting(holding, signal, steps=(at,), slot=slot)
                if found is not None:
                    gpus[holding.key] = (*gpus.get(holding.key, ()), found)
        return FleetEvidence(gpus=gpus, power_baselines=dict(self.baselines))

    def _enabled(self) -> list[Signal]:
        evidence = self._settings
        on = {
            Signal.FRAMEBUFFER: evidence.framebuffer.enabled,
            Signal.POWER: evidence.power.enabled,
            Signal.PCIE: evidence.pcie.enabled,
            Signal.NVLINK: evidence.nvlink.enabled,
        }
        return [signal for signal in DEVICE_SIGNALS if on[signal]]

    def _sighting(
        self, holding: GpuHolding, signal: Signal, *, steps: Iterable[int], slot: int
    ) -> Sighting | None:
        bar = self._bar(signal)
        if bar is None:
            return None  # power with no baseline for the model: no evidence either way
        active = [
            (step, value)
            for step in steps
            if (value := self._slot_value(holding, signal, step, slot)) is not None
            if value >= bar
        ]
        if not active:
            return None
        return Sighting(
            signal,
            last_at=_time(active[-1][0]),
            first_at=_time(active[0][0]),
            detail=self._detail(signal, [value for _, value in active], slot=slot),
            device_level=signal in DEVICE_LEVEL,
        )

    def _bar(self, signal: Signal) -> float | None:
        evidence = self._settings
        if signal is Signal.FRAMEBUFFER:
            return evidence.framebuffer.min_rise_mib
        if signal is Signal.POWER:
            baseline = self.baselines.get(self._model)
            return None if baseline is None else baseline + evidence.power.margin_watts
        transfer = evidence.pcie if signal is Signal.PCIE else evidence.nvlink
        return transfer.min_bytes_per_second

    def _slot_value(
        self, holding: GpuHolding, signal: Signal, step: int, slot: int
    ) -> float | None:
        if signal is Signal.FRAMEBUFFER:  # `M - M offset slot`
            now = self._samples.field_newest(holding, signal, step)
            before = self._samples.field_newest(holding, signal, step - slot)
            return None if now is None or before is None else now - before
        values = self._samples.field_values(holding, signal, step - slot, step)
        return sum(values) / len(values) if values else None  # `avg_over_time(M[slot])`

    def _detail(self, signal: Signal, values: Sequence[float], *, slot: int) -> str:
        if signal is Signal.FRAMEBUFFER:
            return framebuffer_growth(sum(values), over=timedelta(seconds=slot * len(values)))
        if signal is Signal.POWER:
            return power_draw(values[-1], baseline=self.baselines[self._model])
        return receiving("PCIe" if signal is Signal.PCIE else "NVLink", values[-1])

    def _learned(self, holdings: Sequence[GpuHolding], reach: Reach) -> dict[str, float]:
        power = self._settings.power
        if not (power.enabled and power.learn_baseline):
            return {}
        low = reach.at - reach.window
        draws = []
        for holding in holdings:
            peak = self._samples.compute_peak(holding, low, reach.at)
            if peak is None or peak > reach.threshold:
                continue  # busy (or unseen) at some point of the window
            values = self._samples.field_values(holding, Signal.POWER, low, reach.at)
            if values:
                draws.append(sum(values) / len(values))
        return {} if not draws else {self._model: quantile(power.baseline_quantile, draws)}


def _time(second: int) -> datetime:
    return datetime.fromtimestamp(second, tz=UTC)
