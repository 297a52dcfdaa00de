"""Power over the model's idle draw as evidence: the baseline learned in PromQL, then one
fleet-wide query with each model's bar inlined.

DCGM_FI_DEV_POWER_USAGE is a gauge of the board's draw in watts (dcgm-exporter
etc/default-counters.csv). On a MIG board dcgm-exporter repeats the whole board's draw on
every GPU instance's series (dcgm-exporter issue #257, "attributing GPU power among MIG
instances"), so power is device-level: never evidence for one instance or one sharer.

The idle draw differs by model (an A100 idles near 60 W, an L4 near 15 W), so each cycle
learns it per `modelName`: the `baselineQuantile` quantile of the window's mean draw of the
GPUs whose compute (the utilization signals, read as the SLOTS query reads them) stayed at
or below the lowest view threshold over the longest window. `baselines` in config override
per model; a model with neither gives no power evidence (absence, not failure).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from autoscaler.adapters.prometheus.device_evidence import (
    Filtered,
    above,
    device_matrix,
    reach_matrix,
    sightings,
    slot_expression,
)
from autoscaler.adapters.prometheus.evidence_base import Ask
from autoscaler.adapters.prometheus.promql import (
    QueryWindow,
    parse_vector,
    selector,
)
from autoscaler.domain.usage.evidence import FleetEvidence, Signal, detail
from autoscaler.settings.evidence import PowerSettings
from autoscaler.settings.prometheus import SignalSettings

MODEL = "modelName"


@dataclass
class PowerEvidenceReader:
    """Power against each model's baseline plus a margin. Keeps the baselines of its last
    read for the fresh check, which has no cycle of its own to learn them in."""

    settings: PowerSettings
    compute: Sequence[SignalSettings]  # `prometheus.signals`: what "compute idle" means
    signal: Signal = Signal.POWER
    baselines: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.baselines = dict(self.settings.baselines)  # the fresh check may come first

    def read(self, ask: Ask, *, span: QueryWindow, now: datetime) -> FleetEvidence:
        # A failed read leaves only the configured baselines behind for the fresh check.
        self.baselines = dict(self.settings.baselines)
        learned = self._learned(ask, span=span, now=now) if self.settings.learn_baseline else {}
        baselines = learned | dict(self.settings.baselines)
        self.baselines = baselines
        if not baselines:
            return FleetEvidence()
        filtered = self._filtered(slot=span.slot, closed_ranges=span.closed_ranges)
        query = device_matrix(filtered, span=span, extra=(MODEL,))
        series = reach_matrix(ask, query, span=span, now=now)
        found = sightings(series, self.signal, slot=span.slot, baseline_of=self._baseline)
        return FleetEvidence(gpus=found, power_baselines=baselines)

    def baseline_query(self, span: QueryWindow) -> str:
        """One series per model: the quantile of the mean draw of its compute-idle GPUs."""
        window = span.range(span.window)  # (E - W, E], as the views read the window
        compute = " or ".join(
            f"label_replace(max_over_time({selector(signal)}[{window}]) / "
            f'{float(signal.scale)!r}, "signal", "{signal.metric}", "", "")'
            for signal in self.compute
        )
        idle = f"max by (UUID) ({compute}) <= {float(span.threshold)!r}"
        draw = f"max by (UUID, {MODEL}) (avg_over_time({self.settings.metric}[{window}]))"
        quantile = float(self.settings.baseline_quantile)
        return f"quantile by ({MODEL}) ({quantile!r}, {draw} and on (UUID) ({idle}))"

    def fresh_expression(
        self, matchers: tuple[str, ...], *, slot: timedelta, closed_ranges: bool = False
    ) -> str | None:
        if not self.baselines:
            return None
        return self._filtered(slot=slot, closed_ranges=closed_ranges)(matchers)

    def fresh_detail(self, value: float, *, slot: timedelta, labels: Mapping[str, str]) -> str:
        return detail(self.signal, [value], over=slot, baseline=self._baseline(labels))

    def _learned(self, ask: Ask, *, span: QueryWindow, now: datetime) -> dict[str, float]:
        rows = parse_vector(ask(self.baseline_query(span), now))
        return {
            labels[MODEL]: value
            for labels, value in rows
            if labels.get(MODEL) and math.isfinite(value)
        }

    def _filtered(self, *, slot: timedelta, closed_ranges: bool) -> Filtered:
        margin = self.settings.margin_watts

        def expression(matchers: tuple[str, ...]) -> str:
            return " or ".join(
                above(
                    slot_expression(
                        self.signal,
                        self.settings.metric,
                        (_model(model), *matchers),
                        slot=slot,
                        closed_ranges=closed_ranges,
                    ),
                    baseline + margin,
                )
                for model, baseline in sorted(self.baselines.items())
            )

        return expression

    def _baseline(self, labels: Mapping[str, str]) -> float | None:
        return self.baselines.get(labels.get(MODEL, ""))


def _model(name: str) -> str:
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'{MODEL}="{escaped}"'
