"""An in-memory range source: slot series from per-GPU functions, shaped like Prometheus'."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from autoscaler.adapters.prometheus.range import RangeReply, RangeSeries

EXPORTER = {"namespace": "nvidia-gpu-operator", "pod": "nvidia-dcgm-exporter-abcde"}
SlotValue = Callable[[int], float | None]  # unix seconds of a slot's end -> ratio, NaN, or None


@dataclass
class FakeRange:
    """`query_range` answering the engine-activity slot query from `gpus`, as series behind a
    ServiceMonitor label them: (namespace, pod, uuid) -> ratio per slot. Other signals: none."""

    gpus: dict[tuple[str, str, str], SlotValue]
    models: Mapping[str, str] = field(default_factory=dict)  # uuid -> dcgm-exporter's modelName
    queries: list[tuple[str, datetime, datetime, timedelta]] = field(default_factory=list)

    def query_range(
        self, promql: str, *, start: datetime, end: datetime, step: timedelta
    ) -> RangeReply:
        self.queries.append((promql, start, end, step))
        if "DCGM_FI_PROF_GR_ENGINE_ACTIVE" not in promql:
            return RangeReply((), ())
        first, last, every = int(start.timestamp()), int(end.timestamp()), int(step.seconds)
        series = []
        for (namespace, pod, uuid), value in self.gpus.items():
            points = [
                [float(t), "NaN" if math.isnan(v) else repr(v)]
                for t in range(first, last + 1, every)
                if (v := value(t)) is not None
            ]
            if points:
                labels = EXPORTER | {"exported_namespace": namespace, "exported_pod": pod}
                labels["UUID"] = uuid
                if uuid in self.models:
                    labels["modelName"] = self.models[uuid]
                series.append(RangeSeries(labels, points))
        return RangeReply(tuple(series), ())
