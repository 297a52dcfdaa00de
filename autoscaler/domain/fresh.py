"""The fresh check right before acting: the newest sample of every GPU about to be freed.

The cycle's decisions rest on a read made seconds (or, on a slow cycle, a minute) earlier.
Just before patching, one query re-reads the newest sample of each candidate's GPUs; a
workload that is now busy, or whose newest samples are missing, NaN or stale, is left alone.
As everywhere else, "no data" never counts as idle.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from autoscaler.domain.evidence import NO_EVIDENCE, FleetEvidence
from autoscaler.domain.gpus import GpuKey
from autoscaler.domain.models import WorkloadInfo


@dataclass(frozen=True)
class LatestSample:
    key: GpuKey
    value: float | None  # utilization ratio of the newest sample; None when NaN or absent
    at: datetime | None  # when that sample was taken


@dataclass(frozen=True)
class LatestUsage:
    """The answer of one latest-sample read over some pods."""

    evaluated_at: datetime
    samples: Mapping[tuple[str, str], tuple[LatestSample, ...]] = field(default_factory=dict)
    failure: str | None = None  # the whole read failed: every candidate is unknown
    # The newest evidence of the candidates' GPUs and pods (ISSUE 16): activity there means
    # loading again, unless loading no longer counts for that workload.
    evidence: FleetEvidence = NO_EVIDENCE

    def for_pod(self, namespace: str, pod: str) -> tuple[LatestSample, ...]:
        return self.samples.get((namespace, pod), ())


def pods_of(workloads: Iterable[WorkloadInfo]) -> list[tuple[str, str]]:
    """(namespace, pod) of every GPU pod of these workloads, sorted, each once."""
    return sorted({(w.ref.namespace, p.name) for w in workloads for p in w.gpu_pods})


def still_idle(
    workload: WorkloadInfo,
    latest: LatestUsage,
    *,
    threshold: float,
    stale_after: timedelta,
    now: datetime,
) -> str | None:
    """None when every GPU's newest sample is fresh and idle; otherwise why to leave it."""
    if latest.failure is not None:
        return f"fresh check failed: {latest.failure}"
    samples: list[LatestSample] = []
    for pod in workload.gpu_pods:
        found = latest.for_pod(workload.ref.namespace, pod.name)
        if len({(s.key.uuid, s.key.mig_instance) for s in found}) < pod.gpus:
            return f"fresh check: pod {pod.name} has fewer GPU series than its {pod.gpus} GPUs"
        samples.extend(found)
    busy = [s for s in samples if s.value is not None and s.value > threshold]
    if busy:
        top = max(busy, key=lambda s: s.value or 0.0)
        where = f"GPU {top.key.uuid} of pod {top.key.pod}"
        return f"fresh check: busy again ({where} at {top.value or 0.0:.0%})"
    for sample in samples:
        label = f"GPU {sample.key.uuid} of pod {sample.key.pod}"
        if sample.value is None or math.isnan(sample.value):
            return f"fresh check: {label} has no usable newest sample"
        if sample.at is None or now - sample.at > stale_after:
            return f"fresh check: {label} is stale (no sample for more than {stale_after})"
    return None
