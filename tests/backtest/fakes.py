"""An in-memory range source: slot series from per-GPU functions, shaped like Prometheus'."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from autoscaler.adapters.prometheus.range import RangeReply, RangeSeries
from autoscaler.core.errors import MetricsUnavailable

EXPORTER = {"namespace": "nvidia-gpu-operator", "pod": "nvidia-dcgm-exporter-abcde"}
SlotValue = Callable[[int], float | None]  # unix seconds of a slot's end -> ratio, NaN, or None
Gpus = Mapping[tuple[str, str, str], SlotValue]  # (namespace, pod, uuid) -> value per slot
COMPUTE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"


@dataclass
class FakeRange:
    """`query_range` answering the engine-activity slot query from `gpus`, as series behind a
    ServiceMonitor label them: (namespace, pod, uuid) -> ratio per slot. An evidence query
    naming a metric of `evidence` is answered with that metric's per-slot values (already the
    slot expression's: MiB risen, W, bytes/s); a query naming a metric of `failing` raises as
    the Prometheus adapter does. Other signals: none."""

    gpus: Gpus
    models: Mapping[str, str] = field(default_factory=dict)  # uuid -> dcgm-exporter's modelName
    evidence: Mapping[str, Gpus] = field(default_factory=dict)  # metric -> per-GPU values
    failing: frozenset[str] = frozenset()
    queries: list[tuple[str, datetime, datetime, timedelta]] = field(default_factory=list)

    def query_range(
        self, promql: str, *, start: datetime, end: datetime, step: timedelta
    ) -> RangeReply:
        self.queries.append((promql, start, end, step))
        if any(metric in promql for metric in self.failing):
            raise MetricsUnavailable("Prometheus answered 503: overloaded")
        named = [m for m in (COMPUTE, *self.evidence) if m in promql]
        if not named:
            return RangeReply((), ())
        gpus = self.gpus if named[0] == COMPUTE else self.evidence[named[0]]
        times = range(int(start.timestamp()), int(end.timestamp()) + 1, int(step.seconds))
        return RangeReply(tuple(self._series(gpus, times)), ())

    def closed_ranges(self, *, at: datetime) -> bool:
        return False  # its slots are given per slot end: a left-open server's answer

    def _series(self, gpus: Gpus, times: range) -> list[RangeSeries]:
        series = []
        for (namespace, pod, uuid), value in gpus.items():
            points = [
                [float(t), "NaN" if math.isnan(v) else repr(v)]
                for t in times
                if (v := value(t)) is not None
            ]
            if points:
                labels = EXPORTER | {"exported_namespace": namespace, "exported_pod": pod}
                labels["UUID"] = uuid
                if uuid in self.models:
                    labels["modelName"] = self.models[uuid]
                series.append(RangeSeries(labels, points))
        return series
