"""Snapshots for the KEDA tests, built from the domain builders.

    snap = a_snapshot(a_workload("ml", "rc").gpu_pod("rc-0").build(),
                      usage=usage().gpu("ml", "rc-0", peak=0.9))

Each workload's running GPU pods also appear in `gpu_pods`, as the real cycle lists them, and
each row carries the loop's decision on it: KEDA-managed, with its rule and usage verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta

from autoscaler.domain.models import (
    DEFAULT_PROFILE,
    Decision,
    FleetUsage,
    Pauses,
    PodInfo,
    PodRecord,
    Snapshot,
    WorkloadInfo,
    WorkloadStatus,
)
from autoscaler.domain.policy.decisions import decide
from autoscaler.keda.targets import Judging
from tests.support.domain_builders import (
    HOUR,
    LONG_AGO,
    NOW,
    THRESHOLD,
    UsageBuilder,
    a_policy,
    usage,
)

# The default rule at HOUR and THRESHOLD (slot 1m, coverage 80 %, stale after 3m, grace 15m).
POLICY = a_policy()
JUDGING = Judging(POLICY.rules)


def a_snapshot(
    *workloads: WorkloadInfo,
    usage_of: UsageBuilder | None = None,
    profiles: Mapping[str, tuple[timedelta, float]] | None = None,
    pods: tuple[PodRecord, ...] = (),
    pauses: Pauses | None = None,
    cluster_ok: bool = True,
    cycle: int = 1,
    taken_at: datetime = NOW,
) -> Snapshot:
    """`usage_of` serves the default profile and every `profiles` (window, threshold) alike."""
    built = usage_of or usage()
    views = {DEFAULT_PROFILE: (HOUR, THRESHOLD), **(profiles or {})}
    fleet = {
        name: built.build(window=window, threshold=threshold, evaluated_at=taken_at)
        for name, (window, threshold) in views.items()
    }
    paused = pauses or Pauses()
    read = fleet if cluster_ok else {}
    rows = tuple(_keda_managed(info, read, pauses=paused, now=taken_at) for info in workloads)
    listed = tuple(
        PodRecord(info.ref.namespace, pod)
        for info in workloads
        for pod in info.gpu_pods
        if pod.phase_running
    )
    return Snapshot(
        cycle=cycle,
        taken_at=taken_at,
        workloads=rows,
        cluster_ok=cluster_ok,
        metrics_ok=built.failure is None,
        dry_run=False,
        pauses=paused,
        usage=read,
        gpu_pods=(listed + pods) if cluster_ok else (),
    )


def gpu_pod(
    namespace: str,
    name: str,
    *,
    labels: Mapping[str, str],
    created: datetime = LONG_AGO,
    phase: str = "Running",
) -> PodRecord:
    """A GPU pod outside Kueue (a Deployment's), for selector targets."""
    return PodRecord(namespace, PodInfo(name, phase, created, 1, labels=dict(labels)))


def _keda_managed(
    info: WorkloadInfo, fleet: Mapping[str, FleetUsage], *, pauses: Pauses, now: datetime
) -> WorkloadStatus:
    """The row as the loop leaves a KEDA target: marked KEDA-managed and decided (which takes
    its usage verdict whatever the state, as KEDA reads it)."""
    managed = replace(info, keda_managed=True)
    decision: Decision = decide(managed, fleet, policy=POLICY, pauses=pauses, now=now)
    return WorkloadStatus(managed, decision)
