"""The demo's evidence signals: what the live evidence read gives, from the simulated samples.

Re-stated from the Prometheus adapter (the simulation never imports it), slot by slot over
the read's reach (the longest window and one coarse step, at multiples of the slot, both
ends included, as a `[reach:slot]` subquery evaluates), in dcgm-exporter's units, for every
device signal of `SIGNALS` by its row:

- its `SlotForm`: growth is the newest sample at the slot's end minus the newest a slot
  earlier (`M - M offset slot`, each within the 5-minute lookback delta); mean is the slot's
  mean (`avg_over_time(M[slot])`);
- its bar, the settings field its row names (`minRiseMib`, `minBytesPerSecond`); a signal over
  a baseline (power) at or above the model's baseline plus its margin (`marginWatts`). The
  baseline is the configured one, else (when learned) the `baselineQuantile` quantile, per
  model, of the window's mean draw of the GPUs whose utilization stayed at or below the
  lowest threshold the whole window; a model with neither gives no power evidence.

A NaN in a slot makes its mean NaN, which reaches no bar. Each GPU with activity gets one
sighting per signal: from its earliest to its latest active slot. The fresh check asks the
slot ending now, power against the last read's baselines. Ray is not simulated: the demo's
clusters export no Ray metrics.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

from autoscaler.domain.usage.evidence import (
    DEVICE_SIGNALS,
    FleetEvidence,
    Sighting,
    Signal,
    SlotForm,
    detail,
    quantile,
)
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.evidence import EvidenceSettings
from autoscaler.sim.holdings import GpuHolding

COARSE_STEP = 15 * 60  # seconds: the live read's reach is the window and one coarse step


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
        return [signal for signal in DEVICE_SIGNALS if self._settings.reads(signal)]

    def _sighting(
        self, holding: GpuHolding, signal: Signal, *, steps: Iterable[int], slot: int
    ) -> Sighting | None:
        bar = self._bar(signal)
        if bar is None:
            return None  # power with no baseline for the model: no evidence either way
        active = [
            (step, value)
            for step in steps
            if (value := slot_value(self._samples, holding, signal, step=step, slot=slot))
            is not None
            if value >= bar
        ]
        if not active:
            return None
        values = [value for _, value in active]
        over = timedelta(seconds=slot * len(values))
        baseline = self.baselines.get(self._model) if signal.row.over_baseline else None
        said = detail(signal, values, over=over, baseline=baseline)
        return Sighting(signal, _time(active[-1][0]), _time(active[0][0]), said)

    def _bar(self, signal: Signal) -> float | None:
        bar = self._settings.bar(signal)
        if not signal.row.over_baseline:
            return bar
        baseline = self.baselines.get(self._model)
        return None if baseline is None else baseline + bar

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


def slot_value(
    samples: FieldSamples,
    holding: GpuHolding,
    signal: Signal,
    *,
    step: int,
    slot: int,
    form: SlotForm | None = None,
) -> float | None:
    """The device field's value in the slot ending at `step`, by `form` (default: the
    signal's own)."""
    if (form or signal.row.form) is SlotForm.GROWTH:  # `M - M offset slot`
        now = samples.field_newest(holding, signal, step)
        before = samples.field_newest(holding, signal, step - slot)
        return None if now is None or before is None else now - before
    values = samples.field_values(holding, signal, step - slot, step)
    return sum(values) / len(values) if values else None  # `avg_over_time(M[slot])`


def _time(second: int) -> datetime:
    return datetime.fromtimestamp(second, tz=UTC)
