"""The demo's dcgm-exporter and Prometheus in one: the `MetricSource` port over scripted profiles.

Every GPU a pod holds is "scraped" every `scrape` seconds while the pod runs, its value taken
from the RayCluster's `Profile`. A read computes what a fleet read of
`autoscaler.adapters.prometheus` gives on a Prometheus 2.x server at a `now` on a slot boundary
(in between, the adapter's slots end at `now` rounded up to a slot), from the same samples:
- peak: the highest sample in [now - window, now] (NaN only when every sample is NaN);
- coverage: the steps of a `[window:slot]` subquery (multiples of the slot, from now - window
  to now, both ends included) whose `[slot]` range holds a real sample, over window / slot;
- last busy: the latest such step whose slot maximum is above the threshold, within the lookback;
- newest: the newest sample within the 5-minute lookback delta, unless that sample is NaN;
- evidence: the device fields' activity slot by slot over the reach (`autoscaler.sim.evidence`),
  shared by every view of the read; the fresh check's, over the slot ending now.
Ranges are closed at both ends as in Prometheus 2.x. Samples are memoized: the past never changes.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from autoscaler.domain.models import FleetUsage, GpuUsage, UsageView
from autoscaler.domain.usage.evidence import NO_EVIDENCE, FleetEvidence, Signal
from autoscaler.domain.usage.fresh import LatestSample, LatestUsage
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.evidence import EvidenceSettings
from autoscaler.sim.evidence import Reach, SimulatedEvidence
from autoscaler.sim.holdings import ExporterTiming, GpuHolding, GpuHoldings
from autoscaler.sim.profiles import Profile

__all__ = ["GPU_MODEL", "ExporterTiming", "GpuHolding", "GpuHoldings", "SimulatedExporter"]

GPU_MODEL = "NVIDIA A100-SXM4-80GB"
LOOKBACK_DELTA = 300  # seconds an instant selector looks back (Prometheus' default)


class SimulatedExporter:
    def __init__(
        self,
        *,
        holdings: GpuHoldings,
        profiles: Mapping[tuple[str, str], Profile],
        origin: datetime,
        timing: ExporterTiming | None = None,
        evidence: EvidenceSettings | None = None,
    ) -> None:
        """`evidence`: `prometheus.evidence`, the bars the evidence is read with."""
        self._holdings = holdings
        self._profiles = profiles
        self._origin = origin.timestamp()
        self._timing = timing or ExporterTiming()
        self._evidence = SimulatedEvidence(
            self, settings=evidence or EvidenceSettings(), model=GPU_MODEL
        )
        self._samples: dict[tuple[GpuKey, Signal | None, int], float | None] = {}
        self._slots: dict[tuple[GpuKey, int], float | None] = {}
        self.reads = 0

    def read_views(
        self, views: Collection[UsageView], *, now: datetime
    ) -> dict[UsageView, FleetUsage]:
        """One read for every view, the cycle's evidence shared by them all."""
        if not views:
            return {}
        window = max(view.window for view in views)
        evidence = self.read_evidence(
            window=window, threshold=min(v.threshold for v in views), now=now
        )
        return {
            v: self._read(window=v.window, threshold=v.threshold, now=now, evidence=evidence)
            for v in views
        }

    def read_evidence(self, *, window: timedelta, threshold: float, now: datetime) -> FleetEvidence:
        """The evidence signals over the reach of a read with this window and threshold."""
        at = int(now.timestamp())
        timing = self._timing
        reach = Reach(at, int(window.total_seconds()), threshold, timing.slot, timing.loading)
        return self._evidence.read(list(self._visible(at)), reach=reach)

    def _read(
        self, *, window: timedelta, threshold: float, now: datetime, evidence: FleetEvidence
    ) -> FleetUsage:
        self.reads += 1
        at = int(now.timestamp())
        span = int(window.total_seconds())
        gpus: dict[tuple[str, str], list[GpuUsage]] = {}
        for holding in self._visible(at):
            usage = self._usage(holding, at=at, span=span, threshold=threshold)
            if usage is not None:
                gpus.setdefault((usage.key.namespace, usage.key.pod), []).append(usage)
        found = {k: tuple(v) for k, v in gpus.items()}
        return FleetUsage(window, threshold, evaluated_at=now, gpus=found, evidence=evidence)

    def read_latest(self, pods: Sequence[tuple[str, str]], *, now: datetime) -> LatestUsage:
        """The fresh check's one query: each GPU's newest sample within the lookback delta."""
        at, asked = int(now.timestamp()), set(pods)
        found: dict[tuple[str, str], list[LatestSample]] = {}
        candidates = [h for h in self._visible(at) if (h.key.namespace, h.key.pod) in asked]
        for holding in candidates:
            pod = (holding.key.namespace, holding.key.pod)
            newest = self._newest_any(holding, at)
            if newest is not None:
                second, value = newest
                sample = LatestSample(
                    holding.key, None if math.isnan(value) else value, _time(second)
                )
                found.setdefault(pod, []).append(sample)
        evidence = (
            self._evidence.latest(candidates, at=at, slot=self._timing.slot)
            if candidates
            else NO_EVIDENCE
        )
        samples = {pod: tuple(s) for pod, s in found.items()}
        return LatestUsage(now, samples=samples, evidence=evidence)

    def utilization(self, namespace: str, raycluster: str, now: datetime) -> float | None:
        """The mean of the RayCluster's GPUs' newest samples, as a ratio (the live view's)."""
        at = int(now.timestamp())
        values = [
            newest[1]
            for h in self._visible(at)
            if h.key.namespace == namespace and h.raycluster == raycluster and h.holds_at(at)
            if (newest := self._newest(h, at)) is not None
        ]
        return sum(values) / len(values) if values else None

    def slot_peaks(self, holding: GpuHolding, times: Iterable[int]) -> list[tuple[int, float]]:
        """`max_over_time(metric[slot])` of one GPU at each of `times` whose slot holds a real
        sample, as ratios: the points of a range query (recorded histories)."""
        begun = holding.start.timestamp()
        return [
            (at, peak)
            for at in times
            if at >= begun and (peak := self._slot_peak(holding, at)) is not None
        ]

    def field_values(self, holding: GpuHolding, signal: Signal, low: int, high: int) -> list[float]:
        """A device field's samples at scrape times in [low, high], NaN kept."""
        found = (self._sample(holding, second, signal) for second in self._scrapes(low, high))
        return [value for value in found if value is not None]

    def field_newest(self, holding: GpuHolding, signal: Signal, at: int) -> float | None:
        """A device field's newest sample within the lookback delta, NaN kept."""
        for second in reversed(self._scrapes(at - LOOKBACK_DELTA, at)):
            value = self._sample(holding, second, signal)
            if value is not None:
                return value
        return None

    def compute_peak(self, holding: GpuHolding, low: int, high: int) -> float | None:
        """The highest real utilization ratio in [low, high]."""
        real = [v for v in self._values(holding, low, high) if not math.isnan(v)]
        return max(real) if real else None

    def _visible(self, at: int) -> Iterator[GpuHolding]:
        oldest = at - self._timing.lookback
        for holding in self._holdings.gpu_holdings():
            ended = holding.end is not None and holding.end.timestamp() < oldest
            if not ended and holding.start.timestamp() <= at:
                yield holding

    def _usage(
        self, holding: GpuHolding, *, at: int, span: int, threshold: float
    ) -> GpuUsage | None:
        window = list(self._values(holding, at - span, at))
        newest = self._newest(holding, at)
        last_busy = self._last_busy(holding, at=at, threshold=threshold)
        slots_held = self._covered_slots(holding, at=at, span=span)
        if not window and newest is None and last_busy is None and not slots_held:
            return None  # no query returns this GPU: it does not exist for Prometheus
        real = [v for v in window if not math.isnan(v)]
        return GpuUsage(
            key=holding.key,
            peak=max(real) if real else None,
            coverage=min(1.0, slots_held * self._timing.slot / span),
            last_sample_at=_time(newest[0]) if newest else None,
            last_busy_at=_time(last_busy) if last_busy is not None else None,
            hostname=holding.node if newest else None,
            model=GPU_MODEL if newest else None,
        )

    def _covered_slots(self, holding: GpuHolding, *, at: int, span: int) -> int:
        steps = _steps(at - span, at, self._timing.slot)
        return sum(1 for step in steps if self._slot_peak(holding, step) is not None)

    def _last_busy(self, holding: GpuHolding, *, at: int, threshold: float) -> int | None:
        oldest = max(at - self._timing.lookback, int(holding.start.timestamp()))
        for step in reversed(_steps(oldest, at, self._timing.slot)):
            peak = self._slot_peak(holding, step)
            if peak is not None and peak > threshold:
                return step
        return None

    def _slot_peak(self, holding: GpuHolding, step: int) -> float | None:
        """`max_over_time(metric[slot])` at `step`; None when the slot holds no real sample."""
        memo = (holding.key, step)
        if memo not in self._slots:
            real = [
                v
                for v in self._values(holding, step - self._timing.slot, step)
                if not math.isnan(v)
            ]
            self._slots[memo] = max(real) if real else None
        return self._slots[memo]

    def _newest(self, holding: GpuHolding, at: int) -> tuple[int, float] | None:
        """The newest sample unless it is NaN (`timestamp(x) and x >= 0`)."""
        newest = self._newest_any(holding, at)
        return None if newest is None or math.isnan(newest[1]) else newest

    def _newest_any(self, holding: GpuHolding, at: int) -> tuple[int, float] | None:
        """The newest sample within the lookback delta, NaN included (an instant selector)."""
        for second in reversed(self._scrapes(at - LOOKBACK_DELTA, at)):
            value = self._sample(holding, second)
            if value is not None:
                return second, value
        return None

    def _values(self, holding: GpuHolding, low: int, high: int) -> Iterator[float]:
        """The samples (ratios, NaN kept) at scrape times in [low, high]."""
        for second in self._scrapes(low, high):
            value = self._sample(holding, second)
            if value is not None:
                yield value

    def _scrapes(self, low: int, high: int) -> range:
        scrape, offset = self._timing.scrape, self._timing.offset
        first = -((offset - low) // scrape) * scrape + offset  # first offset + k*scrape >= low
        return range(first, high + 1, scrape)

    def _sample(
        self, holding: GpuHolding, second: int, signal: Signal | None = None
    ) -> float | None:
        """Utilization (a ratio), or with `signal` that device field in its own unit."""
        memo = (holding.key, signal, second)
        if memo not in self._samples:
            self._samples[memo] = self._scripted(holding, second, signal)
        return self._samples[memo]

    def _scripted(self, holding: GpuHolding, second: int, signal: Signal | None) -> float | None:
        if not holding.holds_at(second):
            return None
        profile = self._profiles.get((holding.key.namespace, holding.raycluster))
        if profile is None:
            return None
        minute = (second - self._origin) / 60
        gpu = profile.for_gpu(holding.index)
        if signal is not None:
            return gpu.reading(signal, minute)
        pct = gpu.percent_at(minute)
        return None if pct is None else pct / 100


def _steps(low: int, high: int, step: int) -> range:
    """Multiples of `step` in [low, high], as a subquery evaluates them."""
    first = -(-low // step) * step
    return range(first, high + 1, step)


def _time(second: int) -> datetime:
    return datetime.fromtimestamp(second, tz=UTC)
