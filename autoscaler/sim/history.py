"""A recorded Prometheus for `backtest --demo`: dcgm-exporter's history of the demo's stories,
answered as range queries, with no Prometheus running.

Each story is played on its own simulated cluster, minute by minute from its first arrival to
the end of the history, with nothing deactivated: the history a cluster records while no
autoscaler acts, which is what a backtest replays. Kueue admits what fits, KubeRay's pods hold
GPUs from the nodes, and the simulated exporter samples them from the stories' profiles.

`query_range` answers what the backtest asks (`autoscaler.backtest.source.slot_queries`):
`max_over_time(METRIC{...}[slot])` at each step, one series per GPU, with dcgm-exporter's
labels as a ServiceMonitor scrape writes them (`exported_namespace`, `exported_pod`, `UUID`,
`Hostname`, ...), in the metric's own unit (a percentage for `DCGM_FI_DEV_GPU_UTIL`). A slot
without a real sample is left out, as Prometheus leaves a step without samples.

It also answers the device evidence signals' per-slot forms (the live read's `SLOT_PROMQL`,
with `prometheus.evidence`'s metrics), in dcgm-exporter's units: `(M - M offset <slot>)` for
growth (the framebuffer's, MiB) and `avg_over_time(M[<slot>])` for a mean (power in W, PCIe /
NVLink receive in bytes/s), computed as `autoscaler.sim.evidence` reads the same samples.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from autoscaler.domain.usage.evidence import DEVICE_SIGNALS, Signal, SlotForm
from autoscaler.settings.evidence import EvidenceSettings
from autoscaler.settings.tree import SignalSettings
from autoscaler.sim.clock import SimulatedClock
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.evidence import slot_value
from autoscaler.sim.kueue_model import KueueState
from autoscaler.sim.metrics import GPU_MODEL, ExporterTiming, GpuHolding, SimulatedExporter
from autoscaler.sim.pods import GpuPool, RayClusterSpec
from autoscaler.sim.profiles import Profile
from autoscaler.sim.queue_metrics import METRICS, QueueRecorder

MINUTE = timedelta(minutes=1)
EXPORTER_NAMESPACE = "gpu-operator"
_SLOT_QUERY = re.compile(
    r"^max_over_time\((?P<metric>[A-Za-z_:][\w:]*)(\{[^}]*\})?\[(?P<slot>\w+)\]\)$"
)
# Spaces removed, as `_metric` does: `(M{...} - M{...} offset 60s)`, `avg_over_time(M{...}[60s])`.
_FORMS = {
    SlotForm.GROWTH: re.compile(
        r"^\((?P<metric>[A-Za-z_:][\w:]*)(\{[^}]*\})?-(?P=metric)(\{[^}]*\})?offset(?P<slot>\w+)\)$"
    ),
    SlotForm.MEAN: re.compile(
        r"^avg_over_time\((?P<metric>[A-Za-z_:][\w:]*)(\{[^}]*\})?\[(?P<slot>\w+)\]\)$"
    ),
}


@dataclass(frozen=True)
class RecordedArrival:
    minute: float  # from the story's start; negative: applied before it
    spec: RayClusterSpec
    profile: Profile


@dataclass(frozen=True)
class RecordedStory:
    """A story to record: its Kueue set-up, its GPUs and its RayClusters' arrivals."""

    name: str
    start: datetime
    kueue: KueueState
    gpus: int
    arrivals: tuple[RecordedArrival, ...]

    @property
    def first_arrival(self) -> datetime:
        return self.start + MINUTE * min((a.minute for a in self.arrivals), default=0.0)


@dataclass(frozen=True)
class RecordedSeries:
    labels: dict[str, str]
    values: list[tuple[int, float]]  # [unix time, value] pairs


