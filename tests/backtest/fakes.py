"""An in-memory range source: slot series from per-GPU functions, shaped like Prometheus'."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from autoscaler.adapters.prometheus_range import RangeReply, RangeSeries

SlotValue = Callable[[int], float | None]  # unix seconds of a slot's end -> ratio, NaN, or None


@dataclass
class FakeRange:
    """`query_range` answering the slot query from `gpus`: (namespace, pod, uuid) -> values."""

    gpus: dict[tuple[str, str, str], SlotValue]
    queries: list[tuple[str, datetime, datetime, timedelta]] = field(default_factory=list)

    def query_range(
        self, promql: str, *, start: datetime, end: datetime, step: timedelta
    ) -> RangeReply:
        self.queries.append((promql, start, end, step))
        first, last, every = int(start.timestamp()), int(end.timestamp()), int(step.seconds)
        series = []
        for (namespace, pod, uuid), value in self.gpus.items():
            points = [
                [float(t), "NaN" if math.isnan(v) else repr(v)]
                for t in range(first, last + 1, every)
                if (v := value(t)) is not None
            ]
            if points:
                labels = {"workload_namespace": namespace, "workload_pod": pod, "UUID": uuid}
                series.append(RangeSeries(labels, points))
        return RangeReply(tuple(series), ())
