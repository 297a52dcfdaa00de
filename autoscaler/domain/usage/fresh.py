"""The fresh check right before acting: the newest sample of every GPU about to be freed.

The cycle's decisions rest on a read made seconds (or, on a slow cycle, a minute) earlier.
Just before patching, one query re-reads the newest sample of each candidate's GPUs and
their newest evidence; a workload that is now busy, runs Ray tasks again, is loading again
while loading still counts for it, whose evidence signal failed, or whose newest samples are
missing, NaN or stale, is left alone. As everywhere else, "no data" never counts as idle.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.usage.attribution import pod_signals, usable
from autoscaler.domain.usage.evidence import NO_EVIDENCE, FleetEvidence, Sighting
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.domain.usage.loading import failure_covering


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
    loading_counts_until: datetime | None = None,
) -> str | None:
    """None when every GPU's newest sample is fresh and idle and nothing is in use again;
    otherwise why to leave it. `loading_counts_until` is the decision's: new loading blocks
    the stop only before then (None: loading no longer counts)."""
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
    again = _in_use_again(workload, latest, stale_after=stale_after, now=now)
    if again is None and loading_counts_until is not None and now <= loading_counts_until:
        again = _loading_again(latest, samples, stale_after=stale_after, now=now)
    return again or _doubtful(samples, stale_after=stale_after, now=now)


def _doubtful(samples: list[LatestSample], *, stale_after: timedelta, now: datetime) -> str | None:
    for sample in samples:
        label = f"GPU {sample.key.uuid} of pod {sample.key.pod}"
        if sample.value is None or math.isnan(sample.value):
            return f"fresh check: {label} has no usable newest sample"
        if sample.at is None or now - sample.at > stale_after:
            return f"fresh check: {label} is stale (no sample for more than {stale_after})"
    return None


def _in_use_again(
    workload: WorkloadInfo,
    latest: LatestUsage,
    *,
    stale_after: timedelta,
    now: datetime,
) -> str | None:
    failed = failure_covering(workload, latest.evidence.failures)
    if failed is not None:
        return f"fresh check: {failed}"
    tasks, _ = pod_signals(workload, latest.evidence)
    task = _newest(tasks, stale_after=stale_after, now=now)
    if task is not None:
        return f"fresh check: Ray tasks executing again ({task.detail})"
    return None


def _loading_again(
    latest: LatestUsage, samples: list[LatestSample], *, stale_after: timedelta, now: datetime
) -> str | None:
    """The candidates' own device evidence, attributed as in the cycle (`attribution.py`);
    sharing is seen among the candidates' samples only, the one read this check makes."""
    devices = [(s.key.uuid, s.key.mig_instance, s.key.namespace, s.key.pod) for s in samples]
    found: list[Sighting] = []
    for sample in samples:
        key = sample.key
        shared = any(
            (uuid, mig) == (key.uuid, key.mig_instance) and (ns, pod) != (key.namespace, key.pod)
            for uuid, mig, ns, pod in devices
        )
        found.extend(usable(key, latest.evidence.for_gpu(key), shared=shared))
    newest = _newest(found, stale_after=stale_after, now=now)
    return None if newest is None else f"fresh check: loading again ({newest.detail})"


def _newest(
    sightings: Iterable[Sighting], *, stale_after: timedelta, now: datetime
) -> Sighting | None:
    recent = [s for s in sightings if now - s.last_at <= stale_after]
    return max(recent, key=lambda s: s.last_at, default=None)