@dataclass(frozen=True)
class RecordedReply:
    series: tuple[RecordedSeries, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Recording:
    exporter: SimulatedExporter
    holdings: tuple[GpuHolding, ...]
    queues: QueueRecorder


class RecordedHistory:
    """The stories' GPU metrics from the earliest arrival to `end`, for range queries."""

    def __init__(
        self,
        stories: Sequence[RecordedStory],
        *,
        signals: Sequence[SignalSettings],
        slot: timedelta,
        end: datetime,
        evidence: EvidenceSettings | None = None,
    ) -> None:
        """`evidence`: `prometheus.evidence`, naming the device fields' metrics."""
        if not stories:
            raise ValueError("a recorded history needs at least one story")
        self.start = min(story.first_arrival for story in stories)
        self.end = end
        self._scales = {signal.metric: float(signal.scale) for signal in signals}
        fields = evidence or EvidenceSettings()
        self._fields = {fields.device(signal).metric: signal for signal in DEVICE_SIGNALS}
        self._slot = int(slot.total_seconds())
        self._recordings = [self._record(story) for story in stories]

    def query_range(
        self, promql: str, *, start: datetime, end: datetime, step: timedelta
    ) -> RecordedReply:
        times = range(int(start.timestamp()), int(end.timestamp()) + 1, int(step.total_seconds()))
        evidence = self._evidence_form(promql)
        if evidence is not None:
            return self._evidence(*evidence, times=times)
        metric = self._metric(promql)
        if metric in METRICS:  # Kueue's queue metrics, for the reclaim modes
            return RecordedReply(
                series=tuple(
                    RecordedSeries(labels, values)
                    for recording in self._recordings
                    for labels, values in recording.queues.series(metric, times)
                )
            )
        scale = self._scales.get(metric)
        if scale is None:  # an exporter that does not export this field
            return RecordedReply(series=())
        found = []
        for recording in self._recordings:
            for holding in recording.holdings:
                values = recording.exporter.slot_peaks(holding, times)
                if values:
                    pairs = [(at, value * scale) for at, value in values]
                    found.append(RecordedSeries(_labels(holding), pairs))
        return RecordedReply(series=tuple(found))

    def closed_ranges(self, *, at: datetime) -> bool:
        """Never: each recorded slot holds its own samples only, as a left-open server's."""
        return False

    def _evidence_form(self, promql: str) -> tuple[Signal, SlotForm] | None:
        """The device field a per-slot evidence form asks about, and the form; None for any
        other query."""
        compact = promql.replace(" ", "")
        for form, pattern in _FORMS.items():
            query = pattern.match(compact)
            if query is not None and query["metric"] in self._fields:
                self._check_slot(query["slot"])
                return self._fields[query["metric"]], form
        return None

    def _evidence(self, signal: Signal, form: SlotForm, *, times: range) -> RecordedReply:
        found = []
        for recording in self._recordings:
            for holding in recording.holdings:
                values = [
                    (at, value)
                    for at in times
                    if at >= holding.start.timestamp()
                    if (value := self._slot_value(recording, holding, signal, form, at)) is not None
                ]
                if values:
                    found.append(RecordedSeries(_labels(holding), values))
        return RecordedReply(series=tuple(found))

    def _slot_value(
        self, recording: _Recording, holding: GpuHolding, signal: Signal, form: SlotForm, at: int
    ) -> float | None:
        exporter = recording.exporter
        return slot_value(exporter, holding, signal, step=at, slot=self._slot, form=form)

    def _check_slot(self, slot: str) -> None:
        if slot != f"{self._slot}s":
            raise ValueError(f"the recorded history has {self._slot}s slots, not {slot}")

    def _metric(self, promql: str) -> str:
        query = _SLOT_QUERY.match(promql.replace(" ", ""))
        if query is None:
            raise ValueError(
                f"the recorded history answers max_over_time(metric[slot]) only, not {promql!r}"
            )
        self._check_slot(query["slot"])
        return query["metric"]

    def _record(self, story: RecordedStory) -> _Recording:
        first = story.first_arrival
        clock = SimulatedClock(start=first, speed=None)
        cluster = SimulatedCluster(
            kueue=story.kueue,
            gpus=GpuPool.for_gpus(story.gpus, prefix=f"{story.name}-"),
            clock=clock,
        )
        due = sorted(story.arrivals, key=lambda arrival: arrival.minute)
        queues = QueueRecorder()
        while (now := clock.now()) <= self.end:
            while due and story.start + MINUTE * due[0].minute <= now:
                cluster.create(due.pop(0).spec, now=now)
            cluster.step(now=now)
            queues.sample(cluster.kueue(), now)
            clock.advance(MINUTE)
        profiles = {(a.spec.namespace, a.spec.name): a.profile for a in story.arrivals}
        timing = ExporterTiming(slot=self._slot)
        exporter = SimulatedExporter(
            holdings=cluster, profiles=profiles, origin=story.start, timing=timing
        )
        return _Recording(exporter, tuple(cluster.gpu_holdings()), queues)


def _labels(holding: GpuHolding) -> dict[str, str]:
    """dcgm-exporter's labels after a ServiceMonitor scrape: the exporter pod's own namespace
    and pod, the workload's as `exported_*`."""
    node = holding.node
    return {
        "namespace": EXPORTER_NAMESPACE,
        "pod": f"nvidia-dcgm-exporter-{node}",
        "container": "nvidia-dcgm-exporter",
        "job": "nvidia-dcgm-exporter",
        "exported_namespace": holding.key.namespace,
        "exported_pod": holding.key.pod,
        "exported_container": "ray-worker" if "-worker-" in holding.key.pod else "ray-head",
        "UUID": holding.key.uuid,
        "Hostname": node,
        "modelName": GPU_MODEL,
    }
