"""Snapshots for the KEDA tests, built from the domain builders.

    snap = a_snapshot(a_workload("ml", "rc").gpu_pod("rc-0").build(),
                      usage=usage().gpu("ml", "rc-0", peak=0.9))

Each workload's running GPU pods also appear in `gpu_pods`, as the real cycle lists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from autoscaler.domain.models import (
    DEFAULT_PROFILE,
    Action,
    Decision,
    Pauses,
    PodInfo,
    PodRecord,
    Snapshot,
    State,
    WorkloadInfo,
    WorkloadStatus,
)
from autoscaler.domain.usage.idleness import UsageRules
from autoscaler.keda.targets import Judging
from tests.support.domain_builders import (
    A_DEFAULT_RULE,
    HOUR,
    LONG_AGO,
    NOW,
    THRESHOLD,
    UsageBuilder,
    usage,
)

JUDGING = Judging(
    rules=UsageRules(
        threshold=THRESHOLD,
        window=HOUR,
        slot=timedelta(minutes=1),
        min_coverage=0.8,
        stale_after=timedelta(minutes=3),
    ),
    grace_period=timedelta(minutes=15),
)


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
    rows = tuple(WorkloadStatus(info, _placeholder(info)) for info in workloads)
    listed = tuple(
        PodRecord(info.ref.namespace, pod)
        for info in workloads
        for pod in info.gpu_pods
        if pod.running
    )
    return Snapshot(
        cycle=cycle,
        taken_at=taken_at,
        workloads=rows,
        cluster_ok=cluster_ok,
        metrics_ok=built.failure is None,
        dry_run=False,
        pauses=pauses or Pauses(),
        usage={
            name: built.build(window=window, threshold=threshold, evaluated_at=taken_at)
            for name, (window, threshold) in views.items()
        }
        if cluster_ok
        else {},
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


def _placeholder(info: WorkloadInfo) -> Decision:
    # The KEDA answers never read the loop's decision (it is keda-managed for KEDA targets).
    return Decision(
        info.ref,
        State.KEDA_MANAGED,
        Action.NONE,
        "a KEDA ScaledObject uses it",
        rule=A_DEFAULT_RULE,
    )
